//! The namespace registry as the manifest records it.

use super::VersionEdit;
use crate::index_kind::IndexKind;
use crate::key::{Nsid, DEFAULT_NS};
use std::collections::{BTreeMap, BTreeSet};

/// Live namespaces by id, destroyed ids, and the next id to hand out (never reused).
/// Indexes take their ids from the same sequence; an index is dropped as its id is destroyed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespaces {
    pub live: BTreeMap<Nsid, String>,
    pub destroyed: BTreeSet<Nsid>,
    pub next: Nsid,
    /// Live indexes by their id.
    pub indexes: BTreeMap<Nsid, IndexDef>,
}

impl Default for Namespaces {
    /// A new database has the default namespace.
    fn default() -> Self {
        Namespaces {
            live: BTreeMap::from([(DEFAULT_NS, "default".to_string())]),
            destroyed: BTreeSet::new(),
            next: DEFAULT_NS + 1,
            indexes: BTreeMap::new(),
        }
    }
}

impl Namespaces {
    pub fn apply(&mut self, edit: &VersionEdit) {
        for (ns, name) in &edit.created_ns {
            self.live.insert(*ns, name.clone());
            self.next = self.next.max(ns.saturating_add(1));
        }
        for d in &edit.created_index {
            self.indexes.insert(d.id, d.clone());
            self.next = self.next.max(d.id.saturating_add(1));
        }
        for (id, seq) in &edit.ready_index {
            if let Some(d) = self.indexes.get_mut(id) {
                d.ready = Some(*seq);
            }
        }
        for ns in &edit.destroyed_ns {
            self.live.remove(ns);
            self.indexes.remove(ns);
            self.destroyed.insert(*ns);
            self.next = self.next.max(ns.saturating_add(1));
        }
        if let Some(n) = edit.next_nsid {
            self.next = self.next.max(n);
        }
    }

    /// Fields of a snapshot edit that recreate this registry.
    pub fn snapshot_into(&self, edit: &mut VersionEdit) {
        edit.created_ns = self.live.iter().map(|(k, v)| (*k, v.clone())).collect();
        edit.destroyed_ns = self.destroyed.iter().copied().collect();
        edit.next_nsid = Some(self.next);
        edit.created_index = self.indexes.values().cloned().collect();
        edit.ready_index = self
            .indexes
            .values()
            .filter_map(|d| Some((d.id, d.ready?)))
            .collect();
    }

    /// The indexes of namespace `ns`.
    pub fn indexes_of(&self, ns: Nsid) -> impl Iterator<Item = &IndexDef> + '_ {
        self.indexes.values().filter(move |d| d.ns == ns)
    }
}

/// An index as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDef {
    /// The namespace id its entries live under.
    pub id: Nsid,
    /// The namespace it indexes.
    pub ns: Nsid,
    /// The attribute path as given (`index::AttrPath` parses it).
    pub attr: String,
    pub kind: IndexKind,
    /// Backfill done: from this seqno on, every record a snapshot sees has its entry (a
    /// snapshot older than that reads without the index).
    pub ready: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in [IndexKind::Classic, IndexKind::Vas] {
            assert_eq!(IndexKind::from_u8(k.to_u8()), Some(k));
            assert_eq!(IndexKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(IndexKind::parse("btree"), None);
    }
}
