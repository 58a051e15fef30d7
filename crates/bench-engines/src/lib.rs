//! The key-value engines `cerberus-bench` runs its workloads on, behind one small trait
//! ([`BenchDb`]): Cerberus embedded, Cerberus through the network as a device (remote, or
//! started here on a loopback port) and through the SNIA key-value library in C (`kvs`,
//! `crates/kvs`), and, behind their cargo features, its peers RocksDB
//! (`rocksdb`, Debian's librocksdb from scripts/install-peers) and Redis (`redis`, a
//! `redis-server` the bench starts) and LMDB (`lmdb`, the `heed` crate, the embedded engine's read
//! peer) and fjall (`fjall`, the Rust LSM-tree peer: keyspaces of partitions, key-value
//! separation; pure Rust); and the floor of Cerberus's write path (`floor`: a buffered
//! log append and a skiplist insert per put; `floor-write`: a `write(2)` per put;
//! `floor-log`: the log written as the engine's, segments synced in order). Also the engine sizes of `--profile` ([`profile`]) and
//! the local device the bench's device experiments share ([`local_device`]).
//!
//! Every call that can fail answers with an [`EngineError`]: the engine, what it was doing
//! ([`Op`]), and the engine's own error as its source.

#![deny(missing_docs)]

mod cerberus;
mod config;
mod db;
mod device;
mod device_cursor;
mod error;
#[cfg(feature = "fjall")]
mod fjall;
mod floor;
mod floor_log;
mod kvs;
#[cfg(feature = "lmdb")]
mod lmdb;
pub mod local_device;
mod op;
mod open;
pub mod profile;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "rocksdb")]
mod rocksdb;

pub use config::{
    row_cache_bytes, set_row_cache_bytes, set_wire_nvme, wire_nvme, OpenConfig, StorageArg,
};
pub use db::{
    db_stats_json, tenants_in_namespaces, BenchCursor, BenchDb, CursorOptions, LayoutArg,
    TenantHandle, BASELINE_NAMESPACE,
};
pub use device::DeviceDb;
pub use error::{EngineError, Result};
pub use kvs::KvsDb;
pub use op::Op;
pub use open::{open, Engine};
