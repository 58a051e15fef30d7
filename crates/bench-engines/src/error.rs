//! The one error of the engines: a run refused before it starts, a call an engine does not
//! offer, or an engine's failure with what it was doing ([`Op`]) and its own error kept as the
//! `#[source]` (which `{:#}` of the bench's `anyhow::Error` prints after a `: `).

use crate::op::Op;
use std::path::PathBuf;

/// Why an engine could not be opened or did not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// `--engine` named no engine.
    #[error(
        "unknown engine {name:?} (expected cerberus, rocksdb, rocksdb-blob, fjall, fjall-blob, \
         device, device-nvme, kvs, redis, floor, floor-write or lmdb)"
    )]
    UnknownEngine {
        /// The name given.
        name: String,
    },
    /// The engine is behind a cargo feature this binary was built without.
    #[error("this cerberus-bench was built without {engine}: {how}")]
    NotBuilt {
        /// The engine.
        engine: &'static str,
        /// How to get a binary that has it.
        how: &'static str,
    },
    /// `--storage nand` with an engine that runs on real files only.
    #[error("--storage nand is not supported by {engine}, only by the cerberus engine")]
    NandUnsupported {
        /// The engine.
        engine: &'static str,
    },
    /// A wire or engine that needs the device started by this process, with a remote one.
    #[error("{what} drives a device this process starts: --device local")]
    NeedsLocalDevice {
        /// `device-nvme` or `--wire nvme`.
        what: &'static str,
    },
    /// `--sync` with the floor.
    #[error("the floor never syncs: run it without --sync")]
    FloorNeverSyncs,
    /// `--profile` with the device engine.
    #[error("--profile is not supported with --engine device")]
    ProfileOnDevice,
    /// A remote device without its admin credential.
    #[error("a remote device needs its admin credential: --admin-secret or CERBERUS_ADMIN_SECRET")]
    NoAdminSecret,

    /// Tenants asked of an engine that has none.
    #[error("this engine has no tenants")]
    NoTenants,
    /// A cursor asked of an engine that has no iterator.
    #[error("this engine has no iterator")]
    NoIterator,
    /// A call the device's protocol has no command for.
    #[error("the device has no {command} command")]
    NoDeviceCommand {
        /// `flush` or `compaction`.
        command: &'static str,
    },
    /// A get asked of the floor.
    #[error("the floor measures puts only (fillseq, fillrandom, overwrite)")]
    FloorPutsOnly,

    /// More (or other) tenants asked than the engine was opened for.
    #[error("{engine} was opened for {opened} tenants, not {asked}")]
    TenantCount {
        /// The engine.
        engine: &'static str,
        /// Tenants at open (`OpenConfig::tenants`).
        opened: usize,
        /// Tenants asked.
        asked: usize,
    },
    /// More tenants than the engine can count.
    #[error("too many tenants")]
    TooManyTenants(#[source] std::num::TryFromIntError),
    /// A tenant handle the engine did not make.
    #[error("{engine}: tenant {tenant} was not created")]
    TenantNotCreated {
        /// The engine.
        engine: &'static str,
        /// The tenant's name.
        tenant: String,
    },
    /// A namespace on the device whose secret this run's directory does not have.
    #[error(
        "namespace {name:?} ({nsid}) exists on the device but its secret is not in {}; \
         destroy it or reuse the --db that made it",
        path.display()
    )]
    SecretUnknown {
        /// The namespace's name.
        name: String,
        /// Its id on the device.
        nsid: u32,
        /// The secrets file.
        path: PathBuf,
    },
    /// The local device has no NVMe/TCP target to connect to.
    #[error("the local device serves no NVMe/TCP target")]
    NoNvmeTarget,
    /// The device cursor lost its iterator.
    #[error("device cursor has no iterator")]
    CursorNotOpen,
    /// redis-server did not answer its first ping in time.
    #[error("redis-server did not answer within 10 s")]
    #[cfg(feature = "redis")]
    RedisNoAnswer(#[source] redis::RedisError),

    /// The database's directory could not be made.
    #[error("creating {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The namespace secrets a run keeps could not be read.
    #[error("reading {}", path.display())]
    ReadSecrets {
        /// The secrets file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The namespace secrets could not be encoded.
    #[error("encoding the namespace secrets")]
    EncodeSecrets(#[source] serde_json::Error),
    /// The namespace secrets could not be written.
    #[error("writing {}", path.display())]
    WriteSecrets {
        /// The secrets file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The embedded Cerberus engine (or a local device's) failed.
    #[error("cerberus: {op}")]
    Cerberus {
        /// What it was doing.
        op: Op,
        /// The engine's error.
        #[source]
        source: cerberus_engine::Error,
    },
    /// A call to the device failed.
    #[error("device: {op}")]
    Device {
        /// What it was doing.
        op: Op,
        /// The client's error.
        #[source]
        source: cerberus_host::Error,
    },
    /// A call of the SNIA key-value library (`kvs` engine) failed.
    #[error("kvs: {op}: kvs_result 0x{code:x}")]
    Kvs {
        /// What it was doing.
        op: Op,
        /// The library's `kvs_result`.
        code: i32,
    },
    /// A device could not be started here.
    #[error("starting a local device")]
    StartDevice(#[source] cerberus_device::DeviceError),
    /// The device started here did not shut down cleanly.
    #[error("shutting down the local device")]
    StopDevice(#[source] cerberus_device::DeviceError),
    /// The floor's log or thread failed.
    #[error("floor: {op}")]
    Floor {
        /// What it was doing.
        op: Op,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// RocksDB failed.
    #[cfg(feature = "rocksdb")]
    #[error("rocksdb: {op}")]
    RocksDb {
        /// What it was doing.
        op: Op,
        /// RocksDB's error.
        #[source]
        source: rocksdb::Error,
    },
    /// LMDB failed.
    #[cfg(feature = "lmdb")]
    #[error("lmdb: {op}")]
    Lmdb {
        /// What it was doing.
        op: Op,
        /// heed's error.
        #[source]
        source: heed::Error,
    },
    /// fjall failed.
    #[cfg(feature = "fjall")]
    #[error("fjall: {op}")]
    Fjall {
        /// What it was doing.
        op: Op,
        /// fjall's error.
        #[source]
        source: fjall::Error,
    },
    /// A Redis command or connection failed.
    #[cfg(feature = "redis")]
    #[error("redis: {op}")]
    Redis {
        /// What it was doing.
        op: Op,
        /// The client's error.
        #[source]
        source: redis::RedisError,
    },
    /// redis-server could not be started.
    #[cfg(feature = "redis")]
    #[error("starting redis-server (scripts/install-peers installs it from Debian's package)")]
    RedisNotStarted(#[source] std::io::Error),
    /// The redis-server process (or what it needs) failed.
    #[cfg(feature = "redis")]
    #[error("redis-server: {op}")]
    RedisServer {
        /// What it was doing.
        op: Op,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A result of the engines.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Names the operation an engine's own error happened in, making the [`EngineError`] of
/// that engine.
pub(crate) trait Doing<T> {
    /// The error, if any, as the failure of `op`.
    fn doing(self, op: Op) -> Result<T>;
}

impl<T> Doing<T> for std::result::Result<T, cerberus_engine::Error> {
    fn doing(self, op: Op) -> Result<T> {
        self.map_err(|source| EngineError::Cerberus { op, source })
    }
}

impl<T> Doing<T> for std::result::Result<T, cerberus_host::Error> {
    fn doing(self, op: Op) -> Result<T> {
        self.map_err(|source| EngineError::Device { op, source })
    }
}

#[cfg(feature = "rocksdb")]
impl<T> Doing<T> for std::result::Result<T, rocksdb::Error> {
    fn doing(self, op: Op) -> Result<T> {
        self.map_err(|source| EngineError::RocksDb { op, source })
    }
}

#[cfg(feature = "lmdb")]
impl<T> Doing<T> for std::result::Result<T, heed::Error> {
    fn doing(self, op: Op) -> Result<T> {
        self.map_err(|source| EngineError::Lmdb { op, source })
    }
}

#[cfg(feature = "fjall")]
impl<T> Doing<T> for std::result::Result<T, fjall::Error> {
    fn doing(self, op: Op) -> Result<T> {
        self.map_err(|source| EngineError::Fjall { op, source })
    }
}

#[cfg(feature = "redis")]
impl<T> Doing<T> for std::result::Result<T, redis::RedisError> {
    fn doing(self, op: Op) -> Result<T> {
        self.map_err(|source| EngineError::Redis { op, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's `{:#}`: the error, then its sources, `: `-separated.
    fn chain(e: &EngineError) -> String {
        let mut out = e.to_string();
        let mut next = std::error::Error::source(e);
        while let Some(s) = next {
            out += &format!(": {s}");
            next = s.source();
        }
        out
    }

    #[test]
    fn an_engine_failure_says_the_engine_the_operation_and_why() {
        let e: Result<()> = Err(cerberus_host::Error::Timeout).doing(Op::Connect {
            addr: "10.0.0.1:7070".into(),
        });
        let e = e.unwrap_err();
        assert_eq!(
            chain(&e),
            "device: connecting to the device at 10.0.0.1:7070: timed out"
        );
    }

    #[test]
    fn errors_stay_small_and_cross_threads() {
        fn send_sync<E: Send + Sync + 'static>() {}
        send_sync::<EngineError>();
        // A put returns `Result<(), EngineError>`; keep that cheap (clippy's
        // `result_large_err` bound is 128 bytes).
        assert!(std::mem::size_of::<EngineError>() <= 128);
    }
}
