//! The memtable: a concurrent skiplist of the newest writes, shared by all namespaces.
//! It keeps the value bytes too, so a get that hits it needs no value-log read.

use crate::key::{Kind, SeqNo, ValueAddr};
use crate::key_hashes::KeyHashes;
use bytes::Bytes;
use crossbeam_skiplist::SkipMap;
use key_filter::KeyFilter;
use key_samples::KeySamples;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

mod key_filter;
mod key_samples;

/// `nsid ++ user key` and seqno; sorts by user part ascending, seqno descending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemKey {
    pub user: Bytes,
    pub seq: SeqNo,
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.user
            .cmp(&other.user)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Bytes of a user key held in the skiplist node itself ([`SlotKey`]).
const HEAD_LEN: usize = 24;

/// The skiplist's key: a [`MemKey`] with the first [`HEAD_LEN`] bytes of its user key copied
/// into the node as big-endian words (zero-padded). An insert or lookup compares a dozen or
/// more nodes' keys on its way down; most differ in these words, so the comparison reads no
/// memory beyond the node (the key bytes are an allocation of their own: a cache miss each;
/// they were a third of a put's CPU time at 1 KiB values).
#[derive(Clone, Debug)]
struct SlotKey {
    head: [u64; 3],
    user: Bytes,
    seq: SeqNo,
}

impl SlotKey {
    fn new(user: Bytes, seq: SeqNo) -> SlotKey {
        let mut bytes = [0u8; HEAD_LEN];
        let n = user.len().min(HEAD_LEN);
        bytes[..n].copy_from_slice(&user[..n]);
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_be_bytes(w)
        };
        SlotKey {
            head: [word(0), word(1), word(2)],
            user,
            seq,
        }
    }

    fn mem_key(&self) -> MemKey {
        MemKey {
            user: self.user.clone(),
            seq: self.seq,
        }
    }
}

impl Ord for SlotKey {
    /// [`MemKey`]'s order. Zero-padded heads that differ order the keys as their bytes do (a
    /// difference in the padding means the shorter key is a prefix of the longer); equal
    /// heads of keys that both fit are the same bytes up to the shorter length, so the
    /// shorter key comes first; longer keys compare whole.
    fn cmp(&self, other: &Self) -> Ordering {
        self.head
            .cmp(&other.head)
            .then_with(|| {
                let (a, b) = (&self.user, &other.user);
                if a.len() <= HEAD_LEN && b.len() <= HEAD_LEN {
                    a.len().cmp(&b.len())
                } else {
                    a.cmp(b)
                }
            })
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for SlotKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for SlotKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for SlotKey {}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemValue {
    pub kind: Kind,
    /// Empty for deletions.
    pub value: Bytes,
    /// Where the record sits in the value log.
    pub addr: ValueAddr,
}

/// Per-entry bookkeeping charged against the memtable budget besides key and value bytes.
const ENTRY_OVERHEAD: usize = 64;

pub struct Memtable {
    map: SkipMap<SlotKey, MemValue>,
    filter: KeyFilter,
    bytes: AtomicUsize,
    max_seq: AtomicU64,
    /// Bytes of puts written into it per namespace (keys, values, index entries), counted
    /// as new, less the versions a capacity check found they replace (so it may go below
    /// zero): what a capacity check adds to the usage of the last flush.
    /// Keyed by the engine's own ids: `IdHash`, not SipHash (a cost on every put).
    charged: parking_lot::Mutex<HashMap<crate::key::Nsid, i64, crate::id_hash::IdHash>>,
    /// The last map of key hashes queries took per namespace, and the visible seqno up to
    /// which it holds every version (see `key_hashes`).
    key_hashes: parking_lot::Mutex<HashMap<crate::key::Nsid, (SeqNo, Arc<KeyHashes>)>>,
    /// About one key in 64, in order: where a walk in pieces may cut the entries.
    samples: KeySamples,
}

impl Memtable {
    /// A memtable to be frozen near `budget` bytes (its key filter is sized for the most
    /// entries that many bytes can hold).
    pub fn new(budget: usize) -> Self {
        Self::sized(budget, None)
    }

    /// A memtable to be frozen near `budget` bytes that follows `previous`: its key filter
    /// is sized for as many entries as `previous` would have held in that many bytes.
    pub fn following(budget: usize, previous: &Memtable) -> Self {
        let bytes = previous.bytes.load(Relaxed);
        let expected = (bytes > 0).then(|| {
            let n = previous.map.len() as u128 * budget as u128 / bytes as u128;
            usize::try_from(n).unwrap_or(usize::MAX)
        });
        Self::sized(budget, expected)
    }

    fn sized(budget: usize, expected: Option<usize>) -> Self {
        Memtable {
            map: SkipMap::new(),
            filter: KeyFilter::new(budget, expected),
            bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            charged: Default::default(),
            key_hashes: Default::default(),
            samples: KeySamples::new(),
        }
    }

    pub fn insert(&self, user: Bytes, seq: SeqNo, value: MemValue) {
        self.bytes
            .fetch_add(user.len() + value.value.len() + ENTRY_OVERHEAD, Relaxed);
        self.max_seq.fetch_max(seq, Relaxed);
        // Before the entry: whoever can see the entry (its seqno published after this
        // insert returns) sees its bits.
        self.filter.insert(xxhash_rust::xxh3::xxh3_64(&user));
        self.samples.offer(&user);
        self.map.insert(SlotKey::new(user, seq), value);
    }

    /// The newest version of `user` with seqno at most `snapshot`.
    pub fn get(&self, user: &[u8], snapshot: SeqNo) -> Option<(SeqNo, MemValue)> {
        // An empty memtable answers without the filter's cache miss. `bytes` grows before an
        // entry goes in, as the filter's bits are set before (see `insert`).
        if self.bytes.load(Relaxed) == 0 || !self.filter.may_contain(user) {
            return None;
        }
        let probe = SlotKey::new(Bytes::copy_from_slice(user), snapshot);
        let e = self.map.lower_bound(Bound::Included(&probe))?;
        (e.key().user == user).then(|| (e.key().seq, e.value().clone()))
    }

    /// Counts `bytes` put into namespace `ns`, less `credit` bytes of the versions they
    /// replace (see `charged`).
    pub fn charge(&self, ns: crate::key::Nsid, bytes: u64, credit: u64) {
        let d = i64::try_from(bytes)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(credit).unwrap_or(i64::MAX));
        if d != 0 {
            let mut charged = self.charged.lock();
            let c = charged.entry(ns).or_default();
            *c = c.saturating_add(d);
        }
    }

    /// Bytes put into namespace `ns` here, less the credits (may be below zero).
    pub fn charged(&self, ns: crate::key::Nsid) -> i64 {
        self.charged.lock().get(&ns).copied().unwrap_or(0)
    }

    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn max_seq(&self) -> SeqNo {
        self.max_seq.load(Relaxed)
    }

    /// Sampled keys of namespace `ns` (without it) in `[start, end)`, the `n` nearest its end
    /// (`from_top`) or its start, in order: about 64 distinct keys of the memtable apart.
    pub fn sampled_keys(
        &self,
        ns: crate::key::Nsid,
        start: &[u8],
        end: Option<&[u8]>,
        from_top: bool,
        n: usize,
    ) -> Vec<Vec<u8>> {
        self.samples.within(ns, start, end, from_top, n)
    }

    /// The entries (versions and tombstones) of namespace `ns`, in order.
    fn entries_in(
        &self,
        ns: crate::key::Nsid,
    ) -> impl Iterator<Item = crossbeam_skiplist::map::Entry<'_, SlotKey, MemValue>> + '_ {
        let prefix = ns.to_be_bytes();
        let lo = SlotKey::new(Bytes::copy_from_slice(&prefix), SeqNo::MAX);
        self.map
            .range(lo..)
            .take_while(move |e| e.key().user.get(..crate::key::NSID_LEN) == Some(&prefix[..]))
    }

    /// Entries (versions and tombstones) of namespace `ns`: a walk over its range.
    pub fn entries_of(&self, ns: crate::key::Nsid) -> u64 {
        self.entries_in(ns).count() as u64
    }

    /// The map [`Memtable::key_hashes`] last took of namespace `ns`, if it holds every
    /// version a read at `snapshot` sees.
    pub fn cached_key_hashes(
        &self,
        ns: crate::key::Nsid,
        snapshot: SeqNo,
    ) -> Option<Arc<KeyHashes>> {
        let taken = self.key_hashes.lock();
        let (through, map) = taken.get(&ns)?;
        (snapshot <= *through).then(|| map.clone())
    }

    /// The newest seqno of each key of namespace `ns` here, by the key's [`key_hash`] (keys
    /// whose hashes collide keep the newer), if the namespace has at most `max` entries here
    /// (else `None`, after a walk of `max + 1`): what a query that checks many pks for newer
    /// versions takes once instead of probing the memtable for each. A small map of hashes
    /// stays in the cache where the memtable's filter, sized for a whole memtable, costs a
    /// cache miss per probe. `visible`: the database's visible seqno before this call; every
    /// version up to it is in the map, which later queries at snapshots up to it share.
    pub fn key_hashes(
        &self,
        ns: crate::key::Nsid,
        visible: SeqNo,
        max: usize,
    ) -> Option<Arc<KeyHashes>> {
        let mut over = false;
        let walk = self
            .entries_in(ns)
            .enumerate()
            .map_while(|(walked, e)| match walked == max {
                true => {
                    over = true;
                    None
                }
                false => Some((e.key().user.clone(), e.key().seq)),
            });
        // Versions past any snapshot too: a newer seqno than a reader sees only sends that
        // reader to the exact search.
        let map = KeyHashes::build(walk, crate::key::NSID_LEN);
        if over {
            return None;
        }
        let map = Arc::new(map);
        let mut taken = self.key_hashes.lock();
        if taken.get(&ns).is_none_or(|(through, _)| *through < visible) {
            taken.insert(ns, (visible, map.clone()));
        }
        Some(map)
    }

    /// All entries in order (newest version of a key first).
    pub fn iter(&self) -> impl Iterator<Item = (MemKey, MemValue)> + '_ {
        self.map
            .iter()
            .map(|e| (e.key().mem_key(), e.value().clone()))
    }

    /// Appends to `out` up to `max` entries in order from `from` on; how many it appended.
    ///
    /// # Safety
    /// The entries are given a lifetime of the caller's choice: the caller keeps this
    /// memtable alive (its `Arc`) for as long as it holds them, and drops them before it.
    /// Each entry holds its node's reference count, so its node stays even if the key is
    /// replaced meanwhile; the map they borrow is the one thing the lifetime stands for.
    /// The keys' and values' own buffers are not counted again per entry: on a scan of
    /// entries out of the cache, each such count was a locked instruction on a cold line.
    unsafe fn entries_from<'a>(
        &self,
        from: &SlotKey,
        max: usize,
        out: &mut Vec<MemRef<'a>>,
    ) -> usize {
        let before = out.len();
        for e in self.map.range(from..).take(max) {
            prefetch_entry(&e);
            // SAFETY: see the function's comment.
            out.push(unsafe { std::mem::transmute::<MemRef<'_>, MemRef<'a>>(e) });
        }
        out.len() - before
    }
}

/// The walk reads each key's bytes, and a scan each value's, soon: asked for as the entries
/// are taken, their cache misses overlap the chase down the list instead of following it.
/// All of a refill's (up to 512, 64 KiB of lines): asked for a few entries ahead of the
/// walk instead, YCSB e ran a fifth slower.
fn prefetch_entry(e: &MemRef<'_>) {
    prefetch(e.key().user.as_ptr());
    prefetch(e.value().value.as_ptr());
}

/// Asks the CPU to bring the cache line at `p` in (no fault if it is not mapped).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// An entry of a memtable, its node held.
type MemRef<'a> = crossbeam_skiplist::map::Entry<'a, SlotKey, MemValue>;

/// Entries a [`MemIter`] takes at a time: few after a seek, so a short scan walks few nodes
/// past its end, then twice as many at each refill up to the largest, their bytes asked for
/// ahead of the walk. A refill goes on from the node it stopped at: no search.
const MEM_ITER_CHUNK: usize = 8;
const MEM_ITER_MAX_CHUNK: usize = 512;

/// An ordered walk over a memtable from a start key that owns what it needs (the memtable,
/// and handles on a few of its entries at a time), so it can sit in a scan next to table
/// iterators. Entries inserted while it walks may or may not be seen; readers filter them
/// by snapshot.
pub struct MemIter {
    /// The entries taken at the last refill, the current one at `pos`; they never leave
    /// with a lifetime longer than a borrow of the walk. Declared before `mem`: dropped
    /// before it. Those walked past are dropped at the next refill.
    buf: Vec<MemRef<'static>>,
    pos: usize,
    /// The map `buf` borrows (`Memtable::entries_from`).
    mem: Arc<Memtable>,
    /// The skiplist had nothing after the last entry taken at the last refill.
    exhausted: bool,
    /// Entries the next refill takes.
    chunk: usize,
    /// Internal key (`user ++ trailer`) of the current entry.
    ikey: Vec<u8>,
}

impl MemIter {
    /// Bytes of the entries it holds (handles: the keys and values are the memtable's).
    pub fn buffer_bytes(&self) -> usize {
        self.buf.capacity() * std::mem::size_of::<MemRef<'static>>() + self.ikey.capacity()
    }

    /// Unpositioned (invalid) until `seek`.
    pub fn new(mem: Arc<Memtable>) -> MemIter {
        MemIter {
            mem,
            buf: Vec::new(),
            pos: 0,
            exhausted: true,
            chunk: MEM_ITER_CHUNK,
            ikey: Vec::new(),
        }
    }

    fn release(&mut self) {
        self.buf.clear();
        self.pos = 0;
    }

    /// Positions at the first entry at or after `(user, seq)` in memtable order: the
    /// newest version of `user` with seqno at most `seq`, or else the next user key.
    pub fn seek(&mut self, user: &[u8], seq: SeqNo) {
        let from = SlotKey::new(Bytes::copy_from_slice(user), seq);
        // The walk's calls pin the skiplist's epoch each: inside a pin of their own, a pin
        // is a plain count, where a first one is a locked instruction.
        let _pinned = crossbeam_epoch::pin();
        self.release();
        self.chunk = MEM_ITER_CHUNK;
        // SAFETY: `self.mem` lives as long as `self`, which holds the entries.
        let got = unsafe { self.mem.entries_from(&from, self.chunk, &mut self.buf) };
        self.filled(got);
    }

    pub fn valid(&self) -> bool {
        self.pos < self.buf.len()
    }

    /// The current entry, `(nsid ++ user key, seqno, value)`; only while `valid()`.
    pub fn entry(&self) -> Option<(&[u8], SeqNo, &MemValue)> {
        self.buf
            .get(self.pos)
            .map(|e| (&e.key().user[..], e.key().seq, e.value()))
    }

    /// The current entry's internal key; empty when not valid.
    pub fn ikey(&self) -> &[u8] {
        &self.ikey
    }

    pub fn advance(&mut self) {
        self.pos = (self.pos + 1).min(self.buf.len());
        if self.pos == self.buf.len() && !self.exhausted {
            self.refill();
        } else {
            self.set_ikey();
        }
    }

    /// Takes the next entries after the last one taken: from its node on, no search.
    fn refill(&mut self) {
        // As in `seek`: each `next` below pins, nested in this one.
        let _pinned = crossbeam_epoch::pin();
        let Some(last) = self.buf.pop() else {
            return self.filled(0);
        };
        self.release();
        let mut got = 0;
        while got < self.chunk {
            // A handle's `next` is the node after it, whatever was inserted meanwhile; it
            // borrows the map as `last` does.
            let Some(e) = self.buf.last().unwrap_or(&last).next() else {
                break;
            };
            prefetch_entry(&e);
            self.buf.push(e);
            got += 1;
        }
        drop(last);
        self.filled(got);
    }

    fn filled(&mut self, got: usize) {
        self.exhausted = got < self.chunk;
        self.chunk = (self.chunk * 2).min(MEM_ITER_MAX_CHUNK);
        self.set_ikey();
    }

    fn set_ikey(&mut self) {
        self.ikey.clear();
        if let Some(e) = self.buf.get(self.pos) {
            self.ikey.extend_from_slice(&e.key().user);
            crate::key::push_trailer(&mut self.ikey, e.key().seq, e.value().kind);
        }
    }
}

#[cfg(test)]
mod tests;
