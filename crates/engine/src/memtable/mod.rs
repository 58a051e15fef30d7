//! The memtable: the newest writes in order, shared by all namespaces.
//! It keeps the value bytes too, so a get that hits it needs no value-log read.

use crate::key::SeqNo;
use crate::key_hashes::KeyHashes;
use entry::{NodeRef, Probe};
use entry_list::EntryList;
use key_filter::KeyFilter;
use key_samples::KeySamples;
use point_index::{Lookup, PointIndex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

mod entry;
mod entry_list;
mod key_filter;
mod key_samples;
mod point_index;
mod search_tree;
#[cfg(test)]
mod test_keys;
mod value;

pub use value::MemValue;

/// Budget bytes an entry is foreseen to take when nothing says better (the first memtable):
/// what the point index is sized for.
const FORESEEN_ENTRY: usize = 256;

/// The point index takes at most this share of the budget (1/16).
const INDEX_SHARE: usize = 16;

pub struct Memtable {
    /// Declared before `list`, whose entries it points to: dropped first.
    index: PointIndex,
    list: EntryList,
    filter: KeyFilter,
    /// What its entries take: each entry, the buffer bytes its value keeps, and the nodes
    /// the search tree grew by.
    bytes: AtomicUsize,
    /// Bytes of the filter, the index and the list's first nodes, allocated at its start.
    fixed_bytes: usize,
    max_seq: AtomicU64,
    /// Bytes of puts written into it per namespace (keys, values, index entries), counted
    /// as new, less the versions a capacity check found they replace (so it may go below
    /// zero): what a capacity check adds to the usage of the last flush.
    /// Keyed by the engine's own ids: `IdHash`, not SipHash (a cost on every put).
    charged: parking_lot::Mutex<HashMap<crate::key::Nsid, i64, crate::id_hash::IdHash>>,
    /// What queries learned taking maps of key hashes (see `key_hashes`).
    key_hashes: parking_lot::Mutex<TakenMaps>,
    /// About one key in 64, in order: where a walk in pieces may cut the entries.
    samples: KeySamples,
}

impl Memtable {
    /// A memtable to be frozen near `budget` bytes (its key filter is sized for the most
    /// entries that many bytes can hold).
    pub fn new(budget: usize) -> Self {
        Self::sized(budget, None)
    }

    /// A memtable to be frozen near `budget` bytes or at `max_entries` entries (0: no bound)
    /// that follows `previous`: its key filter is sized for as many entries as `previous`
    /// would have held in that many bytes, at most `max_entries`.
    pub fn following(budget: usize, max_entries: usize, previous: &Memtable) -> Self {
        // The entries of its size that fit in the budget its filter and index leave (not
        // the entries it held: a memtable frozen early held few).
        let bytes = previous.bytes.load(Relaxed);
        let room = budget.saturating_sub(previous.fixed_bytes).max(1);
        let expected = (bytes > 0).then(|| {
            let n = previous.list.len() as u128 * room as u128 / bytes as u128;
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            match max_entries {
                0 => n,
                max => n.min(max),
            }
        });
        Self::sized(budget, expected)
    }

    fn sized(budget: usize, expected: Option<usize>) -> Self {
        let foreseen = expected.unwrap_or(budget / FORESEEN_ENTRY);
        let index = PointIndex::new(foreseen, budget / INDEX_SHARE);
        let filter = KeyFilter::new(budget, expected);
        let list = EntryList::new();
        Memtable {
            fixed_bytes: index.bytes()
                + filter.bytes()
                + entry::LEAST_FOOTPRINT
                + list.tree_bytes(),
            index,
            list,
            filter,
            bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            charged: Default::default(),
            key_hashes: Default::default(),
            samples: KeySamples::new(),
        }
    }

    /// Inserts `user` (`nsid ++ key`) at `seq`; a second insert of the same key and seqno
    /// holds over the first. Two inserts of one key and seqno must not overlap (the point
    /// index keeps the one whose update came last, the list the one linked last): the write
    /// path inserts under the writer lock, a flush's supersede and a replay one at a time.
    pub fn insert(&self, user: &[u8], seq: SeqNo, value: MemValue) {
        let held = value.value.len();
        self.insert_holding(user, seq, value, held);
    }

    /// [`insert`](Self::insert) of a value that keeps `held` bytes of its buffer alive (its
    /// whole record, header and key too, where the value is a slice of the records a write
    /// encoded), unless it is empty (an empty slice keeps no buffer).
    pub fn insert_holding(&self, user: &[u8], seq: SeqNo, value: MemValue, held: usize) {
        let held = if value.value.is_empty() { 0 } else { held };
        self.bytes
            .fetch_add(entry::footprint(user.len()) + held, Relaxed);
        self.max_seq.fetch_max(seq, Relaxed);
        // Before the entry: whoever can see the entry (its seqno published after this
        // insert returns) sees its bits.
        let hash = xxhash_rust::xxh3::xxh3_64(user);
        self.filter.insert(hash);
        self.samples.offer(user);
        let (entry, grown) = self.list.insert(user, seq, value);
        if grown > 0 {
            self.bytes.fetch_add(grown, Relaxed);
        }
        // After the entry (`point_index`: on the write path, before its seqno is published).
        self.index.insert(hash, entry);
    }

    /// The newest version of `user` with seqno at most `snapshot`.
    pub fn get(&self, user: &[u8], snapshot: SeqNo) -> Option<(SeqNo, MemValue)> {
        // An empty memtable answers without the filter's cache miss. `bytes` grows before an
        // entry goes in, as the filter's bits are set before (see `insert`).
        if self.bytes.load(Relaxed) == 0 {
            return None;
        }
        let hash = xxhash_rust::xxh3::xxh3_64(user);
        if !self.filter.may_contain(hash) {
            return None;
        }
        let e = match self.index.get(hash, user) {
            Lookup::Newest(e) if e.seq() <= snapshot => e,
            Lookup::Absent => return None,
            // Not indexed, or the read is at an older seqno than the newest version's.
            Lookup::Newest(_) | Lookup::Unknown => {
                let e = self.list.seek(&Probe::new(user, snapshot))?;
                if e.user() != user {
                    return None;
                }
                e
            }
        };
        Some((e.seq(), e.value().clone()))
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

    /// The memory it holds, as its budget counts it: its entries (keys, values and their
    /// bookkeeping) and its key filter and point index, which take their share of the
    /// budget from the start (at most 1/16 and 1/64 of it: about 8 %).
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(Relaxed) + self.fixed_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.list.len() == 0
    }

    /// Entries in it (each version of a key counts).
    pub fn len(&self) -> usize {
        self.list.len()
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
    fn entries_in(&self, ns: crate::key::Nsid) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        let prefix = ns.to_be_bytes();
        self.list
            .walk(Some(&Probe::new(&prefix, SeqNo::MAX)))
            .take_while(move |e| e.user().get(..crate::key::NSID_LEN) == Some(&prefix[..]))
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
        let (through, map) = taken.maps.get(&ns)?;
        (snapshot <= *through).then(|| map.clone())
    }

    /// The newest seqno of each key of namespace `ns` here, by the key's [`key_hash`] (keys
    /// whose hashes collide keep the newer), if the namespace has no more entries here than
    /// the checks queries made on it for newer versions since its last map (else `None`):
    /// what queries that check many pks take once instead of probing the memtable for each.
    /// `checks`: those the caller made since it last asked. Many small queries pay for a
    /// map together, as one large query pays for its own; a walk that finds more entries
    /// than the checks is thrown away, and the next is tried at twice as many checks, so
    /// walks cost at most twice the checks. A small map of hashes stays in the cache where
    /// the memtable's filter, sized for a whole memtable, costs a cache miss per probe.
    /// `visible`: the database's visible seqno before this call; every version up to it is
    /// in the map, which later queries at snapshots up to it share.
    pub fn key_hashes(
        &self,
        ns: crate::key::Nsid,
        visible: SeqNo,
        checks: usize,
    ) -> Option<Arc<KeyHashes>> {
        let max = {
            let mut taken = self.key_hashes.lock();
            let credit = taken.credit.entry(ns).or_insert(0);
            *credit = credit.saturating_add(checks);
            let max = *credit;
            // Entries are never removed: a namespace found with more than `known` still has.
            if taken
                .more_than
                .get(&ns)
                .is_some_and(|&known| max <= known || max < known.saturating_mul(2))
            {
                return None;
            }
            max
        };
        let mut over = false;
        let walk = self
            .entries_in(ns)
            .enumerate()
            .map_while(|(walked, e)| match walked == max {
                true => {
                    over = true;
                    None
                }
                false => Some((e.user(), e.seq())),
            });
        // Versions past any snapshot too: a newer seqno than a reader sees only sends that
        // reader to the exact search.
        let map = KeyHashes::build(walk, crate::key::NSID_LEN);
        let mut taken = self.key_hashes.lock();
        if over {
            let known = taken.more_than.entry(ns).or_insert(max);
            *known = (*known).max(max);
            return None;
        }
        // The checks so far are paid for.
        taken.credit.remove(&ns);
        let map = Arc::new(map);
        if taken
            .maps
            .get(&ns)
            .is_none_or(|(through, _)| *through < visible)
        {
            taken.maps.insert(ns, (visible, map.clone()));
        }
        Some(map)
    }

    /// All entries in order (newest version of a key first).
    pub fn iter(&self) -> impl Iterator<Item = MemEntry<'_>> + '_ {
        self.list.walk(None).map(|e| MemEntry {
            user: e.user(),
            seq: e.seq(),
            value: e.value(),
        })
    }
}

/// What [`Memtable::key_hashes`] learned per namespace.
#[derive(Default)]
struct TakenMaps {
    /// The last map queries took, and the visible seqno up to which it holds every version.
    maps: HashMap<crate::key::Nsid, (SeqNo, Arc<KeyHashes>)>,
    /// The most entries a walk found the namespace to have more than: no walk is tried
    /// again before twice as many checks (each walk was thrown away).
    more_than: HashMap<crate::key::Nsid, usize>,
    /// Checks for newer versions that queries made on the namespace since its last map.
    credit: HashMap<crate::key::Nsid, usize>,
}

/// An entry of a memtable, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct MemEntry<'a> {
    /// `nsid ++ user key`.
    pub user: &'a [u8],
    pub seq: SeqNo,
    pub value: &'a MemValue,
}

/// An ordered walk over a memtable from a start key that owns what it needs (the memtable,
/// and a place in its list), so it can sit in a scan next to table iterators. Entries
/// inserted while it walks may or may not be seen; readers filter them by snapshot.
pub struct MemIter {
    /// The current entry. Declared before `mem`, whose list it borrows: dropped before it.
    at: Option<NodeRef<'static>>,
    mem: Arc<Memtable>,
}

impl MemIter {
    /// Bytes it holds beyond itself: none (the keys and values are the memtable's).
    pub fn buffer_bytes(&self) -> usize {
        0
    }

    /// Unpositioned (invalid) until `seek`.
    pub fn new(mem: Arc<Memtable>) -> MemIter {
        MemIter { at: None, mem }
    }

    /// Positions at the first entry at or after `(user, seq)` in memtable order: the
    /// newest version of `user` with seqno at most `seq`, or else the next user key.
    pub fn seek(&mut self, user: &[u8], seq: SeqNo) {
        let first = self.mem.list.walk(Some(&Probe::new(user, seq))).next();
        // SAFETY: `self.mem` lives as long as `self`, which holds the entry.
        self.set(first.map(|e| unsafe { e.detach() }));
    }

    fn set(&mut self, at: Option<NodeRef<'static>>) {
        if let Some(e) = at {
            e.prefetch_ahead();
        }
        self.at = at;
    }

    pub fn valid(&self) -> bool {
        self.at.is_some()
    }

    /// The current entry, `(nsid ++ user key, seqno, value)`; only while `valid()`.
    pub fn entry(&self) -> Option<(&[u8], SeqNo, &MemValue)> {
        self.at.map(|e| (e.user(), e.seq(), e.value()))
    }

    /// The current entry's internal key; empty when not valid.
    pub fn ikey(&self) -> &[u8] {
        self.at.map_or(&[], |e| e.ikey())
    }

    pub fn advance(&mut self) {
        let next = self.at.and_then(NodeRef::next);
        self.set(next);
    }
}

#[cfg(test)]
mod tests;
