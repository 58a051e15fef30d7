//! Space accounting per namespace: live bytes, value-log garbage, capacities and the
//! device-wide reserve (docs/quotas.md).
//!
//! A namespace's live bytes are the key and value bytes of the newest version of each of its
//! keys (a tombstone counts 0), plus the same of its indexes' entries. Writes stay blind: the
//! flush that writes a memtable finds, for each key in it, the newest version in the tables
//! (the lookup `supersede` makes for indexed namespaces, made for every key) and puts the
//! difference in the edit that installs the table: the figure and the tables move together,
//! through a crash too (the log replay re-creates what was not flushed, and its flush counts
//! it). A version's size comes from its table entry (the value-log address holds the record's
//! length); no value is read.
//!
//! Garbage: value-log bytes of versions superseded (by a newer put or a delete) in segments GC
//! has not collected yet, counted when the flush that supersedes them runs.

use super::namespace_set::NsEntry;
use super::super_version::SuperVersion;
use super::usage_probe::{BatchProbe, ProbeCost, BATCH_KEYS};
use super::Inner;
use crate::error::{Error, Result};
use crate::key::{self, IndexValue, Kind, Nsid, SeqNo, ValueAt, NSID_LEN};
use crate::memtable::{MemValue, Memtable};
use crate::options::DEFAULT_RESERVE_MAX;
use crate::prefetch::ReadPool;
use crate::stats::Counters;
use crate::version::{Namespaces, Version, VersionEdit};
use crate::vlog::RECORD_HEADER_LEN;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A namespace's live bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Keys and values of its records.
    pub records: u64,
    /// Keys and payloads of its indexes' entries.
    pub index: u64,
}

impl Usage {
    /// Every live byte: what its capacity bounds.
    pub fn total(&self) -> u64 {
        self.records.saturating_add(self.index)
    }
}

/// A namespace's space and settings, part of its [`NamespaceStats`](crate::NamespaceStats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NamespaceSpace {
    /// Live bytes: keys and values of its records' newest versions and its index entries,
    /// as of the last flush.
    pub used_bytes: u64,
    /// The part of `used_bytes` its index entries take.
    pub index_bytes: u64,
    /// Bytes written since the last flush (counted as new until the flush compares them,
    /// less the versions a capacity check found they replace; at least 0).
    pub pending_bytes: u64,
    /// Value-log bytes of its superseded and deleted versions GC has not collected yet.
    pub garbage_bytes: u64,
    /// Value-log garbage (of every namespace) in the segments GC left in place because a
    /// live snapshot or iterator of this namespace reads a record in them: what its pins
    /// hold back now. Known once GC has looked at a segment (0 before); back to 0 when the
    /// pins go (released, or past `Options::snapshot_max_age`).
    pub pinned_bytes: u64,
    /// Its capacity (`None`: bounded by the device only).
    pub capacity: Option<u64>,
    /// Its I/O shares.
    pub shares: crate::IoShares,
    /// It refuses writes (`Namespace::set_read_only`).
    pub read_only: bool,
}

/// Bytes (key without its namespace, value) of a version as a table stores it.
fn table_size(pk_len: usize, iv: &IndexValue) -> u64 {
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
fn mem_size(user: &[u8], v: &MemValue) -> u64 {
    match v.kind {
        Kind::Put => (user.len().saturating_sub(NSID_LEN) + v.value.len()) as u64,
        _ => 0,
    }
}

/// What a flush changes: live bytes per namespace or index id, garbage per namespace and
/// segment.
#[derive(Default)]
pub(super) struct FlushUsage {
    delta: BTreeMap<Nsid, i64>,
    garbage: BTreeMap<(Nsid, u64), u64>,
    /// What its lookups read.
    pub(super) cost: ProbeCost,
}

impl FlushUsage {
    fn garbage(&mut self, ns: Nsid, addr: key::ValueAddr) {
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
struct Flushed {
    user: bytes::Bytes,
    seq: SeqNo,
    new: u64,
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
    while let Some((k, v)) = entries.next() {
        let ns = key::ikey_nsid(&k.user);
        let new = mem_size(&k.user, &v);
        // Older versions in the same memtable: superseded before they reach a table.
        while let Some((_, ov)) = entries.next_if(|(n, _)| n.user == k.user) {
            if ov.kind == Kind::Put {
                out.garbage(ns, ov.addr);
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
    fn supersede(&mut self, probe: &mut BatchProbe, batch: &mut Vec<Flushed>) -> Result<()> {
        let users: Vec<&[u8]> = batch.iter().map(|f| &f.user[..]).collect();
        // The newest version in the tables, whatever its seqno: an index backfill puts
        // entries at their record's (older) seqno, and may put one the tables hold already.
        let found = probe.lookup(&users)?;
        for (f, found) in batch.drain(..).zip(found) {
            let ns = key::ikey_nsid(&f.user);
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
fn count(sv: &SuperVersion, ns: Nsid, seq: SeqNo, c: &Arc<Counters>) -> Result<u64> {
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

/// Least time between two flushes a capacity check makes (device-wide): a namespace at its
/// capacity cannot make the memtable every tenant shares flush more often than this.
pub(super) const CAPACITY_FLUSH_EVERY: Duration = Duration::from_secs(1);

/// When a capacity check last flushed.
#[derive(Default)]
pub(super) struct CapacityFlushes {
    /// Time after the database opened of the last one (`None`: never).
    last: parking_lot::Mutex<Option<Duration>>,
    /// Flushes installed: moved before the super version without the flushed memtable is
    /// swapped in, so a credit checked against an older one knows its memtables are gone.
    pub(super) epoch: AtomicU64,
}

/// A capacity check's credit: bytes of the versions a write replaces, and the seqno and
/// flush epoch its lookups read at.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Credit {
    pub(super) bytes: u64,
    pub(super) at: Option<(SeqNo, u64)>,
}

/// Whether the credit of `g` still holds when it is appended (under the writer lock, `sv`
/// loaded before `epoch` was read): no flush since its lookups, and no version of its keys
/// newer than they read in the memtables (another writer, or an earlier write of the same
/// commit group, replaced the version it was credited with: only one write may be).
pub(super) fn credit_holds(sv: &SuperVersion, g: &crate::vlog::EncodedWrite, epoch: u64) -> bool {
    let Some((seq, at_epoch)) = g.credit_at else {
        return true;
    };
    if at_epoch != epoch {
        return false;
    }
    let mut user = Vec::new();
    g.spans.iter().all(|s| {
        user.clear();
        user.extend_from_slice(&g.nsid.to_be_bytes());
        user.extend_from_slice(&g.buf[s.key.clone()]);
        std::iter::once(&sv.mem)
            .chain(sv.imm.iter().map(|f| &f.mem))
            .all(|m| m.get(&user, SeqNo::MAX).is_none_or(|(s, _)| s <= seq))
    })
}

impl CapacityFlushes {
    /// Whether a check may flush at `now` (and, if so, it is counted as done then).
    fn allow(&self, now: Duration) -> bool {
        let mut last = self.last.lock();
        if last.is_some_and(|t| now.saturating_sub(t) < CAPACITY_FLUSH_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

/// The storage's free space, asked at most every [`SpaceGauge::EVERY`]; read by every write
/// without a lock.
#[derive(Default)]
pub(super) struct SpaceGauge {
    /// Microseconds after the database opened when it was asked last, plus 1 (0: never).
    asked_at: AtomicU64,
    /// The storage said how large it is (else no reserve applies).
    known: AtomicBool,
    total: AtomicU64,
    free: AtomicU64,
}

impl SpaceGauge {
    /// A statvfs per write would cost more than the write; space moves slowly.
    const EVERY: Duration = Duration::from_millis(50);

    /// `(total, free)` as last asked; asks `storage` again (one caller at a time) when the
    /// answer is older than [`EVERY`](Self::EVERY).
    fn read(&self, storage: &dyn crate::storage::Storage, now: Duration) -> Option<(u64, u64)> {
        let now = now.as_micros() as u64 + 1;
        let at = self.asked_at.load(Ordering::Acquire);
        let due = at == 0 || now.saturating_sub(at) >= Self::EVERY.as_micros() as u64;
        if due
            && self
                .asked_at
                .compare_exchange(at, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // A storage that cannot say has no reserve; a failed ask refuses nothing.
            match storage.space().ok().flatten() {
                Some((total, free)) => {
                    self.total.store(total, Ordering::Relaxed);
                    self.free.store(free, Ordering::Relaxed);
                    self.known.store(true, Ordering::Release);
                }
                None => self.known.store(false, Ordering::Release),
            }
        }
        self.known.load(Ordering::Acquire).then(|| {
            (
                self.total.load(Ordering::Relaxed),
                self.free.load(Ordering::Relaxed),
            )
        })
    }
}

impl Inner {
    /// Refuses a write of `ops` into `e` that puts bytes (deletes are never refused): past
    /// the namespace's capacity, or with the storage's free space below the reserve.
    /// Returns the bytes of the versions the write replaces, where it counted them (its
    /// credit, taken off what the memtable counts for the namespace).
    ///
    /// Bytes not flushed yet count as new (an upper bound) unless a check credited them.
    /// In the upper half of its capacity, a namespace's writes (puts and deletes) look up
    /// the versions they replace (one lookup per key, the namespace's own cost) and are
    /// credited with them: so overwrites and deletes there give room back at once, without
    /// a flush. A put that does not fit even so, with bytes pending, flushes to learn the
    /// exact figure; those flushes write the memtable every tenant shares, so the device
    /// allows one per [`CAPACITY_FLUSH_EVERY`], and a namespace refused meanwhile is told
    /// its pending bytes.
    pub(super) fn check_room(&self, e: &NsEntry, ops: &[(Kind, &[u8], &[u8])]) -> Result<Credit> {
        let bytes: u64 = ops
            .iter()
            .filter(|(kind, ..)| *kind == Kind::Put)
            .map(|(_, k, v)| (k.len() + v.len()) as u64)
            .sum();
        if bytes > 0 {
            self.check_reserve()?;
        }
        let Some(capacity) = e.options.read().capacity else {
            return Ok(Credit::default());
        };
        // With the entries its indexes derive (counted from the values at hand: no read).
        let bytes = bytes.saturating_add(self.derived_bytes(e, ops));
        let mut flushed = false;
        loop {
            let (used, pending) = self.room_figures(e.id);
            let need = used.saturating_add_signed(pending).saturating_add(bytes);
            if need <= capacity / 2 {
                return Ok(Credit::default());
            }
            let replaced = self.replaced_bytes(e, ops)?;
            if bytes == 0 || need.saturating_sub(replaced.bytes) <= capacity {
                return Ok(replaced);
            }
            if pending > 0 && !flushed && self.capacity_flush.allow(self.opened.elapsed()) {
                self.flush()?;
                flushed = true;
                continue;
            }
            // Credits beyond the puts pending are space given back: shown as used less.
            let (used, pending) = (
                used.saturating_add_signed(pending.min(0)),
                pending.max(0).unsigned_abs(),
            );
            return Err(self.over(e.id, used, pending, bytes, capacity));
        }
    }

    /// The most bytes the index entries of the puts of `ops` into `e` take (0 without
    /// indexes): each put's value is parsed for its indexed attributes, as its write will.
    fn derived_bytes(&self, e: &NsEntry, ops: &[(Kind, &[u8], &[u8])]) -> u64 {
        let set = self.index_set();
        let own = set.of(e.id);
        if own.is_empty() {
            return 0;
        }
        // Bounds of the payloads' fields: a seqno well past the visible one, an offset
        // past any segment's end.
        let seq = self.writes.visible_seq.load(Ordering::Relaxed) + (1 << 32);
        let offset = self.opts.vlog_segment_bytes.saturating_mul(2) + (1 << 32);
        ops.iter()
            .filter(|(kind, ..)| *kind == Kind::Put)
            .map(|(_, k, v)| super::indexes::derived_bound(own, k, v, seq, offset))
            .sum()
    }

    /// Bytes of the current versions of the keys `ops` writes (each key once), all read in
    /// one super version at one seqno.
    fn replaced_bytes(&self, e: &NsEntry, ops: &[(Kind, &[u8], &[u8])]) -> Result<Credit> {
        let keys: HashSet<&[u8]> = ops.iter().map(|(_, k, _)| *k).collect();
        // The epoch, then the super version, then the seqno (as a get: see `lookup`).
        let epoch = self.capacity_flush.epoch.load(Ordering::Acquire);
        let sv = self.versions.super_version_brief();
        let seq = self.read_seq(None);
        let mut total = 0u64;
        for k in keys {
            let hit = super::read::lookup_in(&sv, e.id, k, seq, &e.list_counters, None)?;
            let Some(hit) = hit else {
                continue;
            };
            if hit.kind != Kind::Put {
                continue;
            }
            total += match hit.value_at() {
                Some(ValueAt::Here(v)) => (k.len() + v.len()) as u64,
                Some(ValueAt::Log(a)) => u64::from(a.len).saturating_sub(RECORD_HEADER_LEN as u64),
                None => 0,
            };
        }
        Ok(Credit {
            bytes: total,
            at: Some((seq, epoch)),
        })
    }

    pub(super) fn over(
        &self,
        ns: Nsid,
        used: u64,
        pending: u64,
        write: u64,
        capacity: u64,
    ) -> Error {
        Error::CapacityExceeded {
            ns,
            used,
            pending,
            write,
            capacity,
        }
    }

    /// Bytes put into `ns` and not flushed yet, less the versions checks found they replace
    /// (below zero when deletes gave back more than puts took).
    pub(super) fn pending_bytes(&self, ns: Nsid) -> i64 {
        self.room_figures(ns).1
    }

    /// `ns`'s live bytes as of the last flush and its pending bytes, from one super version:
    /// a flush moves bytes from the one to the other in a single swap.
    pub(super) fn room_figures(&self, ns: Nsid) -> (u64, i64) {
        let sv = self.versions.super_version_brief();
        let imm: i64 = sv.imm.iter().map(|f| f.mem.charged(ns)).sum();
        let used = sv.used.get(&ns).copied().unwrap_or(0);
        (used, sv.mem.charged(ns).saturating_add(imm))
    }

    /// The reserve this database keeps on a storage of `total` bytes.
    fn reserve(&self, total: u64) -> u64 {
        self.opts
            .reserve_bytes
            .unwrap_or_else(|| (total / 100).min(DEFAULT_RESERVE_MAX))
    }

    pub(super) fn check_reserve(&self) -> Result<()> {
        if self.opts.reserve_bytes == Some(0) {
            return Ok(());
        }
        let space = self
            .space
            .read(self.storage.as_ref(), self.opened.elapsed());
        match space {
            Some((total, free)) if free < self.reserve(total) => Err(Error::ReserveReached {
                free,
                reserve: self.reserve(total),
            }),
            _ => Ok(()),
        }
    }

    /// Live bytes of namespace `e` as of the last flush, its garbage, and the garbage its
    /// snapshots hold back (see [`NamespaceSpace::pinned_bytes`]).
    pub(super) fn usage_of(&self, e: &NsEntry) -> (Usage, u64, u64) {
        self.reap_snapshots();
        let held = self.gc.deferred.lock().waiting_for(e.id);
        let vs = self.versions.lock();
        let (records, index) = vs.namespaces.usage_of(e.id);
        let pinned = (vs.namespaces.garbage.values())
            .flat_map(|segs| held.iter().filter_map(|s| segs.get(s)))
            .sum();
        let garbage = vs.namespaces.garbage_of(e.id);
        (Usage { records, index }, garbage, pinned)
    }

    pub(super) fn namespace_space(&self, e: &NsEntry) -> Result<NamespaceSpace> {
        e.check_live()?;
        let (usage, garbage, pinned) = self.usage_of(e);
        let options = *e.options.read();
        Ok(NamespaceSpace {
            used_bytes: usage.total(),
            index_bytes: usage.index,
            pending_bytes: self.pending_bytes(e.id).max(0).unsigned_abs(),
            garbage_bytes: garbage,
            pinned_bytes: pinned,
            capacity: options.capacity,
            shares: options.shares,
            read_only: e.read_only.load(std::sync::atomic::Ordering::Acquire),
        })
    }

    /// Flushes, then counts `e`'s live bytes by scanning its records and index entries in
    /// the tables; returns the usage kept for those tables and the count (taken together,
    /// so that background writes meanwhile, a GC's rewrites, do not come between them).
    pub(super) fn recount_usage(&self, e: &NsEntry) -> Result<(Usage, Usage)> {
        e.check_live()?;
        self.flush()?;
        let (version, kept, ids) = {
            let vs = self.versions.lock();
            let (records, index) = vs.namespaces.usage_of(e.id);
            let ids: Vec<Nsid> = vs.namespaces.indexes_of(e.id).map(|d| d.id).collect();
            (vs.current(), Usage { records, index }, ids)
        };
        let sv = SuperVersion {
            mem: Arc::new(Memtable::new(4096)),
            imm: Vec::new(),
            version,
            used: Default::default(),
        };
        let c = &e.list_counters;
        let mut counted = Usage {
            records: count(&sv, e.id, SeqNo::MAX, c)?,
            index: 0,
        };
        for id in ids {
            counted.index += count(&sv, id, SeqNo::MAX, c)?;
        }
        Ok((kept, counted))
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
