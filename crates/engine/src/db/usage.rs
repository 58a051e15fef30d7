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

use super::flush::Flusher;
use super::flush_usage::count;
use super::gc_state::GcState;
use super::index_set::IndexSet;
use super::namespace_set::NsEntry;
use super::quota_state::{CapacityFlushes, Credit, SpaceGauge};
use super::super_version::SuperVersion;
use super::versions::Versions;
use super::write_queue::WriteQueue;
use crate::error::{Error, Result};
use crate::key::{Kind, Nsid, SeqNo, ValueAt};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::space::{NamespaceSpace, Usage};
use crate::storage::StorageRef;
use crate::uptime::Uptime;
use crate::vlog::RECORD_HEADER_LEN;
use parking_lot::RwLock;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The parts capacity checks and usage figures touch, borrowed; the flusher for the checks
/// that flush to learn exact figures.
pub(super) struct Quotas<'a, F> {
    pub(super) opts: &'a Options,
    pub(super) storage: &'a StorageRef,
    pub(super) versions: &'a Versions,
    pub(super) writes: &'a WriteQueue,
    pub(super) indexes: &'a RwLock<Arc<IndexSet>>,
    pub(super) gc: &'a GcState,
    /// The storage's free space as last asked (the device-wide reserve).
    pub(super) space: &'a SpaceGauge,
    /// Flushes capacity checks made, kept apart.
    pub(super) capacity_flush: &'a CapacityFlushes,
    /// When the database opened (the clock of the checks' flushes).
    pub(super) opened: &'a Instant,
    /// The coarse clock of the gauge: read by every write, where a precise clock read cost
    /// 1 % of a put.
    pub(super) uptime: &'a Uptime,
    pub(super) flusher: Flusher<'a, F>,
}

impl<F: Fn()> Quotas<'_, F> {
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
                self.flusher.flush()?;
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
        let set = self.indexes.read().clone();
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
            .map(|(_, k, v)| super::index_set::derived_bound(own, k, v, seq, offset))
            .sum()
    }

    /// Bytes of the current versions of the keys `ops` writes (each key once), all read in
    /// one super version at one seqno.
    fn replaced_bytes(&self, e: &NsEntry, ops: &[(Kind, &[u8], &[u8])]) -> Result<Credit> {
        let keys: HashSet<&[u8]> = ops.iter().map(|(_, k, _)| *k).collect();
        // The epoch, then the super version, then the seqno (as a get: see `lookup`).
        let epoch = self.capacity_flush.epoch.load(Ordering::Acquire);
        let sv = self.versions.super_version_brief();
        let seq = self.writes.read_seq(None);
        let mut total = 0u64;
        for k in keys {
            let hit = super::lookup::lookup_in(&sv, e.id, k, seq, &e.list_counters, None, false)?;
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

    pub(super) fn check_reserve(&self) -> Result<()> {
        if self.opts.reserve_bytes == Some(0) {
            return Ok(());
        }
        let now = self.uptime.ms();
        let space = self
            .space
            .read(self.storage.as_ref(), Duration::from_millis(now));
        let Some((total, free)) = space else {
            return Ok(());
        };
        let reserve = self.opts.reserve_on(total);
        if free >= reserve {
            return Ok(());
        }
        (self.flusher.bg).space_refused(now, self.opts.background_runner.as_ref());
        Err(Error::ReserveReached { free, reserve })
    }

    /// Live bytes of namespace `e` as of the last flush, its garbage, and the garbage its
    /// snapshots hold back (see [`NamespaceSpace::pinned_bytes`]).
    pub(super) fn usage_of(&self, e: &NsEntry) -> (Usage, u64, u64) {
        self.flusher.pins.reap();
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
        self.flusher.flush()?;
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
