//! Secondary indexes of namespaces: creation with backfill, drop, and the entries every write
//! of an indexed namespace derives (docs/queries.md, Indexes).
//!
//! Writes stay blind: a put adds an entry for the new value's secondary key and reads nothing,
//! so the entry of the value it replaced stays behind. A query drops such stale entries when it
//! checks the record it reaches (`classic`: the current value's attribute).

use super::index_set::{IndexInfo, IndexSet};
use super::inner::Inner;
use super::namespace_set::NsEntry;
use crate::error::{Error, Result};
use crate::index::{AttrPath, IndexDef, IndexKind, KEY_FORMAT};
use crate::key::Nsid;
use crate::version::{VersionEdit, VersionSet};
use std::sync::Arc;

impl Inner {
    pub(super) fn index_set(&self) -> Arc<IndexSet> {
        self.indexes.read().clone()
    }

    /// Rebuilds the index set from the registry; the caller holds the writer lock, so that
    /// every write after it derives entries for exactly the new set.
    pub(super) fn reload_indexes(&self, vs: &VersionSet) {
        let ready = self.index_flush.ready_unlogged();
        let set = IndexSet::from_defs(vs.namespaces.indexes.values(), &ready);
        *self.indexes.write() = Arc::new(set);
    }

    pub(super) fn create_index(&self, e: &NsEntry, attr: &str, kind: IndexKind) -> Result<()> {
        self.check_open()?;
        e.check_live()?;
        let path = AttrPath::parse(attr).map_err(Error::InvalidArgument)?;
        let id = {
            let _w = self.writes.writer.lock();
            let mut vs = self.versions.lock();
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
            self.reload_indexes(&vs);
            id
        };
        self.backfill_in_background(e, id)
    }

    /// Rebuilds each index whose entries have an older key format (numbers as `f64` alone,
    /// which gave integers past 2^53 one key): registers it again under a new id, whose
    /// backfill [`finish_backfills`](Self::finish_backfills) then runs as a crashed one's,
    /// and drops the old trees. A crash between the two leaves both registered; the next
    /// open finds the new one and only drops the old.
    pub(super) fn upgrade_index_keys(&self) -> Result<()> {
        let old: Vec<IndexDef> = {
            let vs = self.versions.lock();
            let defs = &vs.namespaces.indexes;
            defs.values()
                .filter(|d| d.keys != KEY_FORMAT)
                .cloned()
                .collect()
        };
        for d in old {
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
                self.reload_indexes(&vs);
            }
            drop((vs, _w));
            self.drop_trees(&[d.id])?;
        }
        Ok(())
    }

    pub(super) fn drop_index(&self, e: &NsEntry, attr: &str) -> Result<()> {
        self.check_open()?;
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
        // first, the rest later): a query reads the set after taking its super version, so
        // one that still finds the index reads all of its entries; writes stop deriving
        // entries for it at once. Under the writer lock, as every change of the set.
        {
            let _w = self.writes.writer.lock();
            // Again, under the manifest's lock: the first check let it go, and a
            // `set_read_only` since then must stop the drop (review, third round, L3). Once
            // out of the set, the drop has begun before any flag set later.
            let vs = self.versions.lock();
            e.check_writable()?;
            drop(vs);
            let set = self.index_set().without(id);
            *self.indexes.write() = Arc::new(set);
        }
        let dropped = self.drop_trees(&[id]);
        if dropped.is_ok() {
            self.index_flush.forget(&[id]);
        }
        // Rebuilt from the registry either way: a failed drop leaves the index listed there,
        // and so back in the set.
        let _w = self.writes.writer.lock();
        let vs = self.versions.lock();
        self.reload_indexes(&vs);
        dropped
    }

    pub(super) fn list_indexes(&self, e: &NsEntry) -> Result<Vec<IndexInfo>> {
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

    /// After a namespace's destroy: its indexes are gone from the registry too.
    pub(super) fn indexes_dropped(&self) {
        let _w = self.writes.writer.lock();
        let vs = self.versions.lock();
        self.reload_indexes(&vs);
    }
}

#[cfg(test)]
#[path = "indexes_tests.rs"]
mod tests;
