//! The engines by name, and opening one.

use crate::profile::SizeProfile;
#[cfg(feature = "redis")]
use crate::redis;
#[cfg(feature = "rocksdb")]
use crate::rocksdb;
use crate::{cerberus, device, BenchDb, LayoutArg};
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// An engine named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Cerberus,
    RocksDb,
    /// RocksDB with integrated blob files (BlobDB): values of at least Cerberus's
    /// `inline_value_threshold` bytes go to blob files, as Cerberus's go to its value log.
    RocksDbBlob,
    /// Cerberus through the network, as a device (`--device`).
    Device,
    /// A `redis-server` started on a loopback port (the device's peer).
    Redis,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cerberus => "cerberus",
            Engine::RocksDb => "rocksdb",
            Engine::RocksDbBlob => "rocksdb-blob",
            Engine::Device => "device",
            Engine::Redis => "redis",
        }
    }

    pub fn parse(s: &str) -> Result<Engine> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cerberus" => Ok(Engine::Cerberus),
            "rocksdb" => Ok(Engine::RocksDb),
            "rocksdb-blob" | "rocksdb_blob" => Ok(Engine::RocksDbBlob),
            "device" => Ok(Engine::Device),
            "redis" => Ok(Engine::Redis),
            other => bail!(
                "unknown engine {other:?} (expected cerberus, rocksdb, rocksdb-blob, device or \
                 redis)"
            ),
        }
    }

    /// Checks, before anything runs, that this binary can open the engine with `config`.
    pub fn check(self, config: &OpenConfig) -> Result<()> {
        match self {
            Engine::Cerberus | Engine::Device => Ok(()),
            Engine::Redis => {
                if !cfg!(feature = "redis") {
                    bail!(
                        "this cerberus-bench was built without Redis: run scripts/install-peers, \
                         then build with `--features redis`"
                    );
                }
                if config.storage == StorageArg::Nand {
                    bail!("--storage nand is not supported by redis");
                }
                Ok(())
            }
            Engine::RocksDb | Engine::RocksDbBlob => {
                if !cfg!(feature = "rocksdb") {
                    bail!(
                        "this cerberus-bench was built without RocksDB: run scripts/install-peers, \
                         then build with `--features rocksdb` (or run scripts/bench-rocksdb, \
                         which does both)"
                    );
                }
                if config.storage == StorageArg::Nand {
                    bail!("--storage nand is only supported by the cerberus engine");
                }
                Ok(())
            }
        }
    }
}

/// Storage under the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageArg {
    /// Real files.
    Posix,
    /// Real files behind Cerberus's NAND-flash timing model.
    Nand,
}

impl StorageArg {
    pub fn name(self) -> &'static str {
        match self {
            StorageArg::Posix => "posix",
            StorageArg::Nand => "nand",
        }
    }
}

/// How to open a database.
#[derive(Clone, Debug)]
pub struct OpenConfig {
    pub path: PathBuf,
    pub storage: StorageArg,
    pub cache_bytes: u64,
    /// Cerberus: `Options::mmap_reads`.
    pub mmap_reads: bool,
    pub sync: bool,
    /// Tenants the run will create (0: not a multitenant run). RocksDB makes its column
    /// families at open.
    #[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
    pub tenants: usize,
    pub layout: LayoutArg,
    /// Engine sizes of `--profile`; `None` keeps each engine's defaults.
    pub profile: Option<SizeProfile>,
    /// The device engine: `HOST:PORT` of a running device, or `local` (start one here).
    pub device: Option<String>,
    /// Admin credential of a remote device.
    pub admin_secret: Option<String>,
    /// `--device local`: the value read-ahead of the device's iterators
    /// (`DeviceConfig::iterator_prefetch_degree`; seekrandom's `--prefetch-degree`, so that the
    /// device scans as the embedded engine does). `None`: the device's default.
    pub device_prefetch_degree: Option<usize>,
}

/// Opens (creating if needed) the database of `engine` at `config.path`.
pub fn open(engine: Engine, config: &OpenConfig) -> Result<Arc<dyn BenchDb>> {
    engine.check(config)?;
    std::fs::create_dir_all(&config.path)?;
    match engine {
        Engine::Cerberus => Ok(Arc::new(cerberus::CerberusDb::open(config)?)),
        Engine::Device => Ok(Arc::new(device::DeviceDb::open(config)?)),
        #[cfg(feature = "rocksdb")]
        Engine::RocksDb => Ok(Arc::new(rocksdb::RocksDb::open(config, false)?)),
        #[cfg(feature = "rocksdb")]
        Engine::RocksDbBlob => Ok(Arc::new(rocksdb::RocksDb::open(config, true)?)),
        #[cfg(not(feature = "rocksdb"))]
        Engine::RocksDb | Engine::RocksDbBlob => unreachable!("checked above"),
        #[cfg(feature = "redis")]
        Engine::Redis => Ok(Arc::new(redis::RedisDb::open(config)?)),
        #[cfg(not(feature = "redis"))]
        Engine::Redis => unreachable!("checked above"),
    }
}
