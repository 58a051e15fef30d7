//! Where the memtable's records live: small writes' bytes copied into shared chunks.
//!
//! A scan or a get hands out each value as a counted handle, and counting it touches the
//! count of the buffer it lives in. A write's own buffer held one client's records, often
//! one: a count per value, apart from everything else, so a scan out of the memtable paid a
//! cache miss per entry on it (an eighth of YCSB e's time at 50,000 records). In chunks of
//! [`CHUNK`] bytes, a memtable's counts are a few hundred lines that stay cached. The cost:
//! a value handed out keeps its chunk (at most [`CHUNK`] bytes) alive as long as its holder
//! does, where it kept its own write's buffer; and reads of the newest records, by several
//! cores at once, count on the same line.

use bytes::{Bytes, BytesMut};

/// Bytes of a chunk: 64 records of 1 KiB.
const CHUNK: usize = 64 << 10;

/// Writes above this keep their own buffer: their records share its count already, and a
/// copy of a large write would cost its time under the writer's lock.
const SMALL: usize = CHUNK / 4;

/// The chunk the next writes are copied into; owned by the writer (one at a time).
#[derive(Default)]
pub struct ValueArena {
    chunk: BytesMut,
}

impl ValueArena {
    /// A write's encoded records, as the memtable keeps them: copied into the current chunk
    /// (or a new one) if small, else its own buffer as it is.
    pub fn keep(&mut self, write: Vec<u8>) -> Bytes {
        if write.len() > SMALL {
            return Bytes::from(write);
        }
        if self.chunk.capacity() - self.chunk.len() < write.len() {
            self.chunk = BytesMut::with_capacity(CHUNK);
        }
        self.chunk.extend_from_slice(&write);
        self.chunk.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_writes_hold_their_bytes_across_chunks() {
        let mut a = ValueArena::default();
        let writes: Vec<Vec<u8>> = (0..300u32)
            .map(|i| vec![i as u8; 100 + (i as usize * 37) % 900])
            .chain([vec![7u8; SMALL], vec![8u8; SMALL + 1], Vec::new()])
            .collect();
        let kept: Vec<Bytes> = writes.iter().map(|w| a.keep(w.clone())).collect();
        for (w, k) in writes.iter().zip(&kept) {
            assert_eq!(&k[..], &w[..]);
        }
        // Dropping the writer's chunk leaves every copy whole.
        drop(a);
        for (w, k) in writes.iter().zip(&kept) {
            assert_eq!(&k[..], &w[..]);
        }
        // Small writes share chunks: 64 KiB holds dozens of them.
        let first = kept[0].as_ptr() as usize;
        assert!((kept[1].as_ptr() as usize).abs_diff(first) < CHUNK);
    }
}
