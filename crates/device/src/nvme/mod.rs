//! The device's NVMe/TCP target (issue 34; `docs/nvme-tcp.md`): the same engine, dispatch
//! and limits as the native port, behind the NVMe/TCP transport, an NVMe admin queue and
//! the KV command set. Written from the NVMe Base 2.x, NVMe over Fabrics, NVMe/TCP and KV
//! Command Set 1.0 specifications.
//!
//! `listener` accepts connections (capped), `conn` runs one (PDUs, R2T), `admin` answers
//! the admin queue (Fabrics, Identify, features, log pages), `identify` lays out its data,
//! `io` maps KV commands onto the dispatch, `vendor` tunnels native commands through a
//! pair of vendor opcodes, `controllers` keeps the controllers' state, `auth` authenticates hosts' queues
//! (DH-HMAC-CHAP).

mod admin;
mod auth;
mod config;
mod conn;
mod controllers;
mod dh_budget;
mod discovery;
mod flight;
mod gate;
mod identify;
mod io;
mod io_queue;
mod listener;
mod vendor;
mod waiting;

pub use config::{NvmeConfig, DEFAULT_NVME_LISTEN};
pub(crate) use io::StoreReply;
pub(crate) use listener::serve;

use crate::admission::Admission;
use crate::dispatch::Shared;
use crate::workers::Workers;
use bytes::Bytes;
use cerberus_proto::nvme::{DhchapSecret, NvmeStatus};
use controllers::Controllers;
use std::collections::HashMap;
use std::sync::Arc;

/// What every NVMe/TCP connection shares.
pub(crate) struct Target {
    pub shared: Arc<Shared>,
    pub workers: Arc<Workers>,
    pub config: NvmeConfig,
    controllers: Controllers,
    /// `host_secrets`, read (checked when the device started).
    secrets: HashMap<String, DhchapSecret>,
    /// `ctrl_secrets`, read: what the target proves itself with to a host that asks.
    ctrl_secrets: HashMap<String, DhchapSecret>,
    /// Connection slots (`max_connections`, `max_connections_per_peer`).
    admission: Arc<Admission>,
    /// The device's held bytes (`max_held_bytes`), shared with the native port.
    held: Arc<crate::held::HeldBytes>,
    /// The DH work each peer may still ask for (`auth_dh_burst`, `auth_dh_per_sec`).
    dh_budget: dh_budget::DhBudget,
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
            dh_budget: dh_budget::DhBudget::new(config.auth_dh_burst, config.auth_dh_per_sec),
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
            .filter(|n| {
                grants
                    .iter()
                    .any(|g| config::grant_matches(g, &n.name, n.nsid))
            })
            .map(|n| n.nsid)
            .collect();
        v.sort_unstable();
        v
    }
}

/// How a command is answered.
pub(super) enum Answer {
    /// A completion, with data for the host first.
    Done {
        status: NvmeStatus,
        dw0: u32,
        /// Property Get of an 8-byte register: its upper half.
        dw1: u32,
        data: Option<Bytes>,
    },
    /// Not now (an Async Event Request: completed by no event this target raises).
    Hold,
}

impl Answer {
    fn status(status: NvmeStatus) -> Answer {
        Answer::Done {
            status,
            dw0: 0,
            dw1: 0,
            data: None,
        }
    }

    fn ok(dw0: u32) -> Answer {
        Answer::Done {
            status: NvmeStatus::SUCCESS,
            dw0,
            dw1: 0,
            data: None,
        }
    }

    fn data(data: Vec<u8>) -> Answer {
        Answer::Done {
            status: NvmeStatus::SUCCESS,
            dw0: 0,
            dw1: 0,
            data: Some(Bytes::from(data)),
        }
    }
}

/// Generic status "Invalid Field in Command".
fn invalid_field() -> NvmeStatus {
    NvmeStatus::error(0, 0x02)
}

/// Generic status "Invalid Namespace or Format".
fn invalid_namespace() -> NvmeStatus {
    NvmeStatus::error(0, 0x0B)
}
