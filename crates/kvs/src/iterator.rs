//! An open iterator: a device scan of the key group's prefix, filtered by the whole group,
//! and the packing of its entries into the caller's buffer: each a little-endian `u32` key
//! length and the key, then (key-value iterators) a `u32` value length and the value.

use crate::key_group::KeyGroup;
use crate::result::KvsError;
use bytes::Bytes;
use cerberus_host::{BlockingNamespace, Scan, ScanOptions};
use std::iter::Peekable;

/// What one `kvs_iterate_next` filled.
#[derive(Debug, PartialEq, Eq)]
pub struct Filled {
    pub entries: u32,
    pub bytes: u32,
    /// Nothing remains.
    pub end: bool,
}

/// An open iterator of one key space.
pub struct KvsIterator {
    /// The key space (its handle) it belongs to.
    pub key_space: usize,
    group: KeyGroup,
    with_values: bool,
    scan: Peekable<Scan>,
}

impl KvsIterator {
    /// Opens a device scan of `ns` for `group`.
    pub fn open(
        ns: &BlockingNamespace,
        key_space: usize,
        group: KeyGroup,
        with_values: bool,
    ) -> Result<KvsIterator, KvsError> {
        let prefix = group.prefix();
        let opts = ScanOptions {
            prefix: (!prefix.is_empty()).then(|| Bytes::from(prefix)),
            keys_only: !with_values,
            batch_entries: 1024,
            batch_bytes: 256 << 10,
            ..ScanOptions::default()
        };
        Ok(KvsIterator {
            key_space,
            group,
            with_values,
            scan: ns.scan(opts)?.peekable(),
        })
    }

    fn entry_len(&self, key: &[u8], value: &[u8]) -> usize {
        4 + key.len() + if self.with_values { 4 + value.len() } else { 0 }
    }

    /// Packs the next entries into `buf` (whole entries only). One entry larger than the
    /// whole buffer is `BufferSmall` (it stays next).
    pub fn fill(&mut self, buf: &mut [u8]) -> Result<Filled, KvsError> {
        let (mut at, mut entries) = (0usize, 0u32);
        loop {
            let next = match self.scan.peek() {
                None => break,
                Some(Ok((k, v))) => (k.clone(), v.clone()),
                Some(Err(_)) => match self.scan.next() {
                    Some(Err(e)) => return Err(e.into()),
                    _ => continue,
                },
            };
            let (key, value) = next;
            if !self.group.matches(&key) {
                self.scan.next();
                continue;
            }
            let need = self.entry_len(&key, &value);
            if at + need > buf.len() {
                if entries == 0 {
                    return Err(KvsError::BufferSmall);
                }
                return Ok(Filled {
                    entries,
                    bytes: at as u32,
                    end: false,
                });
            }
            at = put(buf, at, &key);
            if self.with_values {
                at = put(buf, at, &value);
            }
            entries += 1;
            self.scan.next();
        }
        Ok(Filled {
            entries,
            bytes: at as u32,
            end: true,
        })
    }
}

/// Writes `bytes` length-prefixed at `at`; the offset after them. The caller checked room.
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    let len = bytes.len() as u32;
    buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    buf[at + 4..at + 4 + bytes.len()].copy_from_slice(bytes);
    at + 4 + bytes.len()
}

#[cfg(test)]
mod tests {
    use super::put;

    #[test]
    fn entries_are_length_prefixed() {
        let mut buf = [0u8; 16];
        let at = put(&mut buf, 0, b"abc");
        assert_eq!(at, 7);
        assert_eq!(&buf[..7], &[3, 0, 0, 0, b'a', b'b', b'c']);
    }
}
