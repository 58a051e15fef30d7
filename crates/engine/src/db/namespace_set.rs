//! The namespaces as the hot paths see them: an entry per live namespace (what handles
//! hold) and the ids of destroyed ones, mirrored from the manifest.

use crate::compaction::IdleNs;
use crate::error::{Error, Result};
use crate::key::{Nsid, SeqNo};
use crate::namespace_options::NamespaceOptions;
use crate::options::Options;
use crate::stats::{Counters, NamespaceInfo};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A namespace as reads and writes see it; handles hold it, so their operations need no
/// lookup by id.
pub(super) struct NsEntry {
    pub(super) id: Nsid,
    pub(super) name: String,
    /// Cleared when the namespace is destroyed: handles then get `UnknownNamespace`.
    pub(super) live: AtomicBool,
    /// Its writes and point lookups.
    pub(super) counters: Arc<Counters>,
    /// Its key listings, apart so per-get figures come from gets alone.
    pub(super) list_counters: Arc<Counters>,
    /// Milliseconds from the database's opening to its last write (coarse: the commit
    /// group's time), for its idleness.
    pub(super) last_write_ms: AtomicU64,
    /// A seqno at or above its last write's.
    pub(super) last_write_seq: AtomicU64,
    /// Its settings, as the manifest keeps them.
    pub(super) options: parking_lot::RwLock<NamespaceOptions>,
    /// Writes are refused (`Namespace::set_read_only`); set and cleared under the manifest's
    /// lock and the commit queue's (`read_only.rs`), checked by writes under the queue's.
    pub(super) read_only: AtomicBool,
}

impl NsEntry {
    /// A namespace's entry, its counters counting as `db`'s do.
    pub(super) fn new(id: Nsid, name: &str, db: &Counters) -> NsEntry {
        NsEntry {
            id,
            name: name.to_string(),
            live: AtomicBool::new(true),
            counters: Arc::new(db.like()),
            list_counters: Arc::new(db.like()),
            last_write_ms: AtomicU64::new(0),
            last_write_seq: AtomicU64::new(0),
            options: Default::default(),
            read_only: AtomicBool::new(false),
        }
    }

    /// Whether the namespace refuses writes.
    pub(super) fn is_read_only(&self) -> bool {
        self.read_only.load(Ordering::Acquire)
    }

    /// `UnknownNamespace` once the namespace is destroyed.
    pub(super) fn check_live(&self) -> Result<()> {
        if self.live.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(Error::UnknownNamespace(self.id))
        }
    }

    /// `NamespaceReadOnly` while the namespace refuses writes. A quick check: the one that
    /// decides is made under the commit queue's lock (`WritePath::commit`).
    pub(super) fn check_writable(&self) -> Result<()> {
        match self.read_only.load(Ordering::Acquire) {
            false => Ok(()),
            true => Err(Error::NamespaceReadOnly(self.id)),
        }
    }
}

/// The namespaces, mirrored from the manifest for the hot paths.
pub(super) struct NsState {
    pub(super) live: HashMap<Nsid, Arc<NsEntry>>,
    /// Destroyed ids: their entries are dropped by flushes and compactions.
    pub(super) destroyed: Arc<HashSet<Nsid>>,
    /// The counts of destroyed namespaces, summed into one for the database totals (their
    /// counters, a few KiB each, go with them).
    pub(super) destroyed_counters: crate::stats::DbStats,
}

impl NsState {
    /// Whether a client wrote after seqno `seq` (GC's rewrites do not count).
    pub(super) fn written_since(&self, seq: SeqNo) -> bool {
        let mut live = self.live.values();
        live.any(|e| e.last_write_seq.load(Ordering::Relaxed) > seq)
    }

    /// Namespaces without a write for `idle_settle_ms` at `now` (milliseconds since the
    /// opening), with the time of their last write, by id; none when consolidation is off.
    /// With `drain` (`wait_for_compactions`: a caller asks for the trees at their settled
    /// shape now) every namespace counts as idle.
    pub(super) fn idle(&self, opts: &Options, now: u64, drain: bool) -> Vec<IdleNs> {
        let ms = opts.idle_settle_ms;
        if opts.consolidation_bound() == 0 || !opts.auto_compaction {
            return Vec::new();
        }
        let mut idle: Vec<IdleNs> = self
            .live
            .values()
            .map(|e| IdleNs {
                ns: e.id,
                period: e.last_write_ms.load(Ordering::Relaxed),
                // No write since the opening: any L0 table may hold its entries. Draining,
                // neither may any: value-log GC's rewrites of its records (newer than its
                // last write) must reach its tree before the consolidation.
                last_seq: match e.last_write_seq.load(Ordering::Relaxed) {
                    _ if drain => SeqNo::MAX,
                    0 => SeqNo::MAX,
                    seq => seq,
                },
            })
            .filter(|i| drain || now.saturating_sub(i.period) >= ms)
            .collect();
        idle.sort_unstable();
        idle
    }

    /// The live namespace `ns`, or `UnknownNamespace`.
    pub(super) fn entry(&self, ns: Nsid) -> Result<Arc<NsEntry>> {
        match self.live.get(&ns) {
            Some(e) => Ok(e.clone()),
            None => Err(Error::UnknownNamespace(ns)),
        }
    }

    /// The id of the live namespace called `name`: no copy of the catalog, no sort.
    pub(super) fn id_of(&self, name: &str) -> Option<Nsid> {
        self.live
            .iter()
            .find(|(_, e)| e.name == name)
            .map(|(id, _)| *id)
    }

    /// Live namespaces, by id.
    pub(super) fn list(&self) -> Vec<NamespaceInfo> {
        let mut v: Vec<_> = self
            .live
            .iter()
            .map(|(id, e)| NamespaceInfo {
                nsid: *id,
                name: e.name.clone(),
            })
            .collect();
        v.sort_by_key(|i| i.nsid);
        v
    }
}
