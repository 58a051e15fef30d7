//! The usage a flush moves: live bytes per namespace added by the memtable's entries and
//! taken by the versions they replace, and the recount of a whole version.

use super::super_version::SuperVersion;
use super::usage_probe::{BatchProbe, ProbeCost, BATCH_KEYS};
use crate::error::{Error, Result};
use crate::key::{self, IndexValue, Kind, Nsid, SeqNo, NSID_LEN};
use crate::memtable::{MemValue, Memtable};
use crate::prefetch::ReadPool;
use crate::stats::Counters;
use crate::version::{Namespaces, Version, VersionEdit};
use crate::vlog::RECORD_HEADER_LEN;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Bytes (key without its namespace, value) of a version as a table stores it.
pub(super) fn table_size(pk_len: usize, iv: &IndexValue) -> u64 {
    match iv {
        // The record's length is its header, key and value.
        IndexValue::Addr { addr, .. } => {
            u64::from(addr.len).saturating_sub(RECORD_HEADER_LEN as u64)
        }
        IndexValue::Table(v) => (pk_len + v.len()) as u64,
        IndexValue::Tombstone => 0,
    }
}

/// Bytes of a memtable version of `user` (namespace included).
pub(super) fn mem_size(user: &[u8], v: &MemValue) -> u64 {
    match v.kind {
        Kind::Put => (user.len().saturating_sub(NSID_LEN) + v.value.len()) as u64,
        _ => 0,
    }
}

/// What a flush changes: live bytes per namespace or index id, garbage per namespace and
/// segment.
#[derive(Default)]
pub(super) struct FlushUsage {
    pub(super) delta: BTreeMap<Nsid, i64>,
    pub(super) garbage: BTreeMap<(Nsid, u64), u64>,
    /// What its lookups read.
    pub(super) cost: ProbeCost,
}

impl FlushUsage {
    pub(super) fn garbage(&mut self, ns: Nsid, addr: key::ValueAddr) {
        if !addr.is_none() {
            *self.garbage.entry((ns, addr.segment)).or_default() += u64::from(addr.len);
        }
    }

    /// Puts the changes into the edit that installs the flush's table.
    pub(super) fn into_edit(self, edit: &mut VersionEdit) {
        edit.usage_delta = self.delta.into_iter().filter(|(_, d)| *d != 0).collect();
        edit.ns_garbage = self
            .garbage
            .into_iter()
            .map(|((ns, seg), b)| (ns, seg, b))
            .collect();
    }

    /// Applies the changes to `namespaces` (recovery, before its new manifest).
    pub(super) fn apply_to(self, namespaces: &mut Namespaces) {
        let mut edit = VersionEdit::default();
        self.into_edit(&mut edit);
        namespaces.apply(&edit);
    }
}

/// A key of the flushed memtable whose older version the tables may hold.
struct Flushed<'a> {
    pub(super) user: &'a [u8],
    pub(super) seq: SeqNo,
    pub(super) new: u64,
}

/// The changes the flush of `mem` (frozen, its index tombstones in) makes on top of `version`;
/// namespaces in `dead` are skipped. One table lookup per key, made in batches whose reads
/// overlap (`usage_probe`) through `pool`.
pub(super) fn flush_usage(
    mem: &Memtable,
    version: &Version,
    destroyed: &HashSet<Nsid>,
    c: &Arc<Counters>,
    pool: &ReadPool,
) -> Result<FlushUsage> {
    let mut out = FlushUsage::default();
    let mut probe = BatchProbe::new(version, pool, c);
    let mut batch: Vec<Flushed> = Vec::with_capacity(BATCH_KEYS);
    let mut entries = mem.iter().peekable();
    while let Some(k) = entries.next() {
        let ns = key::ikey_nsid(k.user);
        let new = mem_size(k.user, k.value);
        // Older versions in the same memtable: superseded before they reach a table.
        while let Some(old) = entries.next_if(|n| n.user == k.user) {
            if old.value.kind == Kind::Put {
                out.garbage(ns, old.value.addr);
            }
        }
        if destroyed.contains(&ns) {
            continue;
        }
        batch.push(Flushed {
            user: k.user,
            seq: k.seq,
            new,
        });
        if batch.len() == BATCH_KEYS {
            out.supersede(&mut probe, &mut batch)?;
        }
    }
    out.supersede(&mut probe, &mut batch)?;
    out.cost = probe.cost;
    Ok(out)
}

impl FlushUsage {
    /// Counts the keys of `batch` (emptied) against the versions they supersede.
    fn supersede(&mut self, probe: &mut BatchProbe, batch: &mut Vec<Flushed<'_>>) -> Result<()> {
        let users: Vec<&[u8]> = batch.iter().map(|f| f.user).collect();
        // The newest version in the tables, whatever its seqno: an index backfill puts
        // entries at their record's (older) seqno, and may put one the tables hold already.
        let found = probe.lookup(&users)?;
        for (f, found) in batch.drain(..).zip(found) {
            let ns = key::ikey_nsid(f.user);
            let pk_len = f.user.len() - NSID_LEN;
            let old = match found {
                // As new as this flush's: the flush changes nothing of this key.
                Some((seq, ..)) if seq >= f.seq => continue,
                Some((_, Kind::Put, iv)) => {
                    if let IndexValue::Addr { addr, .. } = &iv {
                        self.garbage(ns, *addr);
                    }
                    table_size(pk_len, &iv)
                }
                _ => 0,
            };
            let d = self.delta.entry(ns).or_default();
            *d = d.saturating_add(f.new as i64 - old as i64);
        }
        Ok(())
    }
}

/// Live bytes of id `ns` (a namespace's records, or an index's entries) in `sv` at `seq`.
pub(super) fn count(sv: &SuperVersion, ns: Nsid, seq: SeqNo, c: &Arc<Counters>) -> Result<u64> {
    let config = crate::table::IterConfig {
        fill_cache: false,
        readahead: None,
    };
    let mut scan = sv.scan(ns, seq, c, &config)?;
    scan.seek(&[])?;
    let mut total = 0u64;
    while scan.valid() {
        if scan.kind() == Kind::Put {
            let iv = scan
                .index_value()
                .ok_or_else(|| Error::corruption("table", 0, "a recount met a malformed entry"))?;
            total = total.saturating_add(table_size(scan.key().len(), &iv));
        }
        scan.next()?;
    }
    Ok(total)
}

/// Live bytes of every id `namespaces` holds (namespaces and indexes) in `version` alone:
/// the recount of a manifest written before usage was tracked.
pub(super) fn recount_version(
    version: &Arc<Version>,
    namespaces: &Namespaces,
    c: &Arc<Counters>,
) -> Result<Vec<(Nsid, u64)>> {
    let sv = SuperVersion {
        mem: Arc::new(Memtable::new(4096)),
        imm: Vec::new(),
        version: version.clone(),
        used: Default::default(),
    };
    let ids = namespaces.live.keys().chain(namespaces.indexes.keys());
    ids.map(|&ns| Ok((ns, count(&sv, ns, SeqNo::MAX, c)?)))
        .collect()
}
