//! Client library for the Cerberus key-value device (`docs/protocol.md`).
//!
//! [`Client`] is async: one TCP (or TLS) connection, shared by its clones, with many commands
//! in flight from many tasks at once. [`BlockingClient`] offers the same methods to threads
//! without a runtime. Failure statuses come back as typed [`Error`]s; an absent key is
//! `Ok(None)` / `Ok(false)` where that reads better.
//!
//! ```no_run
//! # async fn demo() -> cerberus_host::Result<()> {
//! let client = cerberus_host::Client::connect("127.0.0.1:7000").await?;
//! client.authenticate(1, "secret").await?;
//! client.put(1, "key", "value").await?;
//! assert_eq!(client.get(1, "key").await?.as_deref(), Some(&b"value"[..]));
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod blocking;
mod client;
mod connection;
mod direct;
mod error;
mod inflight;
mod query;
mod scan;
mod scan_options;
mod tls;

pub use blocking::BlockingClient;
pub use client::{Client, ClientConfig, InflightLimit};
pub use error::{Error, Result};
pub use query::QueryReply;
pub use scan::Scan;
pub use scan_options::ScanOptions;
pub use tls::TlsOptions;

pub use cerberus_proto as proto;
pub use cerberus_proto::{
    Identify, NamespaceEntry, Reply, Request, Response, Status, StoreMode, DEVICE_NSID,
};
