//! Response frames into responses, one decoder per reply layout.

use super::{
    get_entries, Identify, NamespaceEntry, Reply, Response, IDENTIFY_LEN, IDENTIFY_LEN_V0,
};
use crate::command::Opcode;
use crate::error::ProtoError;
use crate::fields::{end, get_key};
use crate::frame::Frame;
use crate::status::Status;
use bytes::{Buf, Bytes};

impl Response {
    /// Decodes a response frame; the body's form follows from the echoed opcode and status.
    pub fn decode(frame: &Frame) -> Result<Response, ProtoError> {
        let h = &frame.header;
        let status = Status::from_code(h.word);
        let body = frame.body.clone();
        let reply = if !status.is_success() {
            if body.is_empty() {
                Reply::Empty
            } else {
                Reply::Error(String::from_utf8_lossy(&body).into_owned())
            }
        } else {
            let opcode = Opcode::from_u8(h.opcode).ok_or(ProtoError::UnknownOpcode(h.opcode))?;
            success(opcode, body)?
        };
        Ok(Response {
            cid: h.cid,
            nsid: h.nsid,
            opcode: h.opcode,
            status,
            reply,
        })
    }
}

/// The reply of a successful `opcode`.
fn success(opcode: Opcode, body: Bytes) -> Result<Reply, ProtoError> {
    Ok(match opcode {
        Opcode::Retrieve => Reply::Value(body),
        Opcode::List => keys(body)?,
        Opcode::NamespaceCreate | Opcode::NamespaceRekey => created(body)?,
        Opcode::NamespaceList => namespaces(body)?,
        Opcode::Identify => identify(body)?,
        Opcode::Stats => Reply::Stats(body),
        Opcode::IterOpen => iter(body)?,
        Opcode::IterNext => entries(body)?,
        Opcode::IndexList | Opcode::Backup => Reply::Json(body),
        Opcode::Query => found(body)?,
        Opcode::DeleteRange => range_deleted(body)?,
        Opcode::Store
        | Opcode::WriteBatch
        | Opcode::Delete
        | Opcode::Exist
        | Opcode::Authenticate
        | Opcode::NamespaceDestroy
        | Opcode::NamespaceConfigure
        | Opcode::IterClose
        | Opcode::IndexCreate
        | Opcode::IndexDrop => {
            end(&body)?;
            Reply::Empty
        }
    })
}

/// `deleted u64`, a flag byte, and the key to resume at if the flag is 1.
fn range_deleted(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() < 9 {
        return Err(ProtoError::Truncated("delete range reply"));
    }
    let deleted = body.get_u64_le();
    let next_start = match flag(&mut body, "delete range reply more flag")? {
        true => Some(get_key(&mut body)?),
        false => None,
    };
    end(&body)?;
    Ok(Reply::RangeDeleted {
        deleted,
        next_start,
    })
}

/// A flag byte: 0 or 1.
fn flag(body: &mut Bytes, what: &'static str) -> Result<bool, ProtoError> {
    match body.get_u8() {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(ProtoError::InvalidField(what)),
    }
}

fn keys(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() < 5 {
        return Err(ProtoError::Truncated("list reply"));
    }
    let more = flag(&mut body, "list reply more flag")?;
    let n = body.get_u32_le() as usize;
    // Each key takes at least its 2-byte length: bound the count by the body before
    // allocating for it.
    if n > body.len() / 2 {
        return Err(ProtoError::Truncated("list reply keys"));
    }
    let mut keys = Vec::with_capacity(n);
    for _ in 0..n {
        keys.push(get_key(&mut body)?);
    }
    end(&body)?;
    Ok(Reply::Keys { keys, more })
}

fn created(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() < 4 {
        return Err(ProtoError::Truncated("namespace create reply"));
    }
    let nsid = body.get_u32_le();
    let secret = String::from_utf8(body.to_vec())
        .map_err(|_| ProtoError::InvalidField("secret is not UTF-8"))?;
    Ok(Reply::Created { nsid, secret })
}

fn namespaces(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() < 4 {
        return Err(ProtoError::Truncated("namespace list reply"));
    }
    let n = body.get_u32_le() as usize;
    if n > body.len() / 5 {
        return Err(ProtoError::Truncated("namespace list entries"));
    }
    let mut list = Vec::with_capacity(n);
    for _ in 0..n {
        if body.len() < 5 {
            return Err(ProtoError::Truncated("namespace entry"));
        }
        let nsid = body.get_u32_le();
        let len = body.get_u8() as usize;
        if body.len() < len {
            return Err(ProtoError::Truncated("namespace name"));
        }
        let name = String::from_utf8(body.split_to(len).to_vec())
            .map_err(|_| ProtoError::InvalidField("namespace name is not UTF-8"))?;
        list.push(NamespaceEntry { nsid, name });
    }
    end(&body)?;
    Ok(Reply::Namespaces(list))
}

fn identify(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() != IDENTIFY_LEN && body.len() != IDENTIFY_LEN_V0 {
        return Err(ProtoError::Truncated("identify reply"));
    }
    let protocol_version = body.get_u8();
    body.advance(3);
    // A version-0 device sends fewer limits: the missing ones read as 0.
    let mut next = || {
        if body.len() >= 4 {
            body.get_u32_le()
        } else {
            0
        }
    };
    Ok(Reply::Identify(Identify {
        protocol_version,
        max_key_len: next(),
        max_value_len: next(),
        max_inflight: next(),
        max_frame_body: next(),
        max_list_keys: next(),
        max_iterators: next(),
        max_iter_batch_bytes: next(),
        iterator_idle_secs: next(),
    }))
}

fn iter(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() != 4 {
        return Err(ProtoError::Truncated("iterator open reply"));
    }
    Ok(Reply::Iter(body.get_u32_le()))
}

fn entries(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() < 5 {
        return Err(ProtoError::Truncated("iterator next reply"));
    }
    let done = flag(&mut body, "iterator next done flag")?;
    let entries = get_entries(&mut body)?;
    end(&body)?;
    Ok(Reply::Entries { entries, done })
}

fn found(mut body: Bytes) -> Result<Reply, ProtoError> {
    if body.len() < 4 {
        return Err(ProtoError::Truncated("query reply"));
    }
    let len = body.get_u32_le() as usize;
    if body.len() < len {
        return Err(ProtoError::Truncated("query reply summary"));
    }
    let summary = body.split_to(len);
    let records = get_entries(&mut body)?;
    end(&body)?;
    Ok(Reply::Found { summary, records })
}
