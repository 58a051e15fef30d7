//! Completions: typed forms of response bodies, with their encoders and decoders. The byte
//! layouts are in `docs/protocol.md`.

mod decode;

use crate::error::ProtoError;
use crate::fields::{body_len, check_name, get_key, put_key};
use crate::header::{Header, HEADER_LEN, VERSION};
use crate::status::Status;
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// One namespace in a [`Reply::Namespaces`] list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceEntry {
    /// Its id.
    pub nsid: u32,
    /// Its name.
    pub name: String,
}

/// The device's limits, as [`Opcode::Identify`](crate::Opcode::Identify) reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identify {
    /// Highest protocol version the device speaks.
    pub protocol_version: u8,
    /// Longest key, in bytes.
    pub max_key_len: u32,
    /// Longest value, in bytes.
    pub max_value_len: u32,
    /// Commands a connection may have in flight; more wait until some complete.
    pub max_inflight: u32,
    /// Largest request body the device reads; a larger frame closes the connection.
    pub max_frame_body: u32,
    /// Most keys one List returns.
    pub max_list_keys: u32,
    /// Iterators a connection may have open at once (0: a device without iterators).
    pub max_iterators: u32,
    /// Most bytes of keys and values one IterNext returns (beyond that, one entry).
    pub max_iter_batch_bytes: u32,
    /// Seconds an iterator may sit unused before the device closes it.
    pub iterator_idle_secs: u32,
}

/// Identify's body: 24 bytes from devices before iterators, 36 since.
const IDENTIFY_LEN_V0: usize = 24;
const IDENTIFY_LEN: usize = 36;

/// A completion's body, by opcode and status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Success without data (store, delete, exist, authenticate, destroy), or any status
    /// other than success without a message.
    Empty,
    /// A failed command's message (any status but success).
    Error(String),
    /// Retrieve: the value.
    Value(Bytes),
    /// List: keys in order; `more` says whether keys past the last one remain.
    Keys {
        /// The keys.
        keys: Vec<Bytes>,
        /// Keys past the last one remain.
        more: bool,
    },
    /// Namespace create: the new id and its credential (shown once; the device keeps a hash).
    Created {
        /// The new namespace's id.
        nsid: u32,
        /// Its credential.
        secret: String,
    },
    /// Namespace list: every namespace.
    Namespaces(Vec<NamespaceEntry>),
    /// Identify: the device's limits.
    Identify(Identify),
    /// Stats: a JSON document.
    Stats(Bytes),
    /// Iterator open: the iterator's id on this connection.
    Iter(u32),
    /// Iterator next: entries in key order (empty values for a keys-only iterator); `done`
    /// says the iterator has nothing after them.
    Entries {
        /// Key and value pairs.
        entries: Vec<(Bytes, Bytes)>,
        /// Nothing follows them.
        done: bool,
    },
    /// Index list: a JSON document.
    Json(Bytes),
    /// Delete range: keys deleted, and the first key of the range left (`None`: the range
    /// holds no more keys), where the next command resumes.
    RangeDeleted {
        /// Keys deleted.
        deleted: u64,
        /// Where the rest of the range begins.
        next_start: Option<Bytes>,
    },
    /// Query: a JSON summary (result, continuation, statistics) and the records found.
    Found {
        /// The JSON summary.
        summary: Bytes,
        /// Key and value of each record found.
        records: Vec<(Bytes, Bytes)>,
    },
}

/// A completion: which command it completes, its status and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The id of the command it completes.
    pub cid: u32,
    /// The namespace of that command.
    pub nsid: u32,
    /// The opcode of the command, echoed (an unknown one too).
    pub opcode: u8,
    /// How the command ended.
    pub status: Status,
    /// What it answers.
    pub reply: Reply,
}

impl Response {
    /// A failure completion with a message.
    pub fn error(cid: u32, nsid: u32, opcode: u8, status: Status, message: String) -> Response {
        Response {
            cid,
            nsid,
            opcode,
            status,
            reply: Reply::Error(message),
        }
    }

    /// Appends the response's frame to `out`.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), ProtoError> {
        let start = out.len();
        out.put_bytes(0, HEADER_LEN);
        match &self.reply {
            Reply::Empty => {}
            Reply::Error(m) => out.put_slice(m.as_bytes()),
            Reply::Value(v) => out.put_slice(v),
            Reply::Keys { keys, more } => {
                out.put_u8(u8::from(*more));
                out.put_u32_le(
                    u32::try_from(keys.len()).map_err(|_| ProtoError::InvalidField("key count"))?,
                );
                for k in keys {
                    put_key(out, k)?;
                }
            }
            Reply::Created { nsid, secret } => {
                out.put_u32_le(*nsid);
                out.put_slice(secret.as_bytes());
            }
            Reply::Namespaces(list) => {
                out.put_u32_le(
                    u32::try_from(list.len())
                        .map_err(|_| ProtoError::InvalidField("namespace count"))?,
                );
                for e in list {
                    check_name(e.name.as_bytes())?;
                    out.put_u32_le(e.nsid);
                    out.put_u8(e.name.len() as u8);
                    out.put_slice(e.name.as_bytes());
                }
            }
            Reply::Identify(id) => {
                out.put_u8(id.protocol_version);
                out.put_bytes(0, 3);
                out.put_u32_le(id.max_key_len);
                out.put_u32_le(id.max_value_len);
                out.put_u32_le(id.max_inflight);
                out.put_u32_le(id.max_frame_body);
                out.put_u32_le(id.max_list_keys);
                out.put_u32_le(id.max_iterators);
                out.put_u32_le(id.max_iter_batch_bytes);
                out.put_u32_le(id.iterator_idle_secs);
            }
            Reply::Stats(json) => out.put_slice(json),
            Reply::Iter(id) => out.put_u32_le(*id),
            Reply::Entries { entries, done } => {
                out.put_u8(u8::from(*done));
                put_entries(out, entries)?;
            }
            Reply::Json(json) => out.put_slice(json),
            Reply::RangeDeleted {
                deleted,
                next_start,
            } => {
                out.put_u64_le(*deleted);
                out.put_u8(u8::from(next_start.is_some()));
                if let Some(k) = next_start {
                    put_key(out, k)?;
                }
            }
            Reply::Found { summary, records } => {
                out.put_u32_le(
                    u32::try_from(summary.len())
                        .map_err(|_| ProtoError::InvalidField("summary longer than 4 GiB"))?,
                );
                out.put_slice(summary);
                put_entries(out, records)?;
            }
        }
        let header = Header {
            version: VERSION,
            opcode: self.opcode,
            word: self.status.code(),
            cid: self.cid,
            nsid: self.nsid,
            body_len: body_len(out.len() - start - HEADER_LEN)?,
        };
        header.encode(&mut &mut out[start..start + HEADER_LEN]);
        Ok(())
    }
}

/// `count u32`, then per entry: key, `value_len u32`, value.
fn put_entries(out: &mut BytesMut, entries: &[(Bytes, Bytes)]) -> Result<(), ProtoError> {
    out.put_u32_le(
        u32::try_from(entries.len()).map_err(|_| ProtoError::InvalidField("entry count"))?,
    );
    for (k, v) in entries {
        put_key(out, k)?;
        out.put_u32_le(
            u32::try_from(v.len())
                .map_err(|_| ProtoError::InvalidField("value longer than 4 GiB"))?,
        );
        out.put_slice(v);
    }
    Ok(())
}

pub(crate) fn get_entries(body: &mut Bytes) -> Result<Vec<(Bytes, Bytes)>, ProtoError> {
    if body.len() < 4 {
        return Err(ProtoError::Truncated("entry count"));
    }
    let n = body.get_u32_le() as usize;
    // Each entry takes at least 6 bytes of lengths: bound the count by the body before
    // allocating for it.
    if n > body.len() / 6 {
        return Err(ProtoError::Truncated("entries"));
    }
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let k = get_key(body)?;
        if body.len() < 4 {
            return Err(ProtoError::Truncated("entry value length"));
        }
        let len = body.get_u32_le() as usize;
        if body.len() < len {
            return Err(ProtoError::Truncated("entry value"));
        }
        entries.push((k, body.split_to(len)));
    }
    Ok(entries)
}
