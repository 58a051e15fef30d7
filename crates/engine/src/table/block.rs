//! Sorted blocks of key-value entries with prefix-compressed keys.
//!
//! Entry: `shared varint, unshared varint, value_len varint, key[shared..], value`.
//! Every `RESTART_INTERVAL` entries of a data block the key is stored whole (a restart
//! point); every entry of an index block is one (`INDEX_RESTART_INTERVAL`). The block ends
//! with the restart offsets (u32 each) and their count (u32). Readers take the restarts as
//! they find them, whatever the interval.
//!
//! A data block may carry a hash index between its restarts and the count (the count's top
//! bit says so): one byte per bucket, `m` buckets, then `m` (u16). A user key (an internal
//! key less its trailer) hashes to a bucket holding the restart interval where its first
//! entry lies, `NO_KEY` if no key of the block hashes there, `MANY` if keys of two intervals
//! do. A point lookup then scans one interval instead of a binary search over the restarts
//! (one cache miss per step), and a key the block does not hold is often ruled out at once.

use crate::coding::{get_u32, put_u32, put_varint, Cursor};
use bytes::Bytes;
use std::cmp::Ordering;

pub const RESTART_INTERVAL: usize = 16;
/// Index blocks store every key whole, as RocksDB's do by default
/// (`index_block_restart_interval`): a lookup's binary search over the restarts then lands
/// on its entry, where with 16 it went on decoding up to 15 entries one by one. An index
/// block holds one key a data block: whole keys cost a few bytes a data block.
pub const INDEX_RESTART_INTERVAL: usize = 1;

/// A bucket no key hashes to.
const NO_KEY: u8 = 255;
/// A bucket keys of two restart intervals hash to.
const MANY: u8 = 254;
/// The count's bit saying a hash index is there.
const HASH_FLAG: u32 = 1 << 31;
/// Buckets per distinct key, as a fraction: 4 in 3 (a quarter of them left empty).
const BUCKETS_PER_KEY: (usize, usize) = (4, 3);

/// The hash of a user key in a block's hash index: the filter's (a lookup has it at hand).
pub fn key_hash(user: &[u8]) -> u64 {
    super::filter::filter_hash(user)
}

/// The bucket of `hash` among `m`, from the hash's upper half (the filter's probes use the
/// whole hash; this keeps the two apart).
fn bucket(hash: u64, m: usize) -> usize {
    (((hash >> 32) * m as u64) >> 32) as usize
}

pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    /// Entries between restart points.
    interval: usize,
    counter: usize,
    last_key: Vec<u8>,
    entries: usize,
    /// `Some` for a block with a hash index: each distinct user key's hash and the restart
    /// interval of its first entry.
    hashed: Option<Vec<(u64, u8)>>,
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
            interval: RESTART_INTERVAL,
            counter: 0,
            last_key: Vec::new(),
            entries: 0,
            hashed: None,
        }
    }

    /// A builder of index blocks (a restart point every `INDEX_RESTART_INTERVAL` entries).
    pub fn for_index() -> Self {
        BlockBuilder {
            interval: INDEX_RESTART_INTERVAL,
            ..BlockBuilder::new()
        }
    }

    /// A builder of blocks with a hash index over their user keys (keys are internal keys:
    /// a user key and an 8-byte trailer).
    pub fn with_hash_index() -> Self {
        BlockBuilder {
            hashed: Some(Vec::new()),
            ..BlockBuilder::new()
        }
    }

    /// Adds an entry; keys must come in increasing order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.interval {
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
        if let Some(h) = &mut self.hashed {
            let user = &key[..key.len().saturating_sub(crate::key::TRAILER_LEN)];
            let last =
                &self.last_key[..self.last_key.len().saturating_sub(crate::key::TRAILER_LEN)];
            if self.entries == 0 || user != last {
                let interval = u8::try_from(self.restarts.len() - 1).unwrap_or(MANY);
                h.push((key_hash(user), interval));
            }
        }
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
        let index = self
            .hashed
            .as_ref()
            .map_or(0, |h| h.len() * BUCKETS_PER_KEY.0 / BUCKETS_PER_KEY.1 + 3);
        self.buf.len() + 4 * self.restarts.len() + 4 + index
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
        let hashed = self.hashed.take();
        let next = match hashed {
            Some(_) => BlockBuilder::with_hash_index(),
            None => BlockBuilder::new(),
        };
        // Restart intervals from `MANY` on cannot be named in a byte: such a block goes
        // without (a block of the usual size has a handful).
        match hashed.filter(|h| !h.is_empty() && self.restarts.len() < MANY as usize) {
            Some(h) => {
                let m =
                    (h.len() * BUCKETS_PER_KEY.0 / BUCKETS_PER_KEY.1).clamp(1, u16::MAX as usize);
                let mut buckets = vec![NO_KEY; m];
                for (hash, interval) in h {
                    let b = &mut buckets[bucket(hash, m)];
                    *b = if *b == NO_KEY || *b == interval {
                        interval
                    } else {
                        MANY
                    };
                }
                out.extend_from_slice(&buckets);
                out.extend_from_slice(&(m as u16).to_le_bytes());
                put_u32(&mut out, self.restarts.len() as u32 | HASH_FLAG);
            }
            None => put_u32(&mut out, self.restarts.len() as u32),
        }
        *self = next;
        out
    }
}

/// A block read back; cheap to clone.
#[derive(Clone)]
pub struct Block {
    data: Bytes,
    restarts_at: usize,
    num_restarts: usize,
    /// Where the hash index's buckets start, and how many there are (0: no index).
    buckets_at: usize,
    num_buckets: usize,
}

/// What a block's hash index says of a user key.
enum HashProbe {
    /// No key of the block has its hash: not here.
    Absent,
    /// Its first entry, if here, is in this restart interval.
    Interval(usize),
    /// The index cannot tell (no index, or keys of two intervals share the bucket).
    Unknown,
}

impl Block {
    /// Checks the trailer; `None` if the block is malformed.
    pub fn new(data: Bytes) -> Option<Block> {
        let count_at = data.len().checked_sub(4)?;
        let count = get_u32(&data, count_at)?;
        let (n, buckets_at, num_buckets) = if count & HASH_FLAG != 0 {
            let m_at = count_at.checked_sub(2)?;
            let m = u16::from_le_bytes(data.get(m_at..count_at)?.try_into().ok()?) as usize;
            ((count & !HASH_FLAG) as usize, m_at.checked_sub(m)?, m)
        } else {
            (count as usize, count_at, 0)
        };
        let restarts_at = buckets_at.checked_sub(n.checked_mul(4)?)?;
        if n == 0 {
            return None;
        }
        Some(Block {
            data,
            restarts_at,
            num_restarts: n,
            buckets_at,
            num_buckets,
        })
    }

    /// What the hash index says of the user key hashed as `hash` ([`key_hash`]).
    fn probe(&self, hash: u64) -> HashProbe {
        if self.num_buckets == 0 {
            return HashProbe::Unknown;
        }
        match self
            .data
            .get(self.buckets_at + bucket(hash, self.num_buckets))
        {
            Some(&NO_KEY) => HashProbe::Absent,
            Some(&i) if (i as usize) < self.num_restarts => HashProbe::Interval(i as usize),
            _ => HashProbe::Unknown,
        }
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

/// An order on keys.
type Cmp = fn(&[u8], &[u8]) -> Ordering;

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
        match self.last_restart_below(target, cmp) {
            Some(lo) => self.scan_from(lo, target, cmp),
            None => self.fail(),
        }
    }

    /// The last restart point whose key is `< target` (0 if none; `None`: a malformed
    /// block), by binary search. A restart entry shares nothing with the one before: its key
    /// is compared where it lies.
    fn last_restart_below(&self, target: &[u8], cmp: Cmp) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let key = self.restart_key(self.block.restart(mid)?)?;
            if cmp(key, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }

    /// Positions at least `n` entries before the first entry whose key is `>= target` under
    /// `cmp` (at the first entry if there are fewer): `n` restart points back, each holding
    /// one entry or more, so a walk to `target` need not read the block from its start.
    pub fn seek_back(&mut self, target: &[u8], n: usize, cmp: Cmp) {
        // The first entry `>= target` is in interval `lo` or starts `lo + 1`.
        let back = |lo: usize| (lo + 1).saturating_sub(n.max(1));
        let at = self.last_restart_below(target, cmp);
        // A restart point must start an entry whole (a seek checks those it compares).
        let off = at.and_then(|lo| self.block.restart(back(lo)));
        let Some(off) = off.filter(|&o| self.restart_key(o).is_some()) else {
            return self.fail();
        };
        self.next = off;
        self.key.clear();
        self.advance();
    }

    /// Positions at the first entry from restart interval `interval` on whose key is
    /// `>= target` under `cmp`.
    fn scan_from(&mut self, interval: usize, target: &[u8], cmp: fn(&[u8], &[u8]) -> Ordering) {
        let Some(off) = self.block.restart(interval) else {
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

    /// Positions at the first entry whose key is `>= target` (an internal key) if the block
    /// holds `target`'s user key, hashed as `hash` ([`key_hash`]); otherwise anywhere
    /// (invalid, or at another user key): a point lookup checks the key it lands on. Through
    /// the hash index when the block has one.
    pub fn seek_point(&mut self, target: &[u8], hash: u64, cmp: fn(&[u8], &[u8]) -> Ordering) {
        match self.block.probe(hash) {
            HashProbe::Absent => self.valid = false,
            HashProbe::Interval(i) => self.scan_from(i, target, cmp),
            HashProbe::Unknown => self.seek(target, cmp),
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
    fn an_index_block_stores_every_key_whole_and_seeks_the_same() {
        let (mut dense, mut data) = (BlockBuilder::for_index(), BlockBuilder::new());
        for i in 0..100 {
            let k = format!("key{i:05}");
            dense.add(k.as_bytes(), b"h");
            data.add(k.as_bytes(), b"h");
        }
        let (dense, data) = (dense.finish(), data.finish());
        let restarts = |b: &[u8]| get_u32(b, b.len() - 4).unwrap();
        assert_eq!((restarts(&dense), restarts(&data)), (100, 7));
        let (dense, data) = (
            Block::new(Bytes::from(dense)).unwrap(),
            Block::new(Bytes::from(data)).unwrap(),
        );
        for target in ["", "key00000", "key00015x", "key00016", "key00099", "zzz"] {
            let (mut a, mut b) = (dense.iter(), data.iter());
            a.seek(target.as_bytes(), <[u8]>::cmp);
            b.seek(target.as_bytes(), <[u8]>::cmp);
            assert_eq!(a.valid(), b.valid(), "{target}");
            if a.valid() {
                assert_eq!(a.key(), b.key(), "{target}");
                assert_eq!(a.value_slice(), b"h");
            }
        }
    }

    /// Internal keys of `users` user keys, each with `versions(u)` versions (newest first),
    /// in a block with a hash index.
    fn build_hashed(users: usize, versions: impl Fn(usize) -> u64) -> Block {
        let mut b = BlockBuilder::with_hash_index();
        for u in 0..users {
            for seq in (1..=versions(u)).rev() {
                let mut k = format!("user{u:05}").into_bytes();
                crate::key::push_trailer(&mut k, seq, crate::key::Kind::Put);
                b.add(&k, format!("v{u}.{seq}").as_bytes());
            }
        }
        Block::new(Bytes::from(b.finish())).unwrap()
    }

    fn target(user: &str, seq: u64) -> Vec<u8> {
        let mut k = user.as_bytes().to_vec();
        crate::key::push_trailer(&mut k, seq, crate::key::Kind::Put);
        k
    }

    #[test]
    fn a_point_seek_through_the_hash_index_lands_where_a_seek_does() {
        use crate::key::cmp_ikey;
        // Versions of one key across restart intervals (up to 40 of them), and single ones.
        let block = build_hashed(60, |u| {
            if u % 7 == 0 {
                1 + (u as u64 * 3) % 40
            } else {
                1
            }
        });
        assert!(block.num_buckets > 0);
        let (mut point, mut plain) = (block.iter(), block.iter());
        for u in 0..60 {
            let user = format!("user{u:05}");
            for seq in [0, 1, 2, 5, 17, 39, 40, u64::MAX >> 8] {
                let t = target(&user, seq);
                point.seek_point(&t, key_hash(user.as_bytes()), cmp_ikey);
                plain.seek(&t, cmp_ikey);
                let user_of = |it: &BlockIter| it.valid().then(|| it.key()[..user.len()].to_vec());
                if user_of(&plain).as_deref() == Some(user.as_bytes()) {
                    assert_eq!(point.key(), plain.key(), "{user} at {seq}");
                    assert_eq!(point.value_slice(), plain.value_slice());
                } else {
                    // Not in the block at that seqno: the point seek may land anywhere
                    // but on this user key.
                    assert_ne!(user_of(&point).as_deref(), Some(user.as_bytes()));
                }
            }
        }
        // Keys the block does not hold never land on a key of their own.
        for u in 0..500 {
            let user = format!("absent{u}");
            point.seek_point(&target(&user, 9), key_hash(user.as_bytes()), cmp_ikey);
            assert!(!point.corrupt());
            assert!(!point.valid() || !point.key().starts_with(user.as_bytes()));
        }
    }

    #[test]
    fn a_block_of_too_many_restart_intervals_goes_without_a_hash_index() {
        let block = build_hashed(16 * MANY as usize, |_| 1);
        assert_eq!(block.num_buckets, 0);
        let mut it = block.iter();
        let user = "user00300";
        it.seek_point(
            &target(user, 5),
            key_hash(user.as_bytes()),
            crate::key::cmp_ikey,
        );
        assert!(it.key().starts_with(user.as_bytes()));
    }

    #[test]
    fn garbage_never_panics() {
        let hashed = build_hashed(30, |u| 1 + u as u64 % 3);
        for raw in [build(40).data.to_vec(), hashed.data.to_vec()] {
            garbage_in(raw);
        }
    }

    fn garbage_in(raw: Vec<u8>) {
        for i in 0..raw.len() {
            let mut b = raw.clone();
            b[i] ^= 0xA5;
            if let Some(bl) = Block::new(Bytes::from(b)) {
                let mut it = bl.iter();
                it.seek_to_first();
                while it.advance() {}
                it.seek(b"key00020", <[u8]>::cmp);
                for u in ["user00004", "key00020", "nothing"] {
                    it.seek_point(&target(u, 3), key_hash(u.as_bytes()), crate::key::cmp_ikey);
                }
            }
        }
    }
}
