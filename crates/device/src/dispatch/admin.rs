//! Namespaces and the device itself: create, destroy and list namespaces, statistics, and
//! the device's identity.

use super::engine_error::engine;
use super::{Outcome, Shared};
use crate::dedup::DedupWork;
use bytes::Bytes;
use cerberus_proto::{NamespaceEntry, Reply, Status, DEVICE_NSID};
use std::collections::HashMap;

impl Shared {
    pub(super) fn namespace_create(&self, name: &str) -> Outcome {
        let nsid = self.db.create_namespace(name).map_err(engine)?.id();
        let secret = self
            .creds
            .issue(nsid)
            .map_err(|e| (Status::InternalError, e.to_string()))?;
        tracing::info!(nsid, name = %name, "namespace created");
        Ok(Reply::Created { nsid, secret })
    }

    pub(super) fn namespace_destroy(&self, ns: u32) -> Outcome {
        self.db.destroy_namespace(ns).map_err(engine)?;
        self.handles.rcu(|m| {
            let mut m = HashMap::clone(m);
            m.remove(&ns);
            m
        });
        self.metrics.forget(ns);
        self.shares.forget(ns);
        self.submit_dedup(DedupWork::Forget { ns });
        self.creds
            .revoke(ns)
            .map_err(|e| (Status::InternalError, e.to_string()))?;
        tracing::info!(nsid = ns, "namespace destroyed");
        Ok(Reply::Empty)
    }

    pub(super) fn namespace_list(&self) -> Outcome {
        Ok(Reply::Namespaces(
            self.db
                .list_namespaces()
                .into_iter()
                // The engine's default namespace is not served by the device.
                .filter(|n| n.nsid != 0)
                .map(|n| NamespaceEntry {
                    nsid: n.nsid,
                    name: n.name,
                })
                .collect(),
        ))
    }

    /// The stats of namespace `ns` (with its dedup share), or of the device.
    pub(super) fn stats(&self, ns: u32) -> Outcome {
        // The engine's own serialization: the same names as its Rust API.
        let doc = if ns == DEVICE_NSID {
            serde_json::to_vec(&self.device_stats())
        } else {
            let mut doc = serde_json::to_value(self.namespace(ns)?.stats().map_err(engine)?)
                .map_err(|e| (Status::InternalError, e.to_string()))?;
            if let (Some(d), Some(obj)) = (&self.dedup, doc.as_object_mut()) {
                let mine = d.stats().namespaces.get(&ns).copied().unwrap_or_default();
                obj.insert("dedup".into(), serde_json::json!(mine));
            }
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("shares".into(), serde_json::json!(self.shares.report(ns)));
            }
            serde_json::to_vec(&doc)
        };
        let doc = doc.map_err(|e| (Status::InternalError, e.to_string()))?;
        Ok(Reply::Stats(Bytes::from(doc)))
    }
}
