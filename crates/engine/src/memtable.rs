//! The memtable: a concurrent skiplist of the newest writes, shared by all namespaces.
//! It keeps the value bytes too, so a get that hits it needs no value-log read.

use crate::key::{Kind, SeqNo, ValueAddr};
use bytes::Bytes;
use crossbeam_skiplist::SkipMap;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

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
    map: SkipMap<MemKey, MemValue>,
    bytes: AtomicUsize,
    max_seq: AtomicU64,
}

impl Default for Memtable {
    fn default() -> Self {
        Self::new()
    }
}

impl Memtable {
    pub fn new() -> Self {
        Memtable {
            map: SkipMap::new(),
            bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
        }
    }

    pub fn insert(&self, user: Bytes, seq: SeqNo, value: MemValue) {
        self.bytes
            .fetch_add(user.len() + value.value.len() + ENTRY_OVERHEAD, Relaxed);
        self.max_seq.fetch_max(seq, Relaxed);
        self.map.insert(MemKey { user, seq }, value);
    }

    /// The newest version of `user` with seqno at most `snapshot`.
    pub fn get(&self, user: &[u8], snapshot: SeqNo) -> Option<(SeqNo, MemValue)> {
        let probe = MemKey {
            user: Bytes::copy_from_slice(user),
            seq: snapshot,
        };
        let e = self.map.lower_bound(Bound::Included(&probe))?;
        (e.key().user == user).then(|| (e.key().seq, e.value().clone()))
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

    /// All entries in order (newest version of a key first).
    pub fn iter(&self) -> impl Iterator<Item = (MemKey, MemValue)> + '_ {
        self.map
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(v: &'static [u8]) -> MemValue {
        MemValue {
            kind: Kind::Put,
            value: Bytes::from_static(v),
            addr: ValueAddr {
                segment: 0,
                offset: 0,
                len: 0,
            },
        }
    }

    #[test]
    fn newest_visible_version_wins() {
        let m = Memtable::new();
        m.insert(Bytes::from_static(b"a"), 1, val(b"1"));
        m.insert(Bytes::from_static(b"a"), 3, val(b"3"));
        m.insert(Bytes::from_static(b"ab"), 2, val(b"x"));
        assert_eq!(m.get(b"a", 10).unwrap().0, 3);
        assert_eq!(m.get(b"a", 2).unwrap().0, 1);
        assert!(m.get(b"a", 0).is_none());
        assert!(m.get(b"b", 10).is_none());
        let order: Vec<_> = m.iter().map(|(k, _)| (k.user, k.seq)).collect();
        assert_eq!(order[0].1, 3);
        assert_eq!(order[2].0, Bytes::from_static(b"ab"));
    }
}
