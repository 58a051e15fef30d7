//! Request frames into commands, one decoder per opcode (or per opcodes of one layout).

use super::request::{
    Command, Opcode, Request, StoreMode, AUTH_BY_NAME, INDEX_VAS, ITER_KEYS_ONLY,
    LIST_START_EXCLUSIVE, MAX_SECRET_LEN, NS_CREATE_SETTINGS, STORE_ONLY_IF_ABSENT,
    STORE_ONLY_IF_PRESENT, STORE_SYNC,
};
use super::settings::{
    NamespaceSettings, NS_CONFIGURE_KEEP_SETTINGS, NS_CONFIGURE_READ_ONLY, NS_CONFIGURE_WRITABLE,
};
use super::{backup, batch, delete_range, settings};
use crate::error::ProtoError;
use crate::fields::{check_attr, check_name, end, get_key};
use crate::frame::Frame;
use bytes::{Buf, Bytes};

impl Command {
    /// Decodes a request frame. Keys and values are slices of the frame's body, not copies.
    pub fn decode(frame: &Frame) -> Result<Command, ProtoError> {
        let h = &frame.header;
        let opcode = Opcode::from_u8(h.opcode).ok_or(ProtoError::UnknownOpcode(h.opcode))?;
        let flags = flags(opcode, h.word)?;
        let body = frame.body.clone();
        let request = match opcode {
            Opcode::Store => store(flags, body)?,
            Opcode::WriteBatch => Request::WriteBatch {
                writes: batch::decode(body)?,
                sync: flags & STORE_SYNC != 0,
            },
            Opcode::Retrieve | Opcode::Delete | Opcode::Exist => keyed(opcode, body)?,
            Opcode::List => list(flags, body)?,
            Opcode::DeleteRange => {
                let (start, end, max_keys) = delete_range::decode(body)?;
                Request::DeleteRange {
                    start,
                    end,
                    max_keys,
                }
            }
            Opcode::Authenticate => authenticate(flags, body)?,
            Opcode::NamespaceCreate => namespace_create(flags, body)?,
            Opcode::NamespaceConfigure => {
                let (settings, read_only) = settings::decode_configure(flags, body)?;
                Request::NamespaceConfigure {
                    settings,
                    read_only,
                }
            }
            Opcode::IterOpen => iter_open(flags, body)?,
            Opcode::IterNext => iter_next(body)?,
            Opcode::IterClose => iter_close(body)?,
            Opcode::IndexCreate | Opcode::IndexDrop => index(opcode, flags, &body)?,
            Opcode::Query => Request::Query { query: body },
            Opcode::Backup => Request::Backup {
                dir: backup::decode(&body)?,
            },
            Opcode::NamespaceDestroy
            | Opcode::NamespaceRekey
            | Opcode::NamespaceList
            | Opcode::Identify
            | Opcode::Stats
            | Opcode::IndexList => bare(opcode, &body)?,
        };
        Ok(Command {
            cid: h.cid,
            nsid: h.nsid,
            request,
        })
    }
}

/// The header word as `opcode`'s flags: only those it defines may be set (all fit a byte).
fn flags(opcode: Opcode, word: u16) -> Result<u8, ProtoError> {
    let allowed: u16 = match opcode {
        Opcode::Store => u16::from(STORE_ONLY_IF_ABSENT | STORE_ONLY_IF_PRESENT | STORE_SYNC),
        Opcode::WriteBatch => u16::from(STORE_SYNC),
        Opcode::List => u16::from(LIST_START_EXCLUSIVE),
        Opcode::IterOpen => u16::from(ITER_KEYS_ONLY),
        Opcode::IndexCreate => u16::from(INDEX_VAS),
        Opcode::Authenticate => u16::from(AUTH_BY_NAME),
        Opcode::NamespaceCreate => u16::from(NS_CREATE_SETTINGS),
        Opcode::NamespaceConfigure => {
            u16::from(NS_CONFIGURE_READ_ONLY | NS_CONFIGURE_WRITABLE | NS_CONFIGURE_KEEP_SETTINGS)
        }
        _ => 0,
    };
    if word & !allowed != 0 {
        return Err(ProtoError::InvalidField("unknown flags"));
    }
    Ok(word as u8)
}

fn store(flags: u8, mut body: Bytes) -> Result<Request, ProtoError> {
    let mode = match flags & (STORE_ONLY_IF_ABSENT | STORE_ONLY_IF_PRESENT) {
        0 => StoreMode::Always,
        STORE_ONLY_IF_ABSENT => StoreMode::OnlyIfAbsent,
        STORE_ONLY_IF_PRESENT => StoreMode::OnlyIfPresent,
        _ => {
            return Err(ProtoError::InvalidField(
                "only-if-absent and only-if-present together",
            ))
        }
    };
    let key = get_key(&mut body)?;
    Ok(Request::Store {
        key,
        value: body.split_off(0),
        mode,
        sync: flags & STORE_SYNC != 0,
    })
}

/// Retrieve, Delete and Exist: a key alone.
fn keyed(opcode: Opcode, mut body: Bytes) -> Result<Request, ProtoError> {
    let key = get_key(&mut body)?;
    end(&body)?;
    Ok(match opcode {
        Opcode::Retrieve => Request::Retrieve { key },
        Opcode::Delete => Request::Delete { key },
        _ => Request::Exist { key },
    })
}

fn list(flags: u8, mut body: Bytes) -> Result<Request, ProtoError> {
    if body.len() < 4 {
        return Err(ProtoError::Truncated("list max_keys"));
    }
    let max_keys = body.get_u32_le();
    let start = get_key(&mut body)?;
    end(&body)?;
    Ok(Request::List {
        start,
        start_exclusive: flags & LIST_START_EXCLUSIVE != 0,
        max_keys,
    })
}

fn authenticate(flags: u8, mut body: Bytes) -> Result<Request, ProtoError> {
    let name = match flags & AUTH_BY_NAME {
        0 => None,
        _ => {
            if body.is_empty() {
                return Err(ProtoError::Truncated("authenticate name length"));
            }
            let len = usize::from(body.get_u8());
            if body.len() < len {
                return Err(ProtoError::Truncated("authenticate name"));
            }
            let name = body.split_to(len);
            check_name(&name)?;
            let name = std::str::from_utf8(&name)
                .map_err(|_| ProtoError::InvalidField("namespace name is not UTF-8"))?;
            Some(name.to_string())
        }
    };
    if body.len() > MAX_SECRET_LEN {
        return Err(ProtoError::InvalidField("secret longer than 256 bytes"));
    }
    Ok(match name {
        None => Request::Authenticate { secret: body },
        Some(name) => Request::AuthenticateByName { name, secret: body },
    })
}

fn namespace_create(flags: u8, mut body: Bytes) -> Result<Request, ProtoError> {
    let settings = match flags & NS_CREATE_SETTINGS {
        0 => None,
        _ => Some(NamespaceSettings::decode(&mut body)?),
    };
    check_name(&body)?;
    let name = std::str::from_utf8(&body)
        .map_err(|_| ProtoError::InvalidField("namespace name is not UTF-8"))?;
    Ok(Request::NamespaceCreate {
        name: name.to_string(),
        settings,
    })
}

fn iter_open(flags: u8, mut body: Bytes) -> Result<Request, ProtoError> {
    let start = get_key(&mut body)?;
    let upper_bound = get_key(&mut body)?;
    let prefix = get_key(&mut body)?;
    end(&body)?;
    Ok(Request::IterOpen {
        start,
        upper_bound,
        prefix,
        keys_only: flags & ITER_KEYS_ONLY != 0,
    })
}

fn iter_next(mut body: Bytes) -> Result<Request, ProtoError> {
    if body.len() != 12 {
        return Err(ProtoError::Truncated("iterator next body (12 bytes)"));
    }
    Ok(Request::IterNext {
        iter: body.get_u32_le(),
        max_entries: body.get_u32_le(),
        max_bytes: body.get_u32_le(),
    })
}

fn iter_close(mut body: Bytes) -> Result<Request, ProtoError> {
    if body.len() != 4 {
        return Err(ProtoError::Truncated("iterator close body (4 bytes)"));
    }
    Ok(Request::IterClose {
        iter: body.get_u32_le(),
    })
}

/// IndexCreate and IndexDrop: an attribute path.
fn index(opcode: Opcode, flags: u8, body: &[u8]) -> Result<Request, ProtoError> {
    check_attr(body)?;
    let attr = std::str::from_utf8(body)
        .map_err(|_| ProtoError::InvalidField("attribute is not UTF-8"))?
        .to_string();
    Ok(match opcode {
        Opcode::IndexCreate => Request::IndexCreate {
            attr,
            vas: flags & INDEX_VAS != 0,
        },
        _ => Request::IndexDrop { attr },
    })
}

/// Commands without a body.
fn bare(opcode: Opcode, body: &Bytes) -> Result<Request, ProtoError> {
    end(body)?;
    Ok(match opcode {
        Opcode::NamespaceDestroy => Request::NamespaceDestroy,
        Opcode::NamespaceRekey => Request::NamespaceRekey,
        Opcode::NamespaceList => Request::NamespaceList,
        Opcode::Identify => Request::Identify,
        Opcode::IndexList => Request::IndexList,
        _ => Request::Stats,
    })
}
