//! The Cerberus device: serves the key-value command set (`cerberus-proto`) over TCP or TLS on
//! top of the engine, with per-namespace credentials, worker threads for engine calls, a
//! Prometheus endpoint and graceful shutdown.

#![deny(missing_docs)]

mod admission;
mod auth;
mod background;
mod config;
mod connection;
mod data_dir;
mod deadlines;
mod dedup;
mod dispatch;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod held;
mod iterators;
mod metrics;
mod nvme;
mod ordered_jobs;
mod outbox;
mod panics;
mod placed;
mod put_batch;
mod queries;
mod query_fit;
mod reactor;
mod scheduler;
mod server;
mod shares;
mod spin;
mod stop;
mod tls;
mod turns;
mod verify;
mod workers;

pub use auth::ADMIN_SECRET_FILE;
pub use config::nvme::{NvmeConfig, DEFAULT_NVME_LISTEN};
pub use config::{DeviceConfig, EngineConfig, StorageChoice, DEFAULT_LISTEN};
pub use dedup::{ChunkHash, Chunker, Chunking, DedupConfig, DedupStats, NsDedupStats};
pub use error::DeviceError;
pub use metrics::http::MAX_SCRAPES;
pub use scheduler::stats::{CoreStats, SchedulerStats};
pub use scheduler::{Policy, SchedulerConfig};
pub use server::{Device, DeviceHandle};
pub use shares::{ShareReport, ShareStats, SharesConfig};
pub use verify::verify_data_dir;
