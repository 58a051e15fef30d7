//! The namespace registry as the manifest records it.

use super::edit::VersionEdit;
use crate::index_def::IndexDef;
use crate::key::{Nsid, DEFAULT_NS};
use crate::namespace_options::NamespaceOptions;
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
    /// Settings of the namespaces given any (the others have the defaults).
    pub options: BTreeMap<Nsid, NamespaceOptions>,
    /// Namespaces that refuse writes (`Namespace::set_read_only`); the others are writable.
    pub read_only: BTreeSet<Nsid>,
    /// Live bytes (keys and values of the newest versions, tombstones none) per namespace
    /// and per index, as of the last flush.
    pub usage: BTreeMap<Nsid, u64>,
    /// The manifest tracks usage; a manifest written before it did is recounted at open.
    pub usage_tracked: bool,
    /// Value-log bytes of superseded or deleted versions, per namespace and segment, in
    /// segments GC has not collected yet.
    pub garbage: BTreeMap<Nsid, BTreeMap<u64, u64>>,
}

impl Default for Namespaces {
    /// A new database has the default namespace.
    fn default() -> Self {
        Namespaces {
            live: BTreeMap::from([(DEFAULT_NS, "default".to_string())]),
            destroyed: BTreeSet::new(),
            next: DEFAULT_NS + 1,
            indexes: BTreeMap::new(),
            options: BTreeMap::new(),
            read_only: BTreeSet::new(),
            usage: BTreeMap::new(),
            usage_tracked: true,
            garbage: BTreeMap::new(),
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
            self.next = self.next.max(d.id.saturating_add(1));
            match self.live.contains_key(&d.ns) {
                true => self.indexes.insert(d.id, d.clone()),
                // Registered after its namespace's destroy was logged (a `create_index` that
                // raced the destroy, before session 103): destroyed with it.
                false => {
                    self.destroyed.insert(d.id);
                    None
                }
            };
        }
        for (id, seq) in &edit.ready_index {
            if let Some(d) = self.indexes.get_mut(id) {
                d.ready = Some(*seq);
            }
        }
        for (ns, o) in &edit.ns_options {
            self.options.insert(*ns, *o);
        }
        for &(ns, read_only) in &edit.ns_read_only {
            match read_only {
                true => self.read_only.insert(ns),
                false => self.read_only.remove(&ns),
            };
        }
        if let Some(base) = &edit.usage_base {
            self.usage = base.iter().copied().collect();
            self.usage_tracked = true;
        }
        for &(ns, d) in &edit.usage_delta {
            // A flush that raced a destroy still reports the destroyed id: nothing to keep.
            if self.live.contains_key(&ns) || self.indexes.contains_key(&ns) {
                let u = self.usage.entry(ns).or_default();
                *u = u.saturating_add_signed(d);
            }
        }
        for &(ns, seg, bytes) in &edit.ns_garbage {
            if self.live.contains_key(&ns) {
                let g = self.garbage.entry(ns).or_default().entry(seg).or_default();
                *g = g.saturating_add(bytes);
            }
        }
        // A namespace's indexes go with it, listed or not (a `create_index` that raced the
        // destroy, before session 103, was not).
        let unlisted: Vec<Nsid> = edit
            .destroyed_ns
            .iter()
            .filter(|ns| self.live.contains_key(ns))
            .flat_map(|ns| self.indexes_of(*ns).map(|d| d.id))
            .filter(|id| !edit.destroyed_ns.contains(id))
            .collect();
        for ns in edit.destroyed_ns.iter().chain(&unlisted) {
            self.live.remove(ns);
            self.indexes.remove(ns);
            self.options.remove(ns);
            self.read_only.remove(ns);
            self.usage.remove(ns);
            self.garbage.remove(ns);
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
        edit.ns_options = self.options.iter().map(|(k, v)| (*k, *v)).collect();
        edit.ns_read_only = self.read_only.iter().map(|&ns| (ns, true)).collect();
        if self.usage_tracked {
            edit.usage_base = Some(self.usage.iter().map(|(k, v)| (*k, *v)).collect());
        }
        edit.ns_garbage = self
            .garbage
            .iter()
            .flat_map(|(ns, segs)| segs.iter().map(move |(s, b)| (*ns, *s, *b)))
            .collect();
    }

    /// The settings of namespace `ns` (the defaults if it was given none).
    pub fn options_of(&self, ns: Nsid) -> NamespaceOptions {
        self.options.get(&ns).copied().unwrap_or_default()
    }

    /// Live bytes of namespace `ns`: its records and its indexes' entries.
    pub fn usage_of(&self, ns: Nsid) -> (u64, u64) {
        let records = self.usage.get(&ns).copied().unwrap_or(0);
        let index = self
            .indexes_of(ns)
            .map(|d| self.usage.get(&d.id).copied().unwrap_or(0))
            .sum();
        (records, index)
    }

    /// Value-log garbage of namespace `ns`, in bytes.
    pub fn garbage_of(&self, ns: Nsid) -> u64 {
        self.garbage.get(&ns).map_or(0, |s| s.values().sum())
    }

    /// Segment `seg` is gone (collected): its garbage with it.
    pub fn forget_segment(&mut self, seg: u64) {
        for segs in self.garbage.values_mut() {
            segs.remove(&seg);
        }
    }

    /// The indexes of namespace `ns`.
    pub fn indexes_of(&self, ns: Nsid) -> impl Iterator<Item = &IndexDef> + '_ {
        self.indexes.values().filter(move |d| d.ns == ns)
    }
}
