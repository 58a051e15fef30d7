//! Namespaces and the device itself: create, destroy and list namespaces, statistics, and
//! the device's identity.

use super::engine_error::engine;
use super::{Outcome, Shared};
use crate::dedup::DedupWork;
use bytes::Bytes;
use cerberus_engine::{IoShares, NamespaceOptions};
use cerberus_proto::{NamespaceEntry, NamespaceSettings, Reply, Status, DEVICE_NSID};
use rustc_hash::FxHashMap;

/// The engine's settings from the wire's (the same fields; the engine validates them).
pub(crate) fn options_of(s: &NamespaceSettings) -> NamespaceOptions {
    NamespaceOptions {
        capacity: s.capacity,
        shares: IoShares {
            reservation_ops: s.reservation_ops,
            reservation_bytes: s.reservation_bytes,
            weight: s.weight,
            limit_ops: s.limit_ops,
            limit_bytes: s.limit_bytes,
        },
    }
}

impl Shared {
    /// Tells the command gate namespace `ns`'s I/O shares (at create, at configure, and for
    /// every namespace at start); the engine has validated them.
    pub(super) fn apply_shares(&self, ns: u32, shares: &IoShares) {
        if let Err(e) = self.shares.set(ns, *shares) {
            tracing::warn!(nsid = ns, error = %e, "shares the gate refused");
        }
        // A configure racing a destroy: the destroy forgets the tags after the engine's
        // destroy, so either it comes after this `set` or the namespace is seen gone here.
        if self.db.namespace(ns).is_err() {
            self.shares.forget(ns);
        }
    }

    /// [`apply_shares`](Self::apply_shares) for every namespace the engine keeps.
    pub(super) fn apply_kept_shares(&self) {
        for n in self.db.list_namespaces() {
            if let Ok(h) = self.db.namespace(n.nsid) {
                self.apply_shares(n.nsid, &h.options().shares);
            }
        }
    }

    pub(super) fn namespace_create(
        &self,
        name: &str,
        settings: Option<NamespaceSettings>,
    ) -> Outcome {
        let options = settings.as_ref().map(options_of).unwrap_or_default();
        let nsid = self
            .db
            .create_namespace_with(name, options)
            .map_err(engine)?
            .id();
        self.apply_shares(nsid, &options.shares);
        let secret = self
            .creds
            .issue(nsid)
            .map_err(|e| (Status::InternalError, e.to_string()))?;
        tracing::info!(nsid, name = %name, ?options, "namespace created");
        Ok(Reply::Created { nsid, secret })
    }

    /// New settings (`None`: kept) and the read-only flag (`None`: unchanged) of `ns`. Once
    /// it is answered after making `ns` read-only, no write of `ns` is acknowledged any more,
    /// on any wire, and every one acknowledged before is readable (the engine's fence).
    pub(super) fn namespace_configure(
        &self,
        ns: u32,
        settings: Option<NamespaceSettings>,
        read_only: Option<bool>,
    ) -> Outcome {
        let options = settings.as_ref().map(options_of);
        self.with_namespace(ns, |h| {
            if let Some(o) = options {
                h.configure(o).map_err(engine)?;
            }
            if let Some(r) = read_only {
                h.set_read_only(r).map_err(engine)?;
            }
            Ok(Reply::Empty)
        })?;
        if let Some(o) = &options {
            self.apply_shares(ns, &o.shares);
        }
        tracing::info!(nsid = ns, ?options, ?read_only, "namespace configured");
        Ok(Reply::Empty)
    }

    pub(super) fn namespace_destroy(&self, ns: u32) -> Outcome {
        self.db.destroy_namespace(ns).map_err(engine)?;
        self.handles.rcu(|m| {
            let mut m = FxHashMap::clone(m);
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

    /// A new credential for `ns` in place of its own: from the answer on, the old one is
    /// refused by every wire, and connections that proved it lose the namespace.
    pub(super) fn namespace_rekey(&self, ns: u32) -> Outcome {
        // Only a namespace the device serves (not the engine's default, 0).
        let served = ns != 0 && self.db.list_namespaces().iter().any(|n| n.nsid == ns);
        let issued = match served {
            true => self
                .creds
                .rekey(ns)
                .map_err(|e| (Status::InternalError, e.to_string()))?,
            false => None,
        };
        let Some(secret) = issued else {
            return Err((Status::InvalidNamespace, format!("unknown namespace {ns}")));
        };
        tracing::info!(nsid = ns, "namespace rekeyed");
        Ok(Reply::Created { nsid: ns, secret })
    }

    /// The id of the namespace the device serves under `name`.
    pub(crate) fn namespace_named(&self, name: &str) -> Option<u32> {
        self.db.namespace_id(name).filter(|ns| *ns != 0)
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
            // Counters, space and settings (used_bytes, capacity, shares, ...).
            let mut doc = serde_json::to_value(self.namespace(ns)?.stats().map_err(engine)?)
                .map_err(|e| (Status::InternalError, e.to_string()))?;
            if let (Some(d), Some(obj)) = (&self.dedup, doc.as_object_mut()) {
                let mine = d.stats().namespaces.get(&ns).copied().unwrap_or_default();
                obj.insert("dedup".into(), serde_json::json!(mine));
            }
            if let Some(obj) = doc.as_object_mut() {
                obj.insert(
                    "shares_served".into(),
                    serde_json::json!(self.shares.report(ns)),
                );
            }
            serde_json::to_vec(&doc)
        };
        let doc = doc.map_err(|e| (Status::InternalError, e.to_string()))?;
        Ok(Reply::Stats(Bytes::from(doc)))
    }
}
