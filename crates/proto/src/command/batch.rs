//! The body of a `WriteBatch` command: puts and deletes of one namespace, applied all together
//! or not at all. Layout (`docs/protocol.md`): a u32 count, then per write a kind byte
//! ([`BATCH_PUT`] or [`BATCH_DELETE`]), the key (u16 length + bytes) and, for a put, the value
//! (u32 length + bytes).

use crate::error::ProtoError;
use crate::fields::{end, get_key, put_key};
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Most writes one `WriteBatch` command carries; a larger group is refused whole (the frame's
/// body limit bounds its bytes).
pub const MAX_BATCH_WRITES: usize = 16_384;
/// Kind byte of a put in a batch.
pub const BATCH_PUT: u8 = 1;
/// Kind byte of a delete in a batch.
pub const BATCH_DELETE: u8 = 2;

/// One write of a [`crate::Request::WriteBatch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchWrite {
    /// Stores `value` under `key`; a later write of the same key in the batch wins.
    Put {
        /// The key.
        key: Bytes,
        /// The value.
        value: Bytes,
    },
    /// Deletes `key` (a key that holds nothing is no error).
    Delete {
        /// The key.
        key: Bytes,
    },
}

impl BatchWrite {
    /// The key it writes.
    pub fn key(&self) -> &Bytes {
        match self {
            BatchWrite::Put { key, .. } | BatchWrite::Delete { key } => key,
        }
    }
}

pub(super) fn encode(out: &mut BytesMut, writes: &[BatchWrite]) -> Result<(), ProtoError> {
    if writes.len() > MAX_BATCH_WRITES {
        return Err(ProtoError::InvalidField(
            "more than 16,384 writes in a batch",
        ));
    }
    out.put_u32_le(writes.len() as u32);
    for w in writes {
        match w {
            BatchWrite::Put { key, value } => {
                out.put_u8(BATCH_PUT);
                put_key(out, key)?;
                let len = u32::try_from(value.len())
                    .map_err(|_| ProtoError::InvalidField("value longer than 4 GiB"))?;
                out.put_u32_le(len);
                out.put_slice(value);
            }
            BatchWrite::Delete { key } => {
                out.put_u8(BATCH_DELETE);
                put_key(out, key)?;
            }
        }
    }
    Ok(())
}

/// The writes of a batch body; keys and values are slices of it, not copies. The count is
/// checked against [`MAX_BATCH_WRITES`] before anything is allocated for it.
pub(super) fn decode(mut body: Bytes) -> Result<Vec<BatchWrite>, ProtoError> {
    if body.len() < 4 {
        return Err(ProtoError::Truncated("batch count"));
    }
    let n = body.get_u32_le() as usize;
    if n > MAX_BATCH_WRITES {
        return Err(ProtoError::InvalidField(
            "more than 16,384 writes in a batch",
        ));
    }
    // Each write takes at least 3 bytes: a count past that is a lie, caught before the
    // allocation it would size.
    if n > body.len() / 3 {
        return Err(ProtoError::Truncated("batch writes"));
    }
    let mut writes = Vec::with_capacity(n);
    for _ in 0..n {
        if body.is_empty() {
            return Err(ProtoError::Truncated("batch write kind"));
        }
        let kind = body.get_u8();
        let key = get_key(&mut body)?;
        writes.push(match kind {
            BATCH_PUT => {
                if body.len() < 4 {
                    return Err(ProtoError::Truncated("batch value length"));
                }
                let len = body.get_u32_le() as usize;
                if body.len() < len {
                    return Err(ProtoError::Truncated("batch value"));
                }
                BatchWrite::Put {
                    key,
                    value: body.split_to(len),
                }
            }
            BATCH_DELETE => BatchWrite::Delete { key },
            _ => {
                return Err(ProtoError::InvalidField(
                    "batch write kind (1 put, 2 delete)",
                ))
            }
        });
    }
    end(&body)?;
    Ok(writes)
}
