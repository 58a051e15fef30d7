//! The engines a benchmark can run on, behind one small trait.

mod cerberus;
mod device;
#[cfg(feature = "rocksdb")]
mod rocksdb;

use crate::profile::SizeProfile;
use anyhow::{bail, Result};
use cerberus_engine::{DbStats, NamespaceStats};
use std::path::PathBuf;
use std::sync::Arc;

/// What the workloads need from a database. Shared by all worker threads of a phase.
pub trait BenchDb: Send + Sync {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Whether the key was found.
    fn get(&self, key: &[u8]) -> Result<bool>;
    /// Writes the memtable out.
    fn flush(&self) -> Result<()>;
    /// Compacts the whole key range.
    fn compact(&self) -> Result<()>;
    /// Flushes and waits until background compactions are done (db_bench's
    /// `waitforcompaction`).
    fn settle(&self) -> Result<()> {
        self.flush()
    }
    /// Cerberus's own counters; `None` for other engines.
    fn db_stats(&self) -> Option<DbStats> {
        None
    }
    /// Whole-run statistics of the engine, as JSON.
    fn stats_json(&self) -> serde_json::Value;
    /// Flushes what must be durable and releases the database.
    fn close(&self) -> Result<()>;

    /// Creates the tenants `tenant-0` .. `tenant-{n-1}` (Cerberus: namespaces; RocksDB: column
    /// families or key prefixes, set up at open from `OpenConfig::tenants`), or finds them if
    /// the database already has them.
    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        let _ = n;
        bail!("this engine has no tenants")
    }
    /// Puts into a tenant's key space.
    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        let _ = (tenant, key, value);
        bail!("this engine has no tenants")
    }
    /// Gets from a tenant's key space; whether the key was found.
    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        let _ = (tenant, key);
        bail!("this engine has no tenants")
    }
    /// The counters of one tenant (Cerberus's namespace); `None` for other engines.
    fn tenant_stats(&self, tenant: &TenantHandle) -> Result<Option<NamespaceStats>> {
        let _ = tenant;
        Ok(None)
    }
}

/// One tenant of a database, as `BenchDb::create_tenants` made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantHandle {
    /// Position in `0..tenants`.
    pub index: usize,
    /// Cerberus: the namespace id; RocksDB: the index (the key prefix of the shared layout).
    pub id: u32,
    /// `tenant-{index}`: the namespace or column family name.
    pub name: String,
}

impl TenantHandle {
    pub fn name_of(index: usize) -> String {
        format!("tenant-{index}")
    }
}

/// How tenants share the database (`--layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    /// Cerberus: one tree per namespace below L0; RocksDB: one column family per tenant.
    #[default]
    #[value(name = "per_namespace", alias = "per-namespace")]
    PerNamespace,
    /// One tree for all tenants, keys prefixed by the tenant (Cerberus: `Layout::Shared`;
    /// RocksDB: the default column family, keys prefixed by the 4-byte big-endian tenant index).
    Shared,
}

impl LayoutArg {
    pub fn name(self) -> &'static str {
        match self {
            LayoutArg::PerNamespace => "per_namespace",
            LayoutArg::Shared => "shared",
        }
    }
}

/// An engine named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Cerberus,
    RocksDb,
    /// Cerberus through the network, as a device (`--device`).
    Device,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cerberus => "cerberus",
            Engine::RocksDb => "rocksdb",
            Engine::Device => "device",
        }
    }

    pub fn parse(s: &str) -> Result<Engine> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cerberus" => Ok(Engine::Cerberus),
            "rocksdb" => Ok(Engine::RocksDb),
            "device" => Ok(Engine::Device),
            other => bail!("unknown engine {other:?} (expected cerberus, rocksdb or device)"),
        }
    }

    /// Checks, before anything runs, that this binary can open the engine with `config`.
    pub fn check(self, config: &OpenConfig) -> Result<()> {
        match self {
            Engine::Cerberus | Engine::Device => Ok(()),
            Engine::RocksDb => {
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
}

/// Opens (creating if needed) the database of `engine` at `config.path`.
pub fn open(engine: Engine, config: &OpenConfig) -> Result<Arc<dyn BenchDb>> {
    engine.check(config)?;
    std::fs::create_dir_all(&config.path)?;
    match engine {
        Engine::Cerberus => Ok(Arc::new(cerberus::CerberusDb::open(config)?)),
        Engine::Device => Ok(Arc::new(device::DeviceDb::open(config)?)),
        #[cfg(feature = "rocksdb")]
        Engine::RocksDb => Ok(Arc::new(rocksdb::RocksDb::open(config)?)),
        #[cfg(not(feature = "rocksdb"))]
        Engine::RocksDb => unreachable!("checked above"),
    }
}
