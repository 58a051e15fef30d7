//! Secondary indexes of namespaces: creation with backfill, drop, and the entries every write
//! of an indexed namespace derives (docs/queries.md, Indexes).
//!
//! Writes stay blind: a put adds an entry for the new value's secondary key and reads nothing,
//! so the entry of the value it replaced stays behind. A query drops such stale entries when it
//! checks the record it reaches (`classic`: the current value's attribute).

use super::index_flushes::IndexFlushes;
use super::index_set::{IndexInfo, IndexSet};
use super::namespace_set::NsEntry;
use super::versions::Versions;
use super::write_queue::WriteQueue;
use crate::error::{Error, Result};
use crate::index::{AttrPath, IndexDef, IndexKind, KEY_FORMAT};
use crate::key::Nsid;
use crate::options::Options;
use crate::version::{VersionEdit, VersionSet};
use parking_lot::RwLock;
use std::sync::Arc;

/// The parts the registry of indexes touches, borrowed: the manifest that keeps it, the
/// live set writes derive entries for, and the writer lock every change of that set is
/// made under. Dropping an index's trees and backfilling a new one are the caller's.
pub(super) struct IndexAdmin<'a> {
    pub(super) opts: &'a Options,
    pub(super) writes: &'a WriteQueue,
    pub(super) versions: &'a Versions,
    /// Live secondary indexes, by the namespace they index (`Inner::indexes`).
    pub(super) set: &'a RwLock<Arc<IndexSet>>,
    pub(super) index_flush: &'a IndexFlushes,
}

impl IndexAdmin<'_> {
    /// Rebuilds the index set from the registry; the caller holds the writer lock, so that
    /// every write after it derives entries for exactly the new set.
    pub(super) fn reload(&self, vs: &VersionSet) {
        self.reload_but(vs, None);
    }

    /// [`reload`](Self::reload), once the drop of index `ended` (if any) ended: left out
    /// are the indexes whose drop has begun, but that one.
    fn reload_but(&self, vs: &VersionSet, ended: Option<Nsid>) {
        let ready = self.index_flush.ready_unlogged();
        let dropping = self.set.read().dropping_but(ended);
        let set = IndexSet::from_defs(vs.namespaces.indexes.values(), &ready, dropping);
        *self.set.write() = Arc::new(set);
    }

    /// Registers an index of `e` on `attr` and has writes derive its entries; its id, whose
    /// backfill (the records written before) the caller then runs.
    pub(super) fn register(&self, e: &NsEntry, attr: &str, kind: IndexKind) -> Result<Nsid> {
        e.check_live()?;
        let path = AttrPath::parse(attr).map_err(Error::InvalidArgument)?;
        let _w = self.writes.writer.lock();
        let mut vs = self.versions.lock();
        // Again under the writer lock: a destroy clears the flag, then waits for this lock
        // before it reads the namespace's indexes to drop them with it; one registered
        // after that read would outlive the namespace.
        e.check_live()?;
        // Under the manifest's lock, where `set_read_only` sets it.
        e.check_writable()?;
        if let Some(d) = vs.namespaces.indexes_of(e.id).find(|d| d.attr == attr) {
            return Err(Error::IndexExists {
                attr: attr.to_string(),
                kind: d.kind,
            });
        }
        let limit = self.opts.max_indexes_per_namespace;
        if vs.namespaces.indexes_of(e.id).count() >= limit {
            return Err(Error::TooManyIndexes { ns: e.id, limit });
        }
        let id = vs.namespaces.next;
        if id == Nsid::MAX {
            return Err(Error::InvalidArgument("namespace ids exhausted".into()));
        }
        let def = IndexDef {
            id,
            ns: e.id,
            attr: path.as_str().to_string(),
            kind,
            ready: None,
            keys: KEY_FORMAT,
        };
        self.versions.log_edit(
            &mut vs,
            VersionEdit {
                created_index: vec![def],
                next_nsid: Some(id + 1),
                ..VersionEdit::default()
            },
        )?;
        // Every write from here on derives entries; the backfill covers those before.
        self.reload(&vs);
        Ok(id)
    }

    /// The indexes whose entries have an older key format (numbers as `f64` alone, which
    /// gave integers past 2^53 one key).
    pub(super) fn outdated(&self) -> Vec<IndexDef> {
        let vs = self.versions.lock();
        let defs = &vs.namespaces.indexes;
        defs.values()
            .filter(|d| d.keys != KEY_FORMAT)
            .cloned()
            .collect()
    }

    /// Registers outdated index `d` again under a new id, unless a rebuild of it is
    /// registered already (a crash came before its old trees were dropped); its backfill
    /// then runs as a crashed one's, and the caller drops the old trees.
    pub(super) fn reregister(&self, d: &IndexDef) -> Result<()> {
        let _w = self.writes.writer.lock();
        let mut vs = self.versions.lock();
        let rebuilt = vs
            .namespaces
            .indexes_of(d.ns)
            .any(|n| n.attr == d.attr && n.keys == KEY_FORMAT);
        if !rebuilt {
            let id = vs.namespaces.next;
            if id == Nsid::MAX {
                return Err(Error::InvalidArgument("namespace ids exhausted".into()));
            }
            let def = IndexDef {
                id,
                ready: None,
                keys: KEY_FORMAT,
                ..d.clone()
            };
            let edit = VersionEdit {
                created_index: vec![def],
                next_nsid: Some(id + 1),
                ..VersionEdit::default()
            };
            self.versions.log_edit(&mut vs, edit)?;
            self.reload(&vs);
        }
        Ok(())
    }

    /// Takes the index of `e` on `attr` out of the live set, before the caller drops its
    /// trees; its id.
    pub(super) fn unlink(&self, e: &NsEntry, attr: &str) -> Result<Nsid> {
        e.check_live()?;
        let vs = self.versions.lock();
        // Under the manifest's lock, where `set_read_only` sets it.
        e.check_writable()?;
        let id = vs
            .namespaces
            .indexes_of(e.id)
            .find(|d| d.attr == attr)
            .map(|d| d.id)
            .ok_or_else(|| Error::UnknownIndex(attr.to_string()))?;
        // Before the writer lock: the order is writer, then manifest.
        drop(vs);
        // Out of the set before its trees start to go (their deeper tables leave the version
        // first, the rest later): a query reads an index only if the set still has it after
        // the query took its super version, so one that does reads all of its entries;
        // writes stop deriving entries for it at once. Under the writer lock, as every
        // change of the set.
        let _w = self.writes.writer.lock();
        // Again, under the manifest's lock: the first check let it go, and a
        // `set_read_only` since then must stop the drop (review, third round, L3). Once
        // out of the set, the drop has begun before any flag set later.
        let vs = self.versions.lock();
        e.check_writable()?;
        drop(vs);
        self.take_out(id);
        Ok(id)
    }

    /// Takes index `id` out of the set as its drop begins (kept out of every rebuild until
    /// [`unlinked`](Self::unlinked)); the caller holds the writer lock.
    pub(super) fn take_out(&self, id: Nsid) {
        let set = self.set.read().clone().without(id);
        *self.set.write() = Arc::new(set);
    }

    /// After the drop of index `id`'s trees (`dropped`, its outcome): the set rebuilt from
    /// the registry either way, since a failed drop leaves the index listed there, and so
    /// back in the set.
    pub(super) fn unlinked(&self, id: Nsid, dropped: Result<()>) -> Result<()> {
        if dropped.is_ok() {
            self.index_flush.forget(&[id]);
        }
        let _w = self.writes.writer.lock();
        let vs = self.versions.lock();
        self.reload_but(&vs, Some(id));
        dropped
    }

    pub(super) fn list(&self, e: &NsEntry) -> Result<Vec<IndexInfo>> {
        e.check_live()?;
        // Ready in memory counts: queries use it.
        let unlogged = self.index_flush.ready_unlogged();
        Ok(self
            .versions
            .lock()
            .namespaces
            .indexes_of(e.id)
            .map(|d| IndexInfo {
                attr: d.attr.clone(),
                kind: d.kind,
                ready: d.ready.is_some() || unlogged.iter().any(|(id, _)| *id == d.id),
            })
            .collect())
    }

    /// After a namespace's destroy (or an index's drop): the set rebuilt from the registry.
    pub(super) fn dropped(&self) {
        let _w = self.writes.writer.lock();
        let vs = self.versions.lock();
        self.reload(&vs);
    }
}

#[cfg(test)]
#[path = "indexes_tests.rs"]
mod tests;
