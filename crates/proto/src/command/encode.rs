//! Commands into request frames: the encoder of every [`Request`] layout.

use super::request::{
    store_flags, Command, Request, AUTH_BY_NAME, INDEX_VAS, ITER_KEYS_ONLY, LIST_START_EXCLUSIVE,
    MAX_SECRET_LEN, NS_CREATE_SETTINGS, STORE_SYNC,
};
use super::{backup, batch, delete_range, settings};
use crate::error::ProtoError;
use crate::fields::{body_len, check_attr, check_name, put_key};
use crate::header::{Header, HEADER_LEN, VERSION};
use bytes::{BufMut, BytesMut};

impl Command {
    /// Appends the command's frame to `out`. Fails if a key or name is longer than its length
    /// field allows, or the body longer than 4 GiB.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), ProtoError> {
        let mut flags = 0u8;
        let start = out.len();
        out.put_bytes(0, HEADER_LEN);
        match &self.request {
            Request::Store {
                key,
                value,
                mode,
                sync,
            } => {
                flags |= store_flags(*mode, *sync);
                put_key(out, key)?;
                out.put_slice(value);
            }
            Request::Retrieve { key } | Request::Delete { key } | Request::Exist { key } => {
                put_key(out, key)?
            }
            Request::WriteBatch { writes, sync } => {
                if *sync {
                    flags |= STORE_SYNC;
                }
                batch::encode(out, writes)?;
            }
            Request::DeleteRange {
                start,
                end,
                max_keys,
            } => delete_range::encode(out, start, end, *max_keys)?,
            Request::List {
                start,
                start_exclusive,
                max_keys,
            } => {
                if *start_exclusive {
                    flags |= LIST_START_EXCLUSIVE;
                }
                out.put_u32_le(*max_keys);
                put_key(out, start)?;
            }
            Request::Authenticate { secret } => authenticate(out, None, secret)?,
            Request::AuthenticateByName { name, secret } => {
                flags |= AUTH_BY_NAME;
                authenticate(out, Some(name), secret)?
            }
            Request::NamespaceCreate { name, settings } => {
                check_name(name.as_bytes())?;
                if let Some(s) = settings {
                    flags |= NS_CREATE_SETTINGS;
                    s.encode(out);
                }
                out.put_slice(name.as_bytes());
            }
            Request::NamespaceConfigure {
                settings,
                read_only,
            } => flags |= settings::encode_configure(settings, *read_only, out)?,
            Request::NamespaceDestroy
            | Request::NamespaceRekey
            | Request::NamespaceList
            | Request::Identify
            | Request::Stats => {}
            Request::IterOpen {
                start,
                upper_bound,
                prefix,
                keys_only,
            } => {
                if *keys_only {
                    flags |= ITER_KEYS_ONLY;
                }
                put_key(out, start)?;
                put_key(out, upper_bound)?;
                put_key(out, prefix)?;
            }
            Request::IterNext {
                iter,
                max_entries,
                max_bytes,
            } => {
                out.put_u32_le(*iter);
                out.put_u32_le(*max_entries);
                out.put_u32_le(*max_bytes);
            }
            Request::IterClose { iter } => out.put_u32_le(*iter),
            Request::IndexCreate { attr, vas } => {
                if *vas {
                    flags |= INDEX_VAS;
                }
                check_attr(attr.as_bytes())?;
                out.put_slice(attr.as_bytes());
            }
            Request::IndexDrop { attr } => {
                check_attr(attr.as_bytes())?;
                out.put_slice(attr.as_bytes());
            }
            Request::IndexList => {}
            Request::Query { query } => out.put_slice(query),
            Request::Backup { dir } => backup::encode(out, dir)?,
        }
        let body_len = body_len(out.len() - start - HEADER_LEN)?;
        let header = Header {
            version: VERSION,
            opcode: self.request.opcode() as u8,
            word: u16::from(flags),
            cid: self.cid,
            nsid: self.nsid,
            body_len,
        };
        header.encode(&mut &mut out[start..start + HEADER_LEN]);
        Ok(())
    }
}

/// An Authenticate body: the name (a length byte, then UTF-8) when given, then the secret.
fn authenticate(out: &mut BytesMut, name: Option<&str>, secret: &[u8]) -> Result<(), ProtoError> {
    if secret.len() > MAX_SECRET_LEN {
        return Err(ProtoError::InvalidField("secret longer than 256 bytes"));
    }
    if let Some(name) = name {
        check_name(name.as_bytes())?;
        out.put_u8(name.len() as u8);
        out.put_slice(name.as_bytes());
    }
    out.put_slice(secret);
    Ok(())
}
