//! The fields every body shares: keys (a `u16` length and the bytes), names, attribute paths,
//! the body's length and its end. Commands and completions both use them.

use crate::error::ProtoError;
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Longest namespace name, in bytes of UTF-8.
pub const MAX_NAME_LEN: usize = 255;
/// Longest attribute path an index takes, in bytes of UTF-8.
pub const MAX_ATTR_LEN: usize = 1024;

pub(crate) fn check_attr(attr: &[u8]) -> Result<(), ProtoError> {
    if attr.is_empty() || attr.len() > MAX_ATTR_LEN {
        return Err(ProtoError::InvalidField("attribute of 1 to 1024 bytes"));
    }
    Ok(())
}

pub(crate) fn body_len(n: usize) -> Result<u32, ProtoError> {
    u32::try_from(n).map_err(|_| ProtoError::InvalidField("body longer than 4 GiB"))
}

pub(crate) fn put_key(out: &mut BytesMut, key: &[u8]) -> Result<(), ProtoError> {
    let len = u16::try_from(key.len())
        .map_err(|_| ProtoError::InvalidField("key longer than 65535 bytes"))?;
    out.put_u16_le(len);
    out.put_slice(key);
    Ok(())
}

pub(crate) fn get_key(body: &mut Bytes) -> Result<Bytes, ProtoError> {
    if body.len() < 2 {
        return Err(ProtoError::Truncated("key length"));
    }
    let len = body.get_u16_le() as usize;
    if body.len() < len {
        return Err(ProtoError::Truncated("key"));
    }
    Ok(body.split_to(len))
}

pub(crate) fn check_name(name: &[u8]) -> Result<(), ProtoError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(ProtoError::InvalidField(
            "namespace name must have 1 to 255 bytes",
        ));
    }
    Ok(())
}

pub(crate) fn end(body: &Bytes) -> Result<(), ProtoError> {
    if body.is_empty() {
        Ok(())
    } else {
        Err(ProtoError::InvalidField("trailing bytes after the body"))
    }
}
