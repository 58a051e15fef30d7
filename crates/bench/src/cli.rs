//! The command line of the workload list (`cerberus-bench WORKLOAD[,WORKLOAD...] [flags]`) and
//! what it asks for: the engines, how to open them, the multitenant run.

use crate::multitenant;
use crate::workload::{self, seek};
use anyhow::{bail, Result};
use cerberus_bench_engines::profile::{self, ProfileArg};
use cerberus_bench_engines::{Engine, LayoutArg, OpenConfig, StorageArg};
use clap::Parser;
use std::path::PathBuf;

/// Runs the listed workloads in order on one database, as db_bench's --benchmarks does.
#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench",
    version,
    about,
    long_about = None,
    after_help = "Other commands (each with its own --help): `cerberus-bench plot` (charts of a \
                  multitenant grid), `cerberus-bench plot-iterators` (tables and charts of an \
                  iterator sweep), `cerberus-bench dataset` (the paper's glacier and tweets \
                  datasets), `cerberus-bench noisy` (a victim tenant's gets beside writing neighbours), \
                  `cerberus-bench floor` (fillrandom on the engine and on the floor of its \
                  design, alternated with --rounds), `cerberus-bench ycsb` (YCSB's core \
                  workloads A-F)."
)]
pub struct Args {
    /// Comma-separated workloads: fillseq, fillrandom, overwrite, readrandom,
    /// readwhilewriting, seekrandom (--seeks random seeks, each followed by reading
    /// --scan-length entries), flush, compact, waitforcompaction (flush and wait for the
    /// background compactions); or `multitenant` alone (one thread per tenant,
    /// which puts then gets in its own namespace; uses --tenants and --num-per-tenant, not
    /// --num and --threads).
    pub workloads: String,

    /// Engines to run the whole list on, in turn, each on a fresh database (the machine's dirty
    /// pages are written back before each starts): cerberus, rocksdb, rocksdb-blob (RocksDB
    /// with blob files: values of at least Cerberus's inline_value_threshold bytes in blob
    /// files, as Cerberus's value log), fjall, fjall-blob (the `fjall` feature; fjall-blob: its
    /// key-value separation at the same threshold), device (Cerberus through the network, see
    /// --device), device-nvme (a local device its clients reach over NVMe/TCP:
    /// `device-nvme,device` compares the wires), kvs (the same device through the SNIA
    /// key-value library in C, crates/kvs: its sync calls, its async calls with --pipeline;
    /// `device,kvs` measures the C layer), redis (a `redis-server` started on a loopback
    /// port; the `redis` feature), floor (the floor of Cerberus's write path: a buffered log
    /// append and a skiplist insert per put; puts only), floor-write (the same, the log
    /// written out after each put), floor-log (the same, the log written as the engine's:
    /// segments synced in order, written back early on a thread), lmdb (the `lmdb` feature), or several (`cerberus,rocksdb`,
    /// `cerberus,rocksdb,rocksdb-blob`, `cerberus,fjall,fjall-blob`, `cerberus,device`,
    /// `device,redis`: also prints the first one's ratio to each other) [default: cerberus, or
    /// device when --device is given].
    #[arg(long)]
    pub engine: Option<String>,

    /// Run through the network: `HOST:PORT` of a running device, or `local` to start a device
    /// in this process on a loopback port (same storage and cache as the embedded runs).
    #[arg(long)]
    pub device: Option<String>,

    /// The wire the device engine's clients speak: native, or nvme (NVMe/TCP through the
    /// vendor commands; with --device local, which then serves its NVMe/TCP target too).
    #[arg(long, value_name = "native|nvme", default_value = "native",
          value_parser = ["native", "nvme"])]
    pub wire: String,

    /// Admin credential of the device given by --device HOST:PORT.
    #[arg(long, env = "CERBERUS_ADMIN_SECRET", hide_env_values = true)]
    pub admin_secret: Option<String>,

    /// Number of keys (and of operations per phase).
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,

    /// Bytes of each key.
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,

    /// Bytes of each value.
    #[arg(long, default_value_t = 1024)]
    pub value_size: usize,

    /// Threads sharing each phase's operations (readwhilewriting: readers, plus one writer).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,

    /// Operations each thread sends together before waiting for their answers (fill and
    /// read workloads; through a device or Redis, pipelined on the connection; each op's
    /// latency is its batch's).
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,

    /// Storage under Cerberus (nand: real files behind the NAND timing model).
    #[arg(long, value_enum, default_value_t = StorageArg::Posix)]
    pub storage: StorageArg,

    /// Cache bytes: Cerberus's filter and index cache, RocksDB's LRU block cache.
    #[arg(long, default_value_t = cerberus_engine::Options::default().cache_bytes)]
    pub cache_bytes: u64,

    /// Cerberus's row cache (the embedded engine's `Options::row_cache_bytes`, a local
    /// device's `engine.row_cache_bytes`; 0: off) [default: the engine's off, the device's
    /// 256 MiB].
    #[arg(long)]
    pub row_cache_bytes: Option<u64>,

    /// Sync (fsync) every write.
    #[arg(long)]
    pub sync: bool,

    /// Cerberus on posix: read through memory maps (Options::mmap_reads) or with pread.
    #[arg(long, value_name = "on|off", value_parser = seek::parse_on_off, default_value = "on",
          action = clap::ArgAction::Set)]
    pub mmap_reads: bool,

    /// Runs the engine list this many times, the engines in turn, every other round in
    /// reverse (device, redis, redis, device, ...), each on a fresh database, and prints each
    /// phase's median over the rounds and the median of the ratios taken within each round:
    /// this machine's speed drifts by the minute, and alternating keeps the engines under the
    /// same drift.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,

    /// Database directory, reused if it exists (default: a temporary one deleted at the end).
    /// With several engines each gets its own subdirectory named after it. With --rounds,
    /// each round starts on a fresh database: the directory must be empty or absent, and
    /// the last round's database stays.
    #[arg(long)]
    pub db: Option<PathBuf>,

    /// Writes the results as JSON to this file (an array when several engines or rounds ran).
    #[arg(long)]
    pub json: Option<PathBuf>,

    /// Writes the comparison as markdown to this file: the command, when it started, and a
    /// table of each phase's ops/s and p99 per engine with the first engine's ratios (the
    /// tables of docs/benchmarks.md).
    #[arg(long)]
    pub markdown: Option<PathBuf>,

    /// Seed of the key and value generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Fraction of each value that is random, the rest repeating it (as db_bench's
    /// --compression_ratio); 1.0 makes values incompressible.
    #[arg(long, default_value_t = 0.5)]
    pub compression_ratio: f64,

    /// multitenant: tenants (namespaces), one thread each [default: 4].
    #[arg(long)]
    pub tenants: Option<usize>,

    /// multitenant: keys each tenant puts (random keys of 0..this), then gets [default: 100000].
    #[arg(long)]
    pub num_per_tenant: Option<u64>,

    /// multitenant: gets each tenant makes in the get phase, of keys picked uniformly among
    /// those it wrote [default: --num-per-tenant].
    #[arg(long)]
    pub gets_per_tenant: Option<u64>,

    /// multitenant: how tenants share the database: per_namespace, shared (one tree, keys
    /// prefixed by the tenant), baseline (one namespace, keys suffixed by the tenant: the
    /// paper's KVSSD baseline) [default: per_namespace].
    #[arg(long, value_enum)]
    pub layout: Option<LayoutArg>,

    /// multitenant: engine sizes to use instead of the engines' defaults (see README).
    #[arg(long, value_enum)]
    pub profile: Option<ProfileArg>,

    /// multitenant: go from the put phase straight to the get phase, without first letting
    /// the engine flush and finish its compactions.
    #[arg(long)]
    pub no_settle: bool,

    #[command(flatten)]
    pub seek: seek::SeekArgs,
}

/// The multitenant workload's name on the command line.
pub const MULTITENANT: &str = "multitenant";
pub const DEFAULT_TENANTS: usize = 4;
pub const DEFAULT_NUM_PER_TENANT: u64 = 100_000;

/// Whether the workload list asks for the multitenant workload (which must be alone).
pub fn is_multitenant(list: &str) -> Result<bool> {
    let names: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mt = names
        .iter()
        .filter(|n| n.eq_ignore_ascii_case(MULTITENANT))
        .count();
    match (mt, names.len()) {
        (0, _) => Ok(false),
        (1, 1) => Ok(true),
        _ => bail!("{MULTITENANT} runs alone, not in a list of workloads"),
    }
}

/// How to open each engine of a run: the storage flags, plus what the workload needs.
pub fn open_config(
    args: &Args,
    path: PathBuf,
    tenants: usize,
    layout: LayoutArg,
    profile: Option<profile::SizeProfile>,
) -> OpenConfig {
    OpenConfig {
        path,
        storage: args.storage,
        cache_bytes: args.cache_bytes,
        mmap_reads: args.mmap_reads,
        // A multitenant run reports a cost model of each search step's time.
        time_get_steps: tenants > 0,
        sync: args.sync,
        tenants,
        layout,
        profile,
        device: args.device.clone(),
        admin_secret: args.admin_secret.clone(),
        device_prefetch_degree: None,
        ordered_keys: false,
        largest_value: args.value_size,
    }
}

/// `--engine`, defaulting to the device when `--device` is given.
pub fn engine_list(args: &Args) -> String {
    match (&args.engine, &args.device) {
        (Some(e), _) => e.clone(),
        (None, Some(_)) => "device".into(),
        (None, None) => "cerberus".into(),
    }
}

pub fn parse_engines(list: &str) -> Result<Vec<Engine>> {
    let mut engines = Vec::new();
    for name in list.split(',').filter(|s| !s.trim().is_empty()) {
        let e = Engine::parse(name)?;
        if engines.contains(&e) {
            bail!("engine {} is listed twice", e.name());
        }
        engines.push(e);
    }
    if engines.is_empty() {
        bail!("no engine given");
    }
    Ok(engines)
}

/// The multitenant run the flags ask for.
pub fn mt_config(args: &Args) -> multitenant::MtConfig {
    let num_per_tenant = args.num_per_tenant.unwrap_or(DEFAULT_NUM_PER_TENANT);
    multitenant::MtConfig {
        tenants: args.tenants.unwrap_or(DEFAULT_TENANTS),
        num_per_tenant,
        gets_per_tenant: args.gets_per_tenant.unwrap_or(num_per_tenant),
        key_size: args.key_size,
        value_size: args.value_size,
        seed: args.seed,
        compression_ratio: args.compression_ratio,
        layout: args.layout.unwrap_or_default(),
        profile: args.profile,
        settle: !args.no_settle,
    }
}

impl Args {
    /// The flags every run checks the same way.
    pub fn check(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.compression_ratio) {
            bail!("--compression-ratio must be between 0 and 1");
        }
        Ok(())
    }

    /// The workload list's settings, checked; refuses the multitenant flags.
    pub fn bench_config(
        &self,
        scan: Option<workload::scan::ScanConfig>,
    ) -> Result<workload::BenchConfig> {
        if self.tenants.is_some()
            || self.num_per_tenant.is_some()
            || self.gets_per_tenant.is_some()
            || self.layout.is_some()
            || self.profile.is_some()
        {
            bail!(
                "--tenants, --num-per-tenant, --gets-per-tenant, --layout and --profile are for \
                 the {MULTITENANT} workload"
            );
        }
        if self.num == 0 {
            bail!("--num must be at least 1");
        }
        if self.threads == 0 || self.pipeline == 0 {
            bail!("--threads and --pipeline must be at least 1");
        }
        if self.rounds == 0 {
            bail!("--rounds must be at least 1");
        }
        self.check()?;
        workload::KeyFormat::new(self.key_size, self.num)?;
        Ok(workload::BenchConfig {
            num: self.num,
            key_size: self.key_size,
            value_size: self.value_size,
            threads: self.threads,
            pipeline: self.pipeline,
            seed: self.seed,
            compression_ratio: self.compression_ratio,
            scan,
        })
    }
}
