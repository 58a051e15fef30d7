//! Where the memtable's records live: commit groups' bytes copied into shared chunks.
//!
//! A scan or a get hands out each value as a counted handle, and counting it touches the
//! count of the buffer it lives in. A commit group's own buffer held one client's records,
//! often one: a count per value, apart from everything else, so a scan out of the memtable
//! paid a cache miss per entry on it (an eighth of YCSB e's time at 50,000 records). In
//! chunks of [`CHUNK`] bytes, a memtable's counts are a few hundred lines that stay cached,
//! and two cores rarely count the same one at once.

use bytes::{Bytes, BytesMut};

/// Bytes of a chunk: 64 records of 1 KiB.
const CHUNK: usize = 64 << 10;

/// The chunk the next groups are copied into; owned by the writer (one at a time).
#[derive(Default)]
pub struct ValueArena {
    chunk: BytesMut,
}

impl ValueArena {
    /// `parts` joined, copied into the current chunk (or a new one). A join bigger than a
    /// quarter chunk gets a buffer of its own: its count is shared by many records already.
    pub fn join<'a>(&mut self, parts: impl Iterator<Item = &'a [u8]> + Clone) -> Bytes {
        let len: usize = parts.clone().map(<[u8]>::len).sum();
        if len > CHUNK / 4 {
            let mut own = BytesMut::with_capacity(len);
            parts.for_each(|p| own.extend_from_slice(p));
            return own.freeze();
        }
        if self.chunk.capacity() - self.chunk.len() < len {
            self.chunk = BytesMut::with_capacity(CHUNK);
        }
        parts.for_each(|p| self.chunk.extend_from_slice(p));
        self.chunk.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_keep_their_bytes_across_chunks() {
        let mut a = ValueArena::default();
        let groups: Vec<Vec<u8>> = (0..300u32)
            .map(|i| vec![i as u8; 100 + (i as usize * 37) % 900])
            .chain([vec![7u8; CHUNK], Vec::new()])
            .collect();
        let copies: Vec<Bytes> = groups
            .chunks(3)
            .map(|three| a.join(three.iter().map(|g| &g[..])))
            .collect();
        let groups: Vec<Vec<u8>> = groups.chunks(3).map(|three| three.concat()).collect();
        for (g, c) in groups.iter().zip(&copies) {
            assert_eq!(&c[..], &g[..]);
        }
        // Dropping the writer's chunk leaves every copy whole.
        drop(a);
        for (g, c) in groups.iter().zip(&copies) {
            assert_eq!(&c[..], &g[..]);
        }
    }
}
