//! What every NVMe/TCP connection of the target shares: the device's engine and workers,
//! the target's settings, controllers, host secrets, connection slots and DH budget.

use super::controllers::Controllers;
use super::dh_budget::DhBudget;
use crate::admission::Admission;
use crate::config::nvme::{grant_matches, NvmeConfig};
use crate::dispatch::Shared;
use crate::workers::Workers;
use cerberus_proto::nvme::DhchapSecret;
use std::collections::HashMap;
use std::sync::Arc;

/// What every NVMe/TCP connection shares.
pub(crate) struct Target {
    pub shared: Arc<Shared>,
    pub workers: Arc<Workers>,
    pub config: NvmeConfig,
    pub(super) controllers: Controllers,
    /// `host_secrets`, read (checked when the device started).
    pub(super) secrets: HashMap<String, DhchapSecret>,
    /// `ctrl_secrets`, read: what the target proves itself with to a host that asks.
    pub(super) ctrl_secrets: HashMap<String, DhchapSecret>,
    /// Connection slots (`max_connections`, `max_connections_per_peer`).
    pub(super) admission: Arc<Admission>,
    /// The device's held bytes (`max_held_bytes`), shared with the native port.
    pub(super) held: Arc<crate::held::HeldBytes>,
    /// The DH work each peer may still ask for (`auth_dh_burst`, `auth_dh_per_sec`).
    pub(super) dh_budget: DhBudget,
}

impl Target {
    pub fn new(shared: Arc<Shared>, workers: Arc<Workers>) -> Target {
        let config = shared.config.nvme.clone();
        let read = |m: &std::collections::BTreeMap<String, String>| {
            m.iter()
                .filter_map(|(h, s)| Some((h.clone(), DhchapSecret::parse(s).ok()?)))
                .collect()
        };
        Target {
            secrets: read(&config.host_secrets),
            ctrl_secrets: read(&config.ctrl_secrets),
            admission: Admission::new(
                config.max_connections,
                config.max_connections_per_peer,
                crate::admission::EVICTION_GRACE,
            ),
            held: shared.held.clone(),
            dh_budget: DhBudget::new(config.auth_dh_burst, config.auth_dh_per_sec),
            shared,
            workers,
            config,
            controllers: Controllers::default(),
        }
    }

    /// The namespaces `hostnqn` was granted that exist, ascending.
    pub fn visible(&self, hostnqn: &str) -> Vec<u32> {
        let Some(grants) = self.config.hosts.get(hostnqn) else {
            return Vec::new();
        };
        let mut v: Vec<u32> = self
            .shared
            .db
            .list_namespaces()
            .into_iter()
            // The engine's default namespace is not served by the device.
            .filter(|n| n.nsid != 0)
            .filter(|n| grants.iter().any(|g| grant_matches(g, &n.name, n.nsid)))
            .map(|n| n.nsid)
            .collect();
        v.sort_unstable();
        v
    }
}
