//! The row cache (`Options::row_cache_bytes`): key -> value of recently read records, so a
//! hot key's get skips the memtables, the tables and the value-log read.
//!
//! Sharded by key hash (a `parking_lot::RwLock` each), so readers of different keys meet on
//! no lock. Eviction is CLOCK, not LRU: a hit only sets the entry's reference bit, under the
//! shard's *read* lock, where LRU would move the entry in a list under the write lock on every
//! hit; inserts sweep the hand past referenced entries (clearing their bit) to the first one
//! not used since the last sweep.
//!
//! What is cached are values, copied out of the memtable's write buffer or the mapped log
//! (so an entry holds neither a 1 MiB commit group nor a segment GC deleted), never their
//! log addresses: value-log GC moves records, not values, so an entry stays right through it.
//! Only reads of the latest state fill it or are answered by it (`Reader::get`, `get_many`
//! without a snapshot); reads at a snapshot go to the tree.
//!
//! Admission. A value is cached at its key's second miss, not its first
//! ([`doorkeeper`](self::doorkeeper)): a pass over keys each read once costs a bit a miss
//! instead of a copy and an eviction, and leaves the entries hot keys earned in place.
//!
//! Staleness. Every write of a key calls [`RowCache::invalidate`] with its seqno before that
//! seqno becomes visible to readers (under the writer lock, before `visible_seq` moves). The
//! race left is a reader that read the old value at seqno `s` and inserts it after the write
//! invalidated the key: it would stay stale until evicted. Each shard therefore keeps, per
//! bucket of key hashes, the highest seqno that invalidated a key of the bucket (a *fence*),
//! and [`RowCache::insert`] takes a value read at `s` only if no fence of its bucket is above
//! `s`. Both sides hold the shard lock, so either the invalidation comes first (the fence
//! turns the insert away) or the insert does (the invalidation removes it); a read at `s` at
//! or above the write's seqno saw the new value. A fence is rarely hit by another key of the
//! bucket in the microseconds a miss takes: that costs one insert, never a wrong answer.
//! The `s` a reader gives is the visible seqno it read *before* loading its super version:
//! the value it finds is the newest at that seqno. The seqno of its lookup (read after the
//! load) would claim too much: a write made after a memtable switch that follows the load
//! sits in a memtable that super version lacks, and the old value cached at that write's
//! seqno passed the fence and stayed stale (`db/read_tests.rs`).

mod doorkeeper;

use crate::key::{Nsid, SeqNo};
use bytes::Bytes;
use doorkeeper::Doorkeeper;
use parking_lot::RwLock;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Bytes an entry costs beyond its key and value: the entry (hash, namespace, key and value
/// handles, bits), its slot, its map entry and the two heap blocks' headers.
pub(crate) const ENTRY_OVERHEAD: u64 = 128;

/// Values longer than this are not cached: one would push out hundreds of small hot records,
/// and its read from the log costs little next to its copy.
pub(crate) const MAX_VALUE: usize = 64 << 10;

/// At most this many shards; fewer for a small cache, so each holds at least `MIN_SHARD`.
const MAX_SHARDS: usize = 64;
const MIN_SHARD: u64 = 1 << 20;

/// Fence buckets per shard (see the module's comment).
const FENCES: usize = 256;

/// The bytes of an entry the doorkeeper is sized by: its overhead and 128 bytes of key and
/// value (a cache of larger values gets a longer window of misses, not a worse one).
const TYPICAL_ENTRY: u64 = ENTRY_OVERHEAD + 128;

/// The row cache's counters and size (`DbStats::row_cache`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RowCacheStats {
    /// The budget (`Options::row_cache_bytes`; 0: off).
    pub capacity_bytes: u64,
    /// Bytes charged now: keys, values and `ENTRY_OVERHEAD` per entry.
    pub bytes: u64,
    /// Entries held now.
    pub entries: u64,
    /// Gets (and keys of `get_many`) at the latest state answered by the cache.
    pub hits: u64,
    /// Gets at the latest state it could not answer (they read the tree).
    pub misses: u64,
    /// Values put into the cache.
    pub inserts: u64,
    /// Values read and not cached because it was their key's first miss in the
    /// doorkeeper's window (a value is cached at its key's second miss).
    pub deferred: u64,
    /// Entries evicted to make room (not counting those writes invalidated).
    pub evictions: u64,
}

/// A key hash is already uniform: the map uses it as is.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("keys are u64 hashes")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

struct Entry {
    hash: u64,
    ns: Nsid,
    key: Box<[u8]>,
    value: Bytes,
    /// Read since the hand last passed (CLOCK's reference bit).
    referenced: AtomicBool,
    charge: u64,
}

#[derive(Default)]
struct Shard {
    /// Key hash -> slot. Two keys with one 64-bit hash share a slot: the newer replaces
    /// the older, and a lookup compares the key.
    map: HashMap<u64, usize, BuildHasherDefault<IdHasher>>,
    slots: Vec<Option<Entry>>,
    free: Vec<usize>,
    hand: usize,
    used: u64,
    inserts: u64,
    evictions: u64,
    fences: Vec<SeqNo>,
}

impl Shard {
    fn remove_slot(&mut self, slot: usize) -> Option<Entry> {
        let e = self.slots[slot].take()?;
        self.map.remove(&e.hash);
        self.free.push(slot);
        self.used -= e.charge;
        Some(e)
    }

    /// Evicts entries, CLOCK order, until `charge` more bytes fit in `capacity`.
    fn make_room(&mut self, charge: u64, capacity: u64) {
        while self.used + charge > capacity && !self.map.is_empty() {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let slot = self.hand;
            self.hand += 1;
            let keep = match &self.slots[slot] {
                None => continue,
                Some(e) => e.referenced.swap(false, Ordering::Relaxed),
            };
            if !keep {
                self.remove_slot(slot);
                self.evictions += 1;
            }
        }
    }
}

/// See the module's comment.
pub(crate) struct RowCache {
    shards: Box<[RwLock<Shard>]>,
    /// `shards.len() - 1` (a power of two).
    mask: usize,
    shard_capacity: u64,
    capacity: u64,
    doorkeeper: Doorkeeper,
}

fn hash_of(ns: Nsid, key: &[u8]) -> u64 {
    xxh3_64_with_seed(key, u64::from(ns))
}

impl RowCache {
    /// A cache of `capacity` bytes; `None` for 0 (off).
    pub(crate) fn new(capacity: u64) -> Option<RowCache> {
        if capacity == 0 {
            return None;
        }
        let want = (capacity / MIN_SHARD).clamp(1, MAX_SHARDS as u64) as usize;
        // The largest power of two not above `want`.
        let n = 1usize << (usize::BITS - 1 - want.leading_zeros());
        let shards = (0..n)
            .map(|_| {
                RwLock::new(Shard {
                    fences: vec![0; FENCES],
                    ..Shard::default()
                })
            })
            .collect();
        Some(RowCache {
            shards,
            mask: n - 1,
            shard_capacity: capacity / n as u64,
            capacity,
            doorkeeper: Doorkeeper::new(capacity / TYPICAL_ENTRY),
        })
    }

    fn shard(&self, hash: u64) -> &RwLock<Shard> {
        // High bits pick the shard, low bits the fence: independent of each other.
        &self.shards[(hash >> 40) as usize & self.mask]
    }

    /// The cached value of `(ns, key)`, marked as used.
    pub(crate) fn get(&self, ns: Nsid, key: &[u8]) -> Option<Bytes> {
        let hash = hash_of(ns, key);
        let shard = self.shard(hash).read();
        let slot = *shard.map.get(&hash)?;
        let e = shard.slots[slot].as_ref()?;
        if e.ns != ns || *e.key != *key {
            return None;
        }
        // A plain load first: a hot entry's bit is already set, and a store would bounce
        // its cache line between readers.
        if !e.referenced.load(Ordering::Relaxed) {
            e.referenced.store(true, Ordering::Relaxed);
        }
        Some(e.value.clone())
    }

    /// Caches `value` of `(ns, key)` as read at seqno `read_seq`, unless it is its key's
    /// first miss, a write of a key of its fence bucket newer than `read_seq` was
    /// invalidated since (the module's comment), or it is too large.
    pub(crate) fn insert(&self, ns: Nsid, key: &[u8], value: &[u8], read_seq: SeqNo) {
        let charge = (key.len() + value.len()) as u64 + ENTRY_OVERHEAD;
        if value.len() > MAX_VALUE || charge > self.shard_capacity / 8 {
            return;
        }
        let hash = hash_of(ns, key);
        if !self.doorkeeper.seen(hash) {
            return;
        }
        let mut shard = self.shard(hash).write();
        if shard.fences[hash as usize % FENCES] > read_seq {
            return;
        }
        if let Some(&slot) = shard.map.get(&hash) {
            shard.remove_slot(slot);
        }
        shard.make_room(charge, self.shard_capacity);
        let entry = Entry {
            hash,
            ns,
            key: key.into(),
            value: Bytes::copy_from_slice(value),
            referenced: AtomicBool::new(false),
            charge,
        };
        let slot = match shard.free.pop() {
            Some(s) => {
                shard.slots[s] = Some(entry);
                s
            }
            None => {
                shard.slots.push(Some(entry));
                shard.slots.len() - 1
            }
        };
        shard.map.insert(hash, slot);
        shard.used += charge;
        shard.inserts += 1;
    }

    /// Drops `(ns, key)`, written at seqno `seq`: called before that seqno is visible.
    pub(crate) fn invalidate(&self, ns: Nsid, key: &[u8], seq: SeqNo) {
        let hash = hash_of(ns, key);
        let mut shard = self.shard(hash).write();
        let fence = &mut shard.fences[hash as usize % FENCES];
        *fence = (*fence).max(seq);
        if let Some(&slot) = shard.map.get(&hash) {
            shard.remove_slot(slot);
        }
    }

    /// Drops every entry of namespace `ns` (destroyed: its id is never used again, so an
    /// entry a get racing the destruction inserts after this is never read, only evicted).
    pub(crate) fn drop_namespace(&self, ns: Nsid) {
        for s in self.shards.iter() {
            let mut shard = s.write();
            let of_ns: Vec<usize> = (0..shard.slots.len())
                .filter(|&i| shard.slots[i].as_ref().is_some_and(|e| e.ns == ns))
                .collect();
            for i in of_ns {
                shard.remove_slot(i);
            }
        }
    }

    /// Size and the cache's own counters (hits and misses are the namespaces').
    pub(crate) fn stats(&self) -> RowCacheStats {
        let mut s = RowCacheStats {
            capacity_bytes: self.capacity,
            deferred: self.doorkeeper.deferred(),
            ..RowCacheStats::default()
        };
        for shard in self.shards.iter() {
            let shard = shard.read();
            s.bytes += shard.used;
            s.entries += shard.map.len() as u64;
            s.inserts += shard.inserts;
            s.evictions += shard.evictions;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_after_insert_and_not_after_invalidate() {
        let c = RowCache::new(1 << 20).unwrap();
        assert_eq!(c.get(1, b"k"), None);
        c.insert(1, b"k", b"v", 5);
        assert_eq!(c.get(1, b"k"), None, "a first miss is not cached");
        c.insert(1, b"k", b"v", 5);
        assert_eq!(c.get(1, b"k").as_deref(), Some(&b"v"[..]));
        assert_eq!(c.get(2, b"k"), None, "namespaces are apart");
        c.invalidate(1, b"k", 6);
        assert_eq!(c.get(1, b"k"), None);
        // Read before the write at 6: turned away; read at 6 or later: taken.
        c.insert(1, b"k", b"old", 5);
        assert_eq!(c.get(1, b"k"), None);
        c.insert(1, b"k", b"new", 6);
        assert_eq!(c.get(1, b"k").as_deref(), Some(&b"new"[..]));
        let s = c.stats();
        assert_eq!(
            (s.entries, s.inserts, s.evictions, s.deferred),
            (1, 2, 0, 1)
        );
        assert_eq!(s.bytes, 1 + 3 + ENTRY_OVERHEAD);
    }

    #[test]
    fn stays_in_budget_and_keeps_referenced_entries() {
        let cap = 8 * (ENTRY_OVERHEAD + 100);
        let c = RowCache::new(cap).unwrap();
        let v = [7u8; 96];
        for i in 0u32..100 {
            c.insert(0, &i.to_be_bytes(), &v, 0);
            c.insert(0, &i.to_be_bytes(), &v, 0);
            // Key 0 is read all along: CLOCK keeps it.
            assert!(c.get(0, &0u32.to_be_bytes()).is_some(), "after {i}");
            assert!(c.stats().bytes <= cap);
        }
        let s = c.stats();
        assert_eq!(s.entries, 8);
        assert_eq!(s.evictions, 92);
    }

    #[test]
    fn large_values_and_dropped_namespaces_are_not_kept() {
        let c = RowCache::new(64 << 20).unwrap();
        c.insert(1, b"big", &vec![0; MAX_VALUE + 1], 0);
        assert_eq!(c.get(1, b"big"), None);
        for i in 0u32..50 {
            for _ in 0..2 {
                c.insert(1, &i.to_be_bytes(), b"a", 0);
                c.insert(2, &i.to_be_bytes(), b"b", 0);
            }
        }
        c.drop_namespace(1);
        assert_eq!(c.stats().entries, 50);
        assert_eq!(c.get(1, &3u32.to_be_bytes()), None);
        assert!(c.get(2, &3u32.to_be_bytes()).is_some());
    }

    /// A budget far past the machine's memory opens (nothing is sized from it up front but
    /// the doorkeeper, which stops at 1 MiB).
    #[test]
    fn a_huge_budget_opens() {
        let c = RowCache::new(1 << 50).unwrap();
        c.insert(1, b"k", b"v", 0);
        c.insert(1, b"k", b"v", 0);
        assert_eq!(c.get(1, b"k").as_deref(), Some(&b"v"[..]));
    }
}
