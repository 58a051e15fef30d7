//! Where a write's records are encoded: each writing thread's 64 KiB chunk.
//!
//! The memtable keeps a write's encoded records as they are (its keys and values are slices
//! of them), and a scan or a get hands each value out as a counted handle, which counts on
//! the buffer the value lives in. A buffer per write was a count per value, each on a line of
//! its own out of the cache: a cache miss per entry of a scan out of the memtable (an eighth
//! of YCSB e's time at 50,000 records). Carved from one chunk per thread, a memtable's counts
//! are a few hundred lines that stay cached, and a write costs no allocation of its own.
//! The cost: a value handed out keeps its chunk (at most [`CHUNK`] bytes) alive as long as
//! its holder does; reads of the newest records by several cores count on the same line;
//! and each thread that writes keeps the rest of its chunk.

use bytes::BytesMut;
use std::cell::RefCell;

/// Bytes of a chunk at most: 64 records of 1 KiB.
const CHUNK: usize = 64 << 10;

/// Writes above this get a buffer of their own: their records share its count already, and
/// they would leave most of a chunk unused.
const SMALL: usize = CHUNK / 4;

/// A thread's chunk, and how many bytes the thread has encoded.
#[derive(Default)]
struct ThreadChunk {
    chunk: BytesMut,
    written: usize,
}

impl ThreadChunk {
    /// Counts `len` more bytes encoded; whether the chunk has room for them, after taking a
    /// new one if it may.
    fn room_for(&mut self, len: usize) -> bool {
        self.written = self.written.saturating_add(len);
        if self.chunk.capacity() - self.chunk.len() >= len {
            return true;
        }
        let size = self.written.min(CHUNK);
        if size < 2 * len {
            return false;
        }
        self.chunk = BytesMut::with_capacity(size);
        true
    }
}

thread_local! {
    static CURRENT: RefCell<ThreadChunk> = RefCell::new(ThreadChunk::default());
}

/// A buffer of `len` bytes filled by `fill` (which writes exactly `len`), this write's alone
/// until it is frozen: carved from this thread's chunk if small.
///
/// A new chunk is no larger than what its thread has encoded so far (and at most
/// [`CHUNK`]): a thread that writes once, or a thread per write, gets buffers of their own
/// size, so what chunks hold beyond the records (which the memtable counts) stays below
/// what their threads wrote.
pub(super) fn encode_in(len: usize, fill: impl FnOnce(&mut BytesMut)) -> BytesMut {
    let mut fill = Some(fill);
    if len <= SMALL {
        // `try_with`: a write from a thread whose locals are gone gets its own buffer.
        let carved = CURRENT.try_with(|c| {
            let mut t = c.borrow_mut();
            if !t.room_for(len) {
                return None;
            }
            // Empty unless a fill panicked halfway: its bytes are no one's.
            t.chunk.clear();
            let fill = fill.take()?;
            fill(&mut t.chunk);
            Some(t.chunk.split())
        });
        if let Ok(Some(buf)) = carved {
            return buf;
        }
    }
    // Not carved: `fill` was not taken.
    let mut own = BytesMut::with_capacity(len);
    if let Some(fill) = fill {
        fill(&mut own);
    }
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(w: &[u8]) -> BytesMut {
        encode_in(w.len(), |b| b.extend_from_slice(w))
    }

    #[test]
    fn writes_keep_their_bytes_and_share_chunks_once_their_thread_wrote_enough() {
        let writes: Vec<Vec<u8>> = (0..300u32)
            .map(|i| vec![i as u8; 100 + (i as usize * 37) % 900])
            .chain([vec![7u8; SMALL], vec![8u8; SMALL + 1], Vec::new()])
            .collect();
        let mut kept: Vec<BytesMut> = writes.iter().map(|w| encode(w)).collect();
        // Each is its own to change (a header is stamped after the encoding): marking each
        // changes no other.
        for (i, k) in kept.iter_mut().enumerate() {
            k.iter_mut().for_each(|b| *b = (i % 251) as u8);
        }
        for (i, k) in kept.iter().enumerate() {
            assert!(
                k.iter().all(|b| *b == (i % 251) as u8),
                "write {i} was changed"
            );
        }
        let frozen: Vec<_> = kept.into_iter().map(BytesMut::freeze).collect();
        for (w, k) in writes.iter().zip(&frozen) {
            assert_eq!(k.len(), w.len());
        }
        // After some writes the thread's chunks hold dozens: neighbours share one.
        let (a, b) = (frozen[200].as_ptr() as usize, frozen[201].as_ptr() as usize);
        assert!(a.abs_diff(b) < CHUNK);
    }

    #[test]
    fn a_thread_that_writes_once_gets_a_buffer_of_its_own_size() {
        let one = std::thread::spawn(|| encode(&[5u8; 100]).capacity())
            .join()
            .expect("the thread ends");
        assert_eq!(one, 100);
    }
}
