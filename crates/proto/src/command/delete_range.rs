//! DeleteRange's body: `max_keys u32`, then the start and the end key (each `len u16` and
//! its bytes; an empty end: no bound).

use crate::error::ProtoError;
use crate::fields::{end as body_end, get_key, put_key};
use bytes::{Buf, BufMut, Bytes, BytesMut};

pub(super) fn encode(
    out: &mut BytesMut,
    start: &[u8],
    end: &[u8],
    max_keys: u32,
) -> Result<(), ProtoError> {
    out.put_u32_le(max_keys);
    put_key(out, start)?;
    put_key(out, end)
}

/// The start key, the end key (empty: no bound) and the most keys of a DeleteRange body.
pub(super) fn decode(mut body: Bytes) -> Result<(Bytes, Bytes, u32), ProtoError> {
    if body.len() < 4 {
        return Err(ProtoError::Truncated("delete range max_keys"));
    }
    let max_keys = body.get_u32_le();
    let start = get_key(&mut body)?;
    let end = get_key(&mut body)?;
    body_end(&body)?;
    Ok((start, end, max_keys))
}

/// The end of the range of keys that begin with `prefix`: the smallest key above them all,
/// or empty (no bound) when there is none (`prefix` empty or all 0xFF bytes). A prefix
/// delete is the range `[prefix, prefix_end(prefix))`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_a_prefix_is_past_every_key_that_begins_with_it() {
        assert_eq!(prefix_end(b"user:"), b"user;".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert!(prefix_end(b"\xff\xff").is_empty());
        assert!(prefix_end(b"").is_empty());
    }
}
