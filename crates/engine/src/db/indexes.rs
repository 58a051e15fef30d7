//! Secondary indexes of namespaces: creation with backfill, drop, and the entries every write
//! of an indexed namespace derives (docs/queries.md, Indexes).
//!
//! Writes stay blind: a put adds an entry for the new value's secondary key and reads nothing,
//! so the entry of the value it replaced stays behind. A query drops such stale entries when it
//! checks the record it reaches (`classic`: the current value's attribute).

use super::index_set::{IndexInfo, IndexSet};
use super::namespace_set::NsEntry;
use super::Inner;
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
mod tests {
    use super::*;
    use crate::index::entry_payload;
    use crate::key::{self, Kind};
    use crate::memtable::MemValue;
    use crate::storage::{MemStorage, StorageRef};
    use crate::{Db, Filter, FindOptions, Options, Readable};
    use bytes::Bytes;
    use std::sync::atomic::Ordering;

    /// An index entry's key in key format 1: the number's `f64` bits alone, made to sort.
    fn old_key(x: f64, pk: &[u8]) -> Vec<u8> {
        let bits = x.to_bits();
        let sortable = if bits >> 63 == 1 {
            !bits
        } else {
            bits ^ (1 << 63)
        };
        [&[0x04][..], &sortable.to_be_bytes(), pk].concat()
    }

    /// What a version before issue 60 left: an index of key format 1, ready, its entries
    /// keyed by `f64` (2^53 and 2^53 + 1 on one key). After an open it answers exactly.
    #[test]
    fn an_index_of_the_old_key_format_is_rebuilt_at_open() {
        let storage: StorageRef = Arc::new(MemStorage::new());
        let ids = [9007199254740992u64, 9007199254740993, 5];
        let old_id = {
            let db = Db::builder(Options::default())
                .open_storage(storage.clone())
                .unwrap();
            let ns = db.create_namespace("n").unwrap();
            for (i, id) in ids.iter().enumerate() {
                let v = format!("{{\"id\": {id}}}");
                ns.put(format!("k{i}").as_bytes(), v.as_bytes()).unwrap();
            }
            let inner = &db.inner;
            let w = inner.writes.writer.lock();
            let mut vs = inner.versions.lock();
            let id = vs.namespaces.next;
            let seq = inner.writes.visible_seq.load(Ordering::Acquire);
            let mem = inner.versions.super_version().mem.clone();
            for (i, v) in ids.iter().enumerate() {
                let mut user = id.to_be_bytes().to_vec();
                user.extend_from_slice(&old_key(*v as f64, format!("k{i}").as_bytes()));
                let payload = entry_payload(IndexKind::Classic, key::ValueAddr::NONE, seq);
                let value = MemValue {
                    kind: Kind::Put,
                    value: Bytes::from(payload),
                    addr: key::ValueAddr::NONE,
                };
                mem.insert(Bytes::from(user), seq, value);
            }
            let def = IndexDef {
                id,
                ns: ns.id(),
                attr: "id".into(),
                kind: IndexKind::Classic,
                ready: None,
                keys: 1,
            };
            let edit = VersionEdit {
                created_index: vec![def],
                ready_index: vec![(id, seq)],
                next_nsid: Some(id + 1),
                ..VersionEdit::default()
            };
            inner.versions.log_edit(&mut vs, edit).unwrap();
            inner.reload_indexes(&vs);
            drop((vs, w));
            db.flush().unwrap();
            id
        };
        let db = Db::builder(Options::default())
            .open_storage(storage)
            .unwrap();
        let ns_id = db
            .inner
            .versions
            .lock()
            .namespaces
            .live
            .iter()
            .find(|(_, n)| *n == "n")
            .map(|(id, _)| *id)
            .unwrap();
        let ns = db.namespace(ns_id).unwrap();
        let f = Filter::parse_str(r#"{"id": 9007199254740993}"#).unwrap();
        let found = ns.find(&f, &FindOptions::default()).unwrap();
        let pks: Vec<&[u8]> = found.value.iter().map(|r| &r.pk[..]).collect();
        assert_eq!(pks, [b"k1"]);
        assert_eq!(found.stats.plan, "classic index on id");
        let defs: Vec<IndexDef> = db
            .inner
            .versions
            .lock()
            .namespaces
            .indexes_of(ns_id)
            .cloned()
            .collect();
        assert_eq!(defs.len(), 1, "{defs:?}");
        assert!(defs[0].id != old_id && defs[0].keys == KEY_FORMAT && defs[0].ready.is_some());
    }
}
