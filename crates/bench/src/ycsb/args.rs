//! The command line of `cerberus-bench ycsb`.

use super::run::Config;
use super::workload::{Distribution, Workload};
use anyhow::{bail, Result};
use cerberus_bench_engines::{LayoutArg, OpenConfig, StorageArg};
use clap::Parser;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench ycsb",
    bin_name = "cerberus-bench ycsb",
    about = "YCSB core workloads A-F: load --record-count records, then --operation-count \
             operations of the workload's mix"
)]
pub struct Args {
    /// Workloads, comma-separated: a (50% read, 50% update), b (95/5 read/update), c (read
    /// only), d (95% read of the latest, 5% insert), e (95% scan, 5% insert), f (50% read, 50%
    /// read-modify-write); each on a fresh database.
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// Engines, comma-separated, as the workload list's --engine (cerberus, fjall, rocksdb,
    /// lmdb, device, redis, ...); the first one's ratio to each other is printed.
    #[arg(long, default_value = "cerberus")]
    pub engine: String,
    /// The device engine's device: `local` (started in this process) or `HOST:PORT`.
    #[arg(long)]
    pub device: Option<String>,
    /// Admin credential of the device given by --device HOST:PORT.
    #[arg(long, env = "CERBERUS_ADMIN_SECRET", hide_env_values = true)]
    pub admin_secret: Option<String>,
    /// Records loaded before the operations (over all tenants).
    #[arg(long, default_value_t = 1_000_000)]
    pub record_count: u64,
    /// Operations of the run phase (per tenant with --tenants) [default: --record-count, or
    /// its share per tenant].
    #[arg(long)]
    pub operation_count: Option<u64>,
    /// Fields of a record, stored concatenated as one value.
    #[arg(long, default_value_t = 10)]
    pub field_count: usize,
    /// Bytes of each field.
    #[arg(long, default_value_t = 100)]
    pub field_length: usize,
    /// Longest scan of workload e (lengths uniform in 1..=this).
    #[arg(long, default_value_t = 100)]
    pub max_scan_length: usize,
    /// Request distribution instead of the workload's own (zipfian; latest for d).
    #[arg(long, value_enum)]
    pub distribution: Option<Distribution>,
    /// Client threads (per tenant with --tenants).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Tenants (namespaces), each loaded with its share of the records and running the
    /// workload with its own threads, all at once (0: none, the database's own key space).
    #[arg(long, default_value_t = 0)]
    pub tenants: usize,
    /// Runs the engine list this many times, every other round in reverse (as the workload
    /// list's --rounds).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Storage under Cerberus.
    #[arg(long, value_enum, default_value_t = StorageArg::Posix)]
    pub storage: StorageArg,
    /// Cache bytes: Cerberus's filter and index cache, RocksDB's block cache.
    #[arg(long, default_value_t = cerberus_engine::Options::default().cache_bytes)]
    pub cache_bytes: u64,
    /// Sync (fsync) every write.
    #[arg(long)]
    pub sync: bool,
    /// Where the databases go, each run (engine, workload, round) in a subdirectory deleted
    /// once the run ends (default: a temporary directory).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Writes the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Writes the comparison as markdown to this file: the command, when it started, and a
    /// table per workload and engine (the tables of docs/benchmarks.md).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Seed of the request and value generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

impl Args {
    /// The checked settings of one workload's run on one key space.
    pub fn config(&self, workload: Workload) -> Result<Config> {
        if self.threads == 0 || self.rounds == 0 {
            bail!("--threads and --rounds must be at least 1");
        }
        if self.field_count == 0 || self.field_length == 0 {
            bail!("--field-count and --field-length must be at least 1");
        }
        let spaces = self.tenants.max(1) as u64;
        let record_count = self.record_count / spaces;
        if record_count == 0 {
            bail!("--record-count must give every tenant a record");
        }
        if workload == Workload::E && self.tenants > 0 {
            bail!("workload e scans, and the bench has no cursor over a tenant's key space");
        }
        Ok(Config {
            workload,
            record_count,
            operation_count: self.operation_count.unwrap_or(record_count),
            threads: self.threads,
            record_bytes: self.field_count * self.field_length,
            max_scan_length: self.max_scan_length,
            distribution: self.distribution,
            seed: self.seed,
        })
    }

    /// How to open an engine's database at `path`.
    pub fn open_config(&self, path: &Path) -> OpenConfig {
        OpenConfig {
            storage: self.storage,
            cache_bytes: self.cache_bytes,
            sync: self.sync,
            tenants: self.tenants,
            device: self.device.clone(),
            admin_secret: self.admin_secret.clone(),
            largest_value: self.field_count.saturating_mul(self.field_length),
            ..OpenConfig::at(path, LayoutArg::PerNamespace)
        }
    }
}
