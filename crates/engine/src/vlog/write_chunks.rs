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

/// Bytes of a chunk: 64 records of 1 KiB.
const CHUNK: usize = 64 << 10;

/// Writes above this get a buffer of their own: their records share its count already, and
/// they would leave most of a chunk unused.
const SMALL: usize = CHUNK / 4;

thread_local! {
    static CURRENT: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// A buffer of `len` bytes filled by `fill` (which must write exactly `len`), carved from
/// this thread's chunk if small: the buffer is this write's alone until it is frozen.
pub(super) fn encode_in(len: usize, fill: impl FnOnce(&mut BytesMut)) -> BytesMut {
    if len > SMALL {
        let mut own = BytesMut::with_capacity(len);
        fill(&mut own);
        return own;
    }
    CURRENT.with(|c| {
        let mut chunk = c.borrow_mut();
        if chunk.capacity() - chunk.len() < len {
            *chunk = BytesMut::with_capacity(CHUNK);
        }
        fill(&mut chunk);
        chunk.split()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_keep_their_bytes_across_chunks() {
        let writes: Vec<Vec<u8>> = (0..300u32)
            .map(|i| vec![i as u8; 100 + (i as usize * 37) % 900])
            .chain([vec![7u8; SMALL], vec![8u8; SMALL + 1], Vec::new()])
            .collect();
        let mut kept: Vec<BytesMut> = writes
            .iter()
            .map(|w| encode_in(w.len(), |b| b.extend_from_slice(w)))
            .collect();
        // Each is its own to change (a header stamped after the encoding).
        for k in kept.iter_mut().filter(|k| !k.is_empty()) {
            k[0] ^= 0xff;
            k[0] ^= 0xff;
        }
        let frozen: Vec<_> = kept.into_iter().map(BytesMut::freeze).collect();
        for (w, k) in writes.iter().zip(&frozen) {
            assert_eq!(&k[..], &w[..]);
        }
        // Small writes share chunks: 64 KiB holds dozens of them.
        let first = frozen[0].as_ptr() as usize;
        assert!((frozen[1].as_ptr() as usize).abs_diff(first) < CHUNK);
    }
}
