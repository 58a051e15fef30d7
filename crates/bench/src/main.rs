//! `cerberus-bench WORKLOAD[,WORKLOAD...] [flags]`: db_bench-style benchmarks of Cerberus and,
//! with the `rocksdb` feature, of RocksDB, run in one process so that figures compare.

mod bts;
mod commands;
mod dataset;
mod engine;
mod histogram;
mod itermem;
mod local_device;
mod memory;
mod multitenant;
mod plot;
mod profile;
mod queries;
mod report;
mod rounds;
mod seek;
mod workload;

use anyhow::{bail, Context, Result};
use clap::Parser;
use engine::{Engine, LayoutArg, OpenConfig, StorageArg};
use profile::ProfileArg;
use report::{PhaseReport, RunConfig, RunReport};
use std::path::PathBuf;
use std::process::ExitCode;

/// The engine frees on background threads what writers allocated (frozen memtables); mimalloc
/// handles such cross-thread frees without contending on one arena lock, unlike glibc malloc.
/// Wrapped to count heap bytes while `itermem` measures (off otherwise: one relaxed load per
/// call).
#[global_allocator]
static GLOBAL: memory::CountingAlloc<mimalloc::MiMalloc> =
    memory::CountingAlloc::new(mimalloc::MiMalloc);
use workload::{BenchConfig, ValuePool, Workload};

/// Runs the listed workloads in order on one database, as db_bench's --benchmarks does.
#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench",
    version,
    about,
    long_about = None,
    after_help = "Other commands (each with its own --help): `cerberus-bench plot` (charts of a \
                  multitenant grid), `cerberus-bench plot-iterators` (tables and charts of an \
                  iterator sweep), `cerberus-bench itermem` (what open iterators hold over many \
                  tables), `cerberus-bench dataset` (the paper's glacier and tweets datasets), \
                  `cerberus-bench queries` (the paper's secondary-key queries, and SQLite)."
)]
struct Args {
    /// Comma-separated workloads: fillseq, fillrandom, overwrite, readrandom,
    /// readwhilewriting, seekrandom (--seeks random seeks, each followed by reading
    /// --scan-length entries), flush, compact; or `multitenant` alone (one thread per tenant,
    /// which puts then gets in its own namespace; uses --tenants and --num-per-tenant, not
    /// --num and --threads).
    workloads: String,

    /// Engines to run the whole list on, in turn, each on a fresh database (the machine's dirty
    /// pages are written back before each starts): cerberus,
    /// rocksdb, rocksdb-blob (RocksDB with blob files: values of at least Cerberus's
    /// inline_value_threshold bytes in blob files, as Cerberus's value log), device (Cerberus
    /// through the network, see --device), redis (a `redis-server` started on a loopback
    /// port; the `redis` feature), or several (`cerberus,rocksdb`,
    /// `cerberus,rocksdb,rocksdb-blob`, `cerberus,device`, `device,redis`: also prints the
    /// first one's ratio to each other) [default: cerberus, or device when --device is given].
    #[arg(long)]
    engine: Option<String>,

    /// Run through the network: `HOST:PORT` of a running device, or `local` to start a device
    /// in this process on a loopback port (same storage and cache as the embedded runs).
    #[arg(long)]
    device: Option<String>,

    /// Admin credential of the device given by --device HOST:PORT.
    #[arg(long, env = "CERBERUS_ADMIN_SECRET", hide_env_values = true)]
    admin_secret: Option<String>,

    /// Number of keys (and of operations per phase).
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,

    /// Bytes of each key.
    #[arg(long, default_value_t = 16)]
    key_size: usize,

    /// Bytes of each value.
    #[arg(long, default_value_t = 1024)]
    value_size: usize,

    /// Threads sharing each phase's operations (readwhilewriting: readers, plus one writer).
    #[arg(long, default_value_t = 1)]
    threads: usize,

    /// Operations each thread sends together before waiting for their answers (fill and
    /// read workloads; through a device or Redis, pipelined on the connection; each op's
    /// latency is its batch's).
    #[arg(long, default_value_t = 1)]
    pipeline: usize,

    /// Storage under Cerberus (nand: real files behind the NAND timing model).
    #[arg(long, value_enum, default_value_t = StorageArg::Posix)]
    storage: StorageArg,

    /// Cache bytes: Cerberus's filter and index cache, RocksDB's LRU block cache.
    #[arg(long, default_value_t = cerberus_engine::Options::default().cache_bytes)]
    cache_bytes: u64,

    /// Sync (fsync) every write.
    #[arg(long)]
    sync: bool,

    /// Cerberus on posix: read through memory maps (Options::mmap_reads) or with pread.
    #[arg(long, value_name = "on|off", value_parser = seek::parse_on_off, default_value = "on",
          action = clap::ArgAction::Set)]
    mmap_reads: bool,

    /// Runs the engine list this many times, the engines in turn (device, redis, device, ...),
    /// each on a fresh database, and prints each phase's median over the rounds and the
    /// median of the ratios taken within each round: this machine's speed drifts by the
    /// minute, and alternating keeps the engines under the same drift.
    #[arg(long, default_value_t = 1)]
    rounds: usize,

    /// Database directory, reused if it exists (default: a temporary one deleted at the end).
    /// With several engines each gets its own subdirectory named after it.
    #[arg(long)]
    db: Option<PathBuf>,

    /// Writes the results as JSON to this file (an array when several engines or rounds ran).
    #[arg(long)]
    json: Option<PathBuf>,

    /// Seed of the key and value generators.
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Fraction of each value that is random, the rest repeating it (as db_bench's
    /// --compression_ratio); 1.0 makes values incompressible.
    #[arg(long, default_value_t = 0.5)]
    compression_ratio: f64,

    /// multitenant: tenants (namespaces), one thread each [default: 4].
    #[arg(long)]
    tenants: Option<usize>,

    /// multitenant: keys each tenant puts (random keys of 0..this), then gets [default: 100000].
    #[arg(long)]
    num_per_tenant: Option<u64>,

    /// multitenant: gets each tenant makes in the get phase, of keys picked uniformly among
    /// those it wrote [default: --num-per-tenant].
    #[arg(long)]
    gets_per_tenant: Option<u64>,

    /// multitenant: how tenants share the database: per_namespace, shared (one tree, keys
    /// prefixed by the tenant), baseline (one namespace, keys suffixed by the tenant: the
    /// paper's KVSSD baseline) [default: per_namespace].
    #[arg(long, value_enum)]
    layout: Option<LayoutArg>,

    /// multitenant: engine sizes to use instead of the engines' defaults (see README).
    #[arg(long, value_enum)]
    profile: Option<ProfileArg>,

    /// multitenant: go from the put phase straight to the get phase, without first letting
    /// the engine flush and finish its compactions.
    #[arg(long)]
    no_settle: bool,

    #[command(flatten)]
    seek: seek::SeekArgs,
}

/// The multitenant workload's name on the command line.
const MULTITENANT: &str = "multitenant";
const DEFAULT_TENANTS: usize = 4;
const DEFAULT_NUM_PER_TENANT: u64 = 100_000;

/// Whether the workload list asks for the multitenant workload (which must be alone).
fn is_multitenant(list: &str) -> Result<bool> {
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
fn open_config(
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
        sync: args.sync,
        tenants,
        layout,
        profile,
        device: args.device.clone(),
        admin_secret: args.admin_secret.clone(),
        device_prefetch_degree: None,
    }
}

/// `--engine`, defaulting to the device when `--device` is given.
fn engine_list(args: &Args) -> String {
    match (&args.engine, &args.device) {
        (Some(e), _) => e.clone(),
        (None, Some(_)) => "device".into(),
        (None, None) => "cerberus".into(),
    }
}

fn parse_engines(list: &str) -> Result<Vec<Engine>> {
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

fn main() -> ExitCode {
    if let Some(code) = commands::dispatch() {
        return code;
    }
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cerberus-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    if is_multitenant(&args.workloads)? {
        return run_multitenant(args);
    }
    if args.tenants.is_some()
        || args.num_per_tenant.is_some()
        || args.gets_per_tenant.is_some()
        || args.layout.is_some()
        || args.profile.is_some()
    {
        bail!(
            "--tenants, --num-per-tenant, --gets-per-tenant, --layout and --profile are for \
             the {MULTITENANT} workload"
        );
    }
    let workloads = Workload::parse_list(&args.workloads)?;
    let scan = args.seek.config(&workloads)?;
    let engines = parse_engines(&engine_list(&args))?;
    if args.num == 0 {
        bail!("--num must be at least 1");
    }
    if args.threads == 0 || args.pipeline == 0 {
        bail!("--threads and --pipeline must be at least 1");
    }
    if !(0.0..=1.0).contains(&args.compression_ratio) {
        bail!("--compression-ratio must be between 0 and 1");
    }
    workload::KeyFormat::new(args.key_size, args.num)?;

    let bench = BenchConfig {
        num: args.num,
        key_size: args.key_size,
        value_size: args.value_size,
        threads: args.threads,
        pipeline: args.pipeline,
        seed: args.seed,
        compression_ratio: args.compression_ratio,
        scan,
    };
    let run_config = RunConfig {
        workload: &args.workloads,
        bench: &bench,
        storage: args.storage.name(),
        cache_bytes: args.cache_bytes,
        sync: args.sync,
    };
    let open_config = |path: PathBuf| OpenConfig {
        device_prefetch_degree: scan.map(|s| s.prefetch_degree),
        ..open_config(&args, path, 0, LayoutArg::default(), None)
    };
    // Refuse an engine this binary cannot run before running any.
    for &e in &engines {
        e.check(&open_config(PathBuf::new()))?;
    }

    let temp = temp_dir(&args)?;
    let values = ValuePool::new(args.value_size, args.compression_ratio, args.seed);

    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    let mut runs = Vec::new();
    for (round, n, engine) in
        (0..args.rounds).flat_map(|r| engines.iter().enumerate().map(move |(n, &e)| (r, n, e)))
    {
        let path = db_path(&args, temp.as_ref(), &engines, engine);
        if round > 0 || n > 0 {
            println!();
        }
        if args.rounds > 1 {
            println!("round {} of {}", round + 1, args.rounds);
        }
        println!("{}", report::header(engine, &run_config, &path));
        write_back_dirty_pages();
        let db = engine::open(engine, &open_config(path.clone()))?;

        let mut phases = Vec::new();
        for (i, &w) in workloads.iter().enumerate() {
            let before = db.db_stats();
            let outcome = workload::run::run_phase(&*db, w, i, &bench, &values)
                .with_context(|| format!("{} on {}", w.name(), engine.name()))?;
            let delta = match (before, db.db_stats()) {
                (Some(b), Some(a)) => Some(report::measures::stats_delta(&b, &a)),
                _ => None,
            };
            println!("{}", report::phase_lines(&outcome));
            phases.push(PhaseReport { outcome, delta });
        }

        let stats = db.stats_json();
        if let Some(s) = db.db_stats() {
            println!("\n{}", report::cerberus_summary(&s, &phases));
        }
        db.close()
            .with_context(|| format!("closing {}", engine.name()))?;
        drop(db);
        if temp.is_some() {
            // Fresh database per engine; free the disk before the next one.
            let _ = std::fs::remove_dir_all(&path);
        }
        runs.push(RunReport {
            engine,
            round,
            phases,
            stats,
        });
    }

    if args.rounds > 1 {
        println!("\n{}", rounds::table(&runs, engines.len()));
    } else if runs.len() > 1 {
        println!("\n{}", report::ratio_table(&runs));
    }

    if let Some(json_path) = &args.json {
        let docs: Vec<_> = runs
            .iter()
            .map(|r| report::run_doc(r, &run_config))
            .collect();
        write_json(json_path, &docs)?;
    }
    Ok(())
}

/// The temporary directory the databases go in when there is no --db.
/// Writes the machine's dirty pages back (`sync`) before an engine starts, so that the
/// writeback of what the engine before it wrote (gigabytes at 4,000,000 keys) does not run
/// during this one's phases: the first engine of a run paid for the previous run's writes and
/// scanned 0.55x as fast.
fn write_back_dirty_pages() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

fn temp_dir(args: &Args) -> Result<Option<tempfile::TempDir>> {
    match &args.db {
        Some(_) => Ok(None),
        None => Ok(Some(
            tempfile::Builder::new()
                .prefix("cerberus-bench-")
                .tempdir()
                .context("creating a temporary directory")?,
        )),
    }
}

/// Where `engine`'s database goes.
fn db_path(
    args: &Args,
    temp: Option<&tempfile::TempDir>,
    engines: &[Engine],
    engine: Engine,
) -> PathBuf {
    match (&args.db, temp) {
        (Some(db), _) if engines.len() == 1 => db.clone(),
        (Some(db), _) => db.join(engine.name()),
        (None, Some(t)) => t.path().join(engine.name()),
        (None, None) => unreachable!("a temporary directory when there is no --db"),
    }
}

/// Writes the JSON documents: one engine, one object; several, an array of them.
fn write_json<T: serde::Serialize>(path: &std::path::Path, docs: &[T]) -> Result<()> {
    let text = if docs.len() == 1 {
        serde_json::to_string_pretty(&docs[0])?
    } else {
        serde_json::to_string_pretty(docs)?
    };
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// The multitenant run the flags ask for.
fn mt_config(args: &Args) -> multitenant::MtConfig {
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

/// The multitenant workload on each engine in turn.
fn run_multitenant(args: Args) -> Result<()> {
    use multitenant::report as mt_report;
    let engines = parse_engines(&engine_list(&args))?;
    args.seek.config(&[])?;
    let mt = mt_config(&args);
    if mt.tenants == 0 {
        bail!("--tenants must be at least 1");
    }
    if mt.tenants > u32::MAX as usize {
        bail!("--tenants is too large");
    }
    if mt.num_per_tenant == 0 {
        bail!("--num-per-tenant must be at least 1");
    }
    if mt.gets_per_tenant == 0 {
        bail!("--gets-per-tenant must be at least 1");
    }
    if !(0.0..=1.0).contains(&args.compression_ratio) {
        bail!("--compression-ratio must be between 0 and 1");
    }
    workload::KeyFormat::new(args.key_size, mt.num_per_tenant)
        .context("keys of --num-per-tenant")?;
    let sizes = mt.sizes();
    let run_config = mt_report::MtRunConfig {
        mt: &mt,
        storage: args.storage.name(),
        cache_bytes: args.cache_bytes,
        sync: args.sync,
    };
    let open_config =
        |path: PathBuf| open_config(&args, path, mt.tenants, mt.layout, sizes.clone());
    for &e in &engines {
        e.check(&open_config(PathBuf::new()))?;
    }
    let temp = temp_dir(&args)?;
    let values = ValuePool::new(args.value_size, args.compression_ratio, args.seed);

    let mut runs = Vec::new();
    for (n, &engine) in engines.iter().enumerate() {
        let path = db_path(&args, temp.as_ref(), &engines, engine);
        if n > 0 {
            println!();
        }
        println!(
            "{}",
            mt_report::header(engine, &run_config, sizes.as_ref(), &path)
        );
        // The peak memory of each engine's run is its own.
        memory::reset_peak();
        write_back_dirty_pages();
        let db = engine::open(engine, &open_config(path.clone()))?;
        let run = multitenant::run(&*db, &mt, &values)
            .with_context(|| format!("{MULTITENANT} on {}", engine.name()))?;
        let per_tenant = |f: fn(&multitenant::TenantResult) -> f64| -> Vec<f64> {
            run.tenants.iter().map(f).collect()
        };
        println!(
            "{}",
            mt_report::mt_phase_lines(&run.put, &per_tenant(|t| t.put.ops_per_sec()))
        );
        println!(
            "{}",
            mt_report::mt_phase_lines(&run.get, &per_tenant(|t| t.get.ops_per_sec()))
        );
        println!("\n{}", mt_report::tenant_table(&run));
        let summary = mt_report::summary(&run, &mt);
        println!("\n{}", mt_report::summary_text(&summary));
        if let Some(text) = mt_report::cost_model_text(&run, &summary, mt.layout.one_namespace()) {
            println!("\n{text}");
        }
        let stats = db.stats_json();
        if let Some(s) = db.db_stats() {
            let phases = [
                report::PhaseReport {
                    outcome: run.put.outcome.clone(),
                    delta: run.put.delta.clone(),
                },
                report::PhaseReport {
                    outcome: run.get.outcome.clone(),
                    delta: run.get.delta.clone(),
                },
            ];
            println!("\n{}", report::cerberus_summary(&s, &phases));
        }
        db.close()
            .with_context(|| format!("closing {}", engine.name()))?;
        drop(db);
        if temp.is_some() {
            let _ = std::fs::remove_dir_all(&path);
        }
        runs.push((engine, run, stats));
    }

    if runs.len() > 1 {
        let reports: Vec<RunReport> = runs
            .iter()
            .map(|(engine, run, _)| RunReport {
                engine: *engine,
                round: 0,
                phases: vec![
                    report::PhaseReport {
                        outcome: run.put.outcome.clone(),
                        delta: None,
                    },
                    report::PhaseReport {
                        outcome: run.get.outcome.clone(),
                        delta: None,
                    },
                ],
                stats: serde_json::Value::Null,
            })
            .collect();
        println!("\n{}", report::ratio_table(&reports));
    }

    if let Some(json_path) = &args.json {
        let docs: Vec<_> = runs
            .iter()
            .map(|(engine, run, stats)| {
                mt_report::run_doc(*engine, run, &run_config, sizes.as_ref(), stats)
            })
            .collect();
        write_json(json_path, &docs)?;
    }
    let misses: u64 = runs
        .iter()
        .flat_map(|(_, run, _)| &run.tenants)
        .map(|t| t.get_misses)
        .sum();
    if misses > 0 {
        bail!("{misses} gets did not find a key their tenant had written");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_parse() {
        assert_eq!(
            parse_engines("cerberus,rocksdb").unwrap(),
            vec![Engine::Cerberus, Engine::RocksDb]
        );
        assert!(parse_engines("cerberus,cerberus").is_err());
        assert!(parse_engines("leveldb").is_err());
    }

    #[test]
    fn cli_parses() {
        Args::command_for_test();
        let a = Args::try_parse_from([
            "cerberus-bench",
            "fillrandom,readrandom",
            "--num",
            "1000",
            "--storage",
            "nand",
            "--sync",
        ])
        .unwrap();
        assert_eq!(a.num, 1000);
        assert_eq!(a.storage, StorageArg::Nand);
        assert!(a.sync);
        assert_eq!(engine_list(&a), "cerberus");
        let d =
            Args::try_parse_from(["cerberus-bench", "readrandom", "--device", "local"]).unwrap();
        assert_eq!(engine_list(&d), "device");
    }

    #[test]
    fn multitenant_runs_alone_and_its_flags_parse() {
        assert!(is_multitenant("multitenant").unwrap());
        assert!(is_multitenant(" MultiTenant ,").unwrap());
        assert!(!is_multitenant("fillrandom,readrandom").unwrap());
        assert!(is_multitenant("fillrandom,multitenant").is_err());
        let a = Args::try_parse_from([
            "cerberus-bench",
            "multitenant",
            "--tenants",
            "8",
            "--num-per-tenant",
            "5000",
            "--layout",
            "shared",
            "--profile",
            "paper",
        ])
        .unwrap();
        assert_eq!(a.tenants, Some(8));
        assert_eq!(a.num_per_tenant, Some(5000));
        assert_eq!(a.layout, Some(LayoutArg::Shared));
        assert_eq!(a.profile, Some(ProfileArg::Paper));
        for layout in ["per_namespace", "per-namespace"] {
            let a = Args::try_parse_from(["cerberus-bench", "multitenant", "--layout", layout])
                .unwrap();
            assert_eq!(a.layout, Some(LayoutArg::PerNamespace));
        }
        // Gets per tenant default to the keys per tenant.
        assert_eq!(mt_config(&a).gets_per_tenant, 5000);
        let a = Args::try_parse_from([
            "cerberus-bench",
            "multitenant",
            "--layout",
            "baseline",
            "--gets-per-tenant",
            "700",
        ])
        .unwrap();
        assert_eq!(a.layout, Some(LayoutArg::Baseline));
        assert_eq!(a.gets_per_tenant, Some(700));
        let mt = mt_config(&a);
        assert_eq!(mt.layout, LayoutArg::Baseline);
        assert_eq!(mt.num_per_tenant, DEFAULT_NUM_PER_TENANT);
        assert_eq!(mt.gets_per_tenant, 700);
        assert!(
            Args::try_parse_from(["cerberus-bench", "multitenant", "--layout", "suffix"]).is_err()
        );
        let a = Args::try_parse_from(["cerberus-bench", "multitenant", "--gets-per-tenant", "0"])
            .unwrap();
        let err = run(a).unwrap_err().to_string();
        assert!(err.contains("--gets-per-tenant"), "{err}");
        let a = Args::try_parse_from(["cerberus-bench", "readrandom", "--gets-per-tenant", "5"])
            .unwrap();
        let err = run(a).unwrap_err().to_string();
        assert!(err.contains("multitenant"), "{err}");
        // Multitenant flags with other workloads are refused before anything runs.
        let a = Args::try_parse_from(["cerberus-bench", "fillrandom", "--tenants", "2"]).unwrap();
        let err = run(a).unwrap_err().to_string();
        assert!(err.contains("multitenant"), "{err}");
        let a = Args::try_parse_from(["cerberus-bench", "multitenant", "--tenants", "0"]).unwrap();
        assert!(run(a).is_err());
    }

    impl Args {
        fn command_for_test() {
            use clap::CommandFactory;
            Args::command().debug_assert();
        }
    }

    #[cfg(not(feature = "rocksdb"))]
    #[test]
    fn rocksdb_without_the_feature_says_how_to_get_it() {
        let cfg = OpenConfig {
            path: PathBuf::new(),
            storage: StorageArg::Posix,
            cache_bytes: 0,
            mmap_reads: true,
            sync: false,
            tenants: 0,
            layout: LayoutArg::PerNamespace,
            profile: None,
            device: None,
            admin_secret: None,
            device_prefetch_degree: None,
        };
        for engine in [Engine::RocksDb, Engine::RocksDbBlob] {
            let err = engine.check(&cfg).unwrap_err().to_string();
            assert!(err.contains("--features rocksdb"), "{err}");
            assert!(err.contains("install-peers"), "{err}");
        }
    }
}
