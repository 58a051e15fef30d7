//! Sorted blocks of key-value entries with prefix-compressed keys.
//!
//! Entry: `shared varint, unshared varint, value_len varint, key[shared..], value`.
//! Every `RESTART_INTERVAL` entries the key is stored whole (a restart point). The block ends
//! with the restart offsets (u32 each) and their count (u32).

use crate::coding::{get_u32, put_u32, put_varint, Cursor};
use bytes::Bytes;
use std::cmp::Ordering;

pub const RESTART_INTERVAL: usize = 16;

pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl Default for BlockBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockBuilder {
    pub fn new() -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Adds an entry; keys must come in increasing order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < RESTART_INTERVAL {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
        self.entries += 1;
    }

    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Returns the finished block and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            put_u32(&mut out, *r);
        }
        put_u32(&mut out, self.restarts.len() as u32);
        *self = BlockBuilder::new();
        out
    }
}

/// A block read back; cheap to clone.
#[derive(Clone)]
pub struct Block {
    data: Bytes,
    restarts_at: usize,
    num_restarts: usize,
}

impl Block {
    /// Checks the trailer; `None` if the block is malformed.
    pub fn new(data: Bytes) -> Option<Block> {
        let n = get_u32(&data, data.len().checked_sub(4)?)? as usize;
        let restarts_at = data.len().checked_sub(4)?.checked_sub(n.checked_mul(4)?)?;
        if n == 0 {
            return None;
        }
        Some(Block {
            data,
            restarts_at,
            num_restarts: n,
        })
    }

    pub fn size(&self) -> usize {
        self.data.len()
    }

    pub fn iter(&self) -> BlockIter {
        BlockIter {
            block: self.clone(),
            next: 0,
            key: Vec::new(),
            value: 0..0,
            valid: false,
            corrupt: false,
        }
    }

    fn restart(&self, i: usize) -> Option<usize> {
        Some(get_u32(&self.data, self.restarts_at + 4 * i)? as usize)
    }
}

/// Walks a block in order. After a malformed entry it becomes invalid with `corrupt()` set.
#[derive(Clone)]
pub struct BlockIter {
    block: Block,
    next: usize,
    key: Vec<u8>,
    value: std::ops::Range<usize>,
    valid: bool,
    corrupt: bool,
}

impl BlockIter {
    /// Bytes of the block it walks.
    pub fn block_bytes(&self) -> usize {
        self.block.data.len()
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    pub fn corrupt(&self) -> bool {
        self.corrupt
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn value(&self) -> Bytes {
        self.block.data.slice(self.value.clone())
    }

    pub fn value_slice(&self) -> &[u8] {
        &self.block.data[self.value.clone()]
    }

    pub fn seek_to_first(&mut self) {
        self.next = 0;
        self.key.clear();
        self.advance();
    }

    /// Moves to the next entry; returns whether there is one.
    pub fn advance(&mut self) -> bool {
        if self.next >= self.block.restarts_at {
            self.valid = false;
            return false;
        }
        match self.decode_at(self.next) {
            Some(()) => {
                self.valid = true;
                true
            }
            None => {
                self.valid = false;
                self.corrupt = true;
                false
            }
        }
    }

    fn decode_at(&mut self, at: usize) -> Option<()> {
        let data = &self.block.data[..self.block.restarts_at];
        let mut c = Cursor::new(data.get(at..)?);
        let shared = c.varint_usize()?;
        let unshared = c.varint_usize()?;
        let vlen = c.varint_usize()?;
        let delta = c.take(unshared)?;
        let vstart = at + c.pos();
        c.take(vlen)?;
        if shared > self.key.len() {
            return None;
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(delta);
        self.value = vstart..vstart + vlen;
        self.next = at + c.pos();
        Some(())
    }

    /// The key of the restart entry at `at` (it shares no prefix), in the block.
    fn restart_key(&self, at: usize) -> Option<&[u8]> {
        let data = &self.block.data[..self.block.restarts_at];
        let mut c = Cursor::new(data.get(at..)?);
        let shared = c.varint_usize()?;
        let unshared = c.varint_usize()?;
        let _vlen = c.varint_usize()?;
        if shared != 0 {
            return None;
        }
        c.take(unshared)
    }

    /// Positions at the first entry whose key is `>= target` under `cmp`.
    pub fn seek(&mut self, target: &[u8], cmp: fn(&[u8], &[u8]) -> Ordering) {
        // Binary search for the last restart point whose key is < target. A restart entry
        // shares nothing with the one before: its key is compared where it lies.
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let Some(key) = self
                .block
                .restart(mid)
                .and_then(|off| self.restart_key(off))
            else {
                return self.fail();
            };
            if cmp(key, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let Some(off) = self.block.restart(lo) else {
            return self.fail();
        };
        self.next = off;
        self.key.clear();
        while self.advance() {
            if cmp(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn fail(&mut self) {
        self.valid = false;
        self.corrupt = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(n: usize) -> Block {
        let mut b = BlockBuilder::new();
        for i in 0..n {
            b.add(format!("key{i:05}").as_bytes(), format!("v{i}").as_bytes());
        }
        Block::new(Bytes::from(b.finish())).unwrap()
    }

    #[test]
    fn iterate_and_seek() {
        let block = build(100);
        let mut it = block.iter();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            assert_eq!(it.key(), format!("key{n:05}").as_bytes());
            assert_eq!(it.value_slice(), format!("v{n}").as_bytes());
            n += 1;
            it.advance();
        }
        assert_eq!(n, 100);
        for i in [0, 1, 15, 16, 17, 50, 99] {
            it.seek(format!("key{i:05}").as_bytes(), <[u8]>::cmp);
            assert!(it.valid());
            assert_eq!(it.key(), format!("key{i:05}").as_bytes());
        }
        it.seek(b"key00050x", <[u8]>::cmp);
        assert_eq!(it.key(), b"key00051");
        it.seek(b"zzz", <[u8]>::cmp);
        assert!(!it.valid() && !it.corrupt());
        it.seek(b"", <[u8]>::cmp);
        assert_eq!(it.key(), b"key00000");
    }

    #[test]
    fn garbage_never_panics() {
        let block = build(40);
        let raw = block.data.to_vec();
        for i in 0..raw.len() {
            let mut b = raw.clone();
            b[i] ^= 0xA5;
            if let Some(bl) = Block::new(Bytes::from(b)) {
                let mut it = bl.iter();
                it.seek_to_first();
                while it.advance() {}
                it.seek(b"key00020", <[u8]>::cmp);
            }
        }
    }
}
