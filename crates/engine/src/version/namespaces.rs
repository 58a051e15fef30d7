//! The namespace registry as the manifest records it.

use super::VersionEdit;
use crate::key::{Nsid, DEFAULT_NS};
use std::collections::{BTreeMap, BTreeSet};

/// Live namespaces by id, destroyed ids, and the next id to hand out (never reused).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespaces {
    pub live: BTreeMap<Nsid, String>,
    pub destroyed: BTreeSet<Nsid>,
    pub next: Nsid,
}

impl Default for Namespaces {
    /// A new database has the default namespace.
    fn default() -> Self {
        Namespaces {
            live: BTreeMap::from([(DEFAULT_NS, "default".to_string())]),
            destroyed: BTreeSet::new(),
            next: DEFAULT_NS + 1,
        }
    }
}

impl Namespaces {
    pub fn apply(&mut self, edit: &VersionEdit) {
        for (ns, name) in &edit.created_ns {
            self.live.insert(*ns, name.clone());
            self.next = self.next.max(ns.saturating_add(1));
        }
        for ns in &edit.destroyed_ns {
            self.live.remove(ns);
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
    }
}
