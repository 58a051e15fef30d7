//! Client library for the Cerberus key-value device (`docs/protocol.md`).
//!
//! [`Client`] is async: one TCP (or TLS) connection, shared by its clones, with many commands
//! in flight from many tasks at once. [`BlockingClient`] offers the same methods to threads
//! without a runtime. The calls are named as the engine's: the device's namespaces are
//! managed on the client (`create_namespace`, `destroy_namespace`, `list_namespaces`), and a
//! namespace's data and indexes through its handle, [`Namespace`] ([`BlockingNamespace`]):
//! `put`, `get`, `delete`, `contains`, `scan`, `create_index`, `query`, ... Failure statuses
//! come back as typed [`Error`]s; an absent key is `Ok(None)` / `Ok(false)` where that reads
//! better.
//!
//! ```no_run
//! # async fn demo() -> cerberus_host::Result<()> {
//! let client = cerberus_host::Client::connect("127.0.0.1:7000").await?;
//! let ns = client.open_namespace(1, "secret").await?;
//! ns.put("key", "value").await?;
//! assert_eq!(ns.get("key").await?.as_deref(), Some(&b"value"[..]));
//! assert!(ns.contains("key").await?);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod backup;
mod blocking;
mod blocking_namespace;
mod client;
pub mod cluster;
mod connection;
mod delete_range;
mod direct;
mod error;
mod inflight;
mod namespace;
pub mod nvme;
mod nvme_direct;
mod nvme_flights;
mod nvme_link;
mod query;
mod relay;
mod reply;
mod scan;
mod scan_options;
mod tls;
mod write_batch;

pub use backup::BackupInfo;
pub use blocking::BlockingClient;
pub use blocking_namespace::BlockingNamespace;
pub use client::{Client, ClientConfig, InflightLimit};
pub use error::{Error, Result};
pub use namespace::{Namespace, WriteOptions};
pub use nvme_link::Wire;
pub use query::{IndexKind, QueryReply};
pub use scan::Scan;
pub use scan_options::ScanOptions;
pub use tls::TlsOptions;
pub use write_batch::WriteBatch;

pub use cerberus_proto as proto;
pub use cerberus_proto::{
    Identify, NamespaceEntry, NamespaceSettings, Reply, Request, Response, Status, StoreMode,
    DEVICE_NSID,
};

/// The host-client example of `docs/device.md`, compiled by `cargo test` so it follows the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/device.md")]
pub struct DeviceDocDoctests;
