//! The engines a benchmark can run on, behind one small trait.

mod cerberus;
#[cfg(feature = "rocksdb")]
mod rocksdb;

use anyhow::{bail, Result};
use cerberus_engine::DbStats;
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
    /// Cerberus's own counters; `None` for other engines.
    fn db_stats(&self) -> Option<DbStats> {
        None
    }
    /// Whole-run statistics of the engine, as JSON.
    fn stats_json(&self) -> serde_json::Value;
    /// Flushes what must be durable and releases the database.
    fn close(&self) -> Result<()>;
}

/// An engine named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Cerberus,
    RocksDb,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cerberus => "cerberus",
            Engine::RocksDb => "rocksdb",
        }
    }

    pub fn parse(s: &str) -> Result<Engine> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cerberus" => Ok(Engine::Cerberus),
            "rocksdb" => Ok(Engine::RocksDb),
            other => bail!("unknown engine {other:?} (expected cerberus or rocksdb)"),
        }
    }

    /// Checks, before anything runs, that this binary can open the engine with `config`.
    pub fn check(self, config: &OpenConfig) -> Result<()> {
        match self {
            Engine::Cerberus => Ok(()),
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
}

/// Opens (creating if needed) the database of `engine` at `config.path`.
pub fn open(engine: Engine, config: &OpenConfig) -> Result<Arc<dyn BenchDb>> {
    engine.check(config)?;
    std::fs::create_dir_all(&config.path)?;
    match engine {
        Engine::Cerberus => Ok(Arc::new(cerberus::CerberusDb::open(config)?)),
        #[cfg(feature = "rocksdb")]
        Engine::RocksDb => Ok(Arc::new(rocksdb::RocksDb::open(config)?)),
        #[cfg(not(feature = "rocksdb"))]
        Engine::RocksDb => unreachable!("checked above"),
    }
}
