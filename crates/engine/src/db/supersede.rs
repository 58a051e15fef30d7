//! Tombstones for the index entries newer versions supersede, written by a flush
//! (docs/queries.md, Indexes; docs/format.md, Value-log garbage collection).
//!
//! Writes stay blind: a put adds the entries of its new value and reads nothing, so the
//! entries of the version it replaced stay behind. The flush that makes the write durable
//! finds that version (an older one in the same memtable, or the newest in the tables: one
//! lookup per key, each table's filter and index block read once per flush) and puts a
//! tombstone, at the new write's seqno, on each of its entries whose secondary key the new
//! version does not have. The tombstones go into the memtable being flushed, so they reach the
//! tables with it: a snapshot that sees the write no longer sees the old entries. Until then a
//! query checks the memtables for a newer version of the pk (`Records::superseded`).

use super::index_set::{IndexSet, LiveIndex};
use super::lookup::{search_tables, ProbeCache, StepClock};
use crate::error::Result;
use crate::index::{entry_key, extract, Scalar};
use crate::key::{self, Kind, SeqNo, ValueAt};
use crate::memtable::{MemValue, Memtable};
use crate::stats::Counters;
use crate::version::Version;
use crate::vlog::VlogReader;
use bytes::Bytes;
use std::sync::Arc;

/// The secondary keys of one version, per index of its namespace (`None`: a delete, or no
/// scalar at the attribute).
fn keys_of(indexes: &[Arc<LiveIndex>], kind: Kind, value: &[u8]) -> Vec<Option<Scalar>> {
    if kind != Kind::Put {
        return vec![None; indexes.len()];
    }
    let attrs: Vec<&crate::index::AttrPath> = indexes.iter().map(|i| &i.attr).collect();
    extract(value, &attrs)
}

/// A version's secondary keys, read off its value on first use.
struct Lazy {
    kind: Kind,
    value: Bytes,
    keys: Option<Vec<Option<Scalar>>>,
}

impl Lazy {
    fn new(kind: Kind, value: Bytes) -> Lazy {
        Lazy {
            kind,
            value,
            keys: None,
        }
    }

    fn get(&mut self, indexes: &[Arc<LiveIndex>]) -> &[Option<Scalar>] {
        self.keys
            .get_or_insert_with(|| keys_of(indexes, self.kind, &self.value))
    }
}

/// A tombstone for every index entry a newer version of its pk in `mem` (frozen, about to be
/// flushed) supersedes, as `(index id ++ entry key, seqno)`; older versions in the tables are
/// found in `version`, their values read through `vlog`. Table and value reads count in `c`.
/// [`insert_tombstones`] puts them into `mem`.
pub(super) fn supersede_index_entries(
    mem: &Memtable,
    version: &Version,
    indexes: &IndexSet,
    vlog: &VlogReader,
    c: &Counters,
) -> Result<Vec<(Bytes, SeqNo)>> {
    if indexes.is_empty() {
        return Ok(Vec::new());
    }
    let _pin = vlog.pin();
    // The cost-model step counters are for gets; these lookups are background work.
    let scratch = Counters::default();
    let mut clock = StepClock::new(&scratch);
    let mut probes = ProbeCache::default();
    let mut tombstones: Vec<(Bytes, SeqNo)> = Vec::new();
    // The next newer version of the current key: its seqno, and its secondary keys (read off
    // its value only when an older version is there to compare with: a key written for the
    // first time, as in a load, costs no second pass over its value).
    let mut newer: Option<(&[u8], SeqNo, Lazy)> = None;
    let mut supersede = |own: &[Arc<LiveIndex>],
                         pk: &[u8],
                         old: &[Option<Scalar>],
                         new: &[Option<Scalar>],
                         seq: SeqNo| {
        for ((idx, o), n) in own.iter().zip(old).zip(new) {
            if let Some(o) = o.as_ref().filter(|o| Some(*o) != n.as_ref()) {
                let mut user = idx.def.id.to_be_bytes().to_vec();
                user.extend_from_slice(&entry_key(o, pk));
                tombstones.push((Bytes::from(user), seq));
            }
        }
    };
    let mut entries = mem.iter().peekable();
    while let Some(k) = entries.next() {
        let ns = key::ikey_nsid(k.user);
        let own = indexes.of(ns);
        if own.is_empty() {
            continue;
        }
        let pk = &k.user[key::NSID_LEN..];
        let mut keys = Lazy::new(k.value.kind, k.value.value.clone());
        if let Some((user, seq, newer_keys)) = &mut newer {
            if *user == k.user {
                supersede(own, pk, keys.get(own), newer_keys.get(own), *seq);
            }
        }
        let oldest_here = entries.peek().is_none_or(|next| next.user != k.user);
        if oldest_here && k.seq > 0 {
            let found =
                search_tables(version, ns, pk, k.seq - 1, c, &mut clock, Some(&mut probes))?;
            if let Some((_, Kind::Put, iv)) = found {
                // A primary key's entry is never table-only (only index entries are).
                let old = match iv.value_at() {
                    Some(ValueAt::Here(v)) => v,
                    Some(ValueAt::Log(addr)) => vlog.read_value(addr, ns, pk, c)?,
                    None => Bytes::new(),
                };
                supersede(
                    own,
                    pk,
                    &keys_of(own, Kind::Put, &old),
                    keys.get(own),
                    k.seq,
                );
            }
        }
        newer = Some((k.user, k.seq, keys));
    }
    Ok(tombstones)
}

/// Inserts into `mem` the tombstones of [`supersede_index_entries`] whose index `keep` says.
pub(super) fn insert_tombstones(
    mem: &Memtable,
    tombstones: &[(Bytes, SeqNo)],
    keep: impl Fn(key::Nsid) -> bool,
) {
    for (user, seq) in tombstones {
        if keep(key::ikey_nsid(user)) {
            let value = MemValue {
                kind: Kind::Delete,
                value: Bytes::new(),
                addr: key::ValueAddr::NONE,
            };
            mem.insert(user, *seq, value);
        }
    }
}
