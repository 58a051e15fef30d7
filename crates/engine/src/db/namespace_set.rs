//! The namespaces as the hot paths see them: an entry per live namespace (what handles
//! hold) and the ids of destroyed ones, mirrored from the manifest.

use crate::error::{Error, Result};
use crate::key::Nsid;
use crate::namespace_options::NamespaceOptions;
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
    pub(super) fn new(id: Nsid, name: &str, page_size: u64) -> NsEntry {
        NsEntry {
            id,
            name: name.to_string(),
            live: AtomicBool::new(true),
            counters: Arc::new(Counters::new(page_size)),
            list_counters: Arc::new(Counters::new(page_size)),
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
    /// decides is made under the commit queue's lock (`Inner::commit`).
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
