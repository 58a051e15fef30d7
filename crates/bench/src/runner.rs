//! The workload list, or the multitenant workload, on each engine in turn, each on a fresh
//! database: the reports printed as db_bench's, and the JSON.

use crate::cli::MULTITENANT;
use crate::cli::{engine_list, is_multitenant, mt_config, open_config, parse_engines, Args};
use crate::markdown::{self, RunContext};
use crate::multitenant::{self, report as mt_report, MtRun};
use crate::report::{self, PhaseReport, RunConfig, RunReport};
use crate::workload::{self, ValuePool, Workload};
use crate::{memory, rounds};
use anyhow::{bail, Context, Result};
use cerberus_bench_engines::{self as engine, BenchDb, Engine, LayoutArg, OpenConfig};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub fn run(args: Args) -> Result<()> {
    engine::set_row_cache_bytes(args.row_cache_bytes);
    engine::set_wire_nvme(args.wire == "nvme");
    if is_multitenant(&args.workloads)? {
        if args.markdown.is_some() {
            bail!(
                "--markdown is for the workload list (the multitenant workload has its grid-table)"
            );
        }
        return run_multitenant(args);
    }
    let context = RunContext::now();
    let workloads = Workload::parse_list(&args.workloads)?;
    let scan = args.seek.config(&workloads)?;
    let bench = args.bench_config(scan)?;
    let engines = parse_engines(&engine_list(&args))?;
    let run_config = RunConfig {
        workload: &args.workloads,
        bench: &bench,
        storage: args.storage.name(),
        cache_bytes: args.cache_bytes,
        sync: args.sync,
    };
    let open = |path: PathBuf| OpenConfig {
        device_prefetch_degree: scan.map(|s| s.prefetch_degree),
        ..open_config(&args, path, 0, LayoutArg::default(), None)
    };
    let values = ValuePool::new(args.value_size, args.compression_ratio, args.seed);
    let order = rounds::order(&engines, args.rounds);
    let header = |round: usize, engine, path: &Path| {
        let of = if args.rounds > 1 {
            format!("round {} of {}\n", round + 1, args.rounds)
        } else {
            String::new()
        };
        of + &report::header(engine, &run_config, path)
    };
    let runs = each_engine(
        &args,
        &engines,
        &order,
        open,
        header,
        |round, engine, db| {
            let mut phases = Vec::new();
            for (i, &w) in workloads.iter().enumerate() {
                let before = db.db_stats();
                let outcome = workload::run::run_phase(db, w, i, &bench, &values)
                    .with_context(|| format!("{} on {}", w.name(), engine.name()))?;
                let delta = match (before, db.db_stats()) {
                    (Some(b), Some(a)) => Some(report::measures::stats_delta(&b, &a)),
                    _ => None,
                };
                println!("{}", report::phase_lines(&outcome));
                phases.push(PhaseReport { outcome, delta });
            }
            if let Some(s) = db.db_stats() {
                println!("\n{}", report::cerberus_summary(&s, &phases));
            }
            let stats = db.stats_json();
            Ok(RunReport {
                engine,
                round,
                phases,
                stats,
            })
        },
    )?;
    if args.rounds > 1 {
        println!("\n{}", rounds::table(&runs, &engines));
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
    if let Some(path) = &args.markdown {
        let note = format!(
            "{} round(s), the engines alternated (every other round in reverse), each on a \
             fresh database; a ratio above 1: the first engine is faster.",
            args.rounds
        );
        markdown::write(
            path,
            &context.document(&note, &rounds::markdown(&runs, &engines)),
        )?;
    }
    Ok(())
}

/// Runs `body` on each `(round, engine)` of `order`, each on a fresh database: checks first
/// that this binary can open every engine, prints `header` before each, closes the database
/// after it and deletes it when it is a temporary one.
fn each_engine<T>(
    args: &Args,
    engines: &[Engine],
    order: &[(usize, Engine)],
    open: impl Fn(PathBuf) -> OpenConfig,
    header: impl Fn(usize, Engine, &Path) -> String,
    mut body: impl FnMut(usize, Engine, &dyn BenchDb) -> Result<T>,
) -> Result<Vec<T>> {
    // Refuse an engine this binary cannot run before running any.
    for &e in engines {
        e.check(&open(PathBuf::new()))?;
    }
    let temp = temp_dir(args)?;
    let repeated = match temp {
        Some(_) => HashSet::new(),
        None => repeated_paths(order.iter().map(|&(_, e)| db_path(args, None, engines, e))),
    };
    for path in &repeated {
        if holds_files(path)? {
            bail!(
                "{}: a database is there already; with --rounds each round starts on a fresh \
                 one, and the bench deletes only what it made (remove it, or choose another \
                 --db)",
                path.display()
            );
        }
    }
    let mut made = HashSet::new();
    let mut out = Vec::new();
    for (n, &(round, engine)) in order.iter().enumerate() {
        let path = db_path(args, temp.as_ref(), engines, engine);
        if repeated.contains(&path) && !made.insert(path.clone()) {
            // A later round: what the earlier one left there is this run's own.
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("clearing {} for the next round", path.display()))?;
        }
        if n > 0 {
            println!();
        }
        println!("{}", header(round, engine, &path));
        // The peak memory of each engine's run is its own.
        memory::reset_peak();
        write_back_dirty_pages();
        let db = engine::open(engine, &open(path.clone()))?;
        out.push(body(round, engine, &*db)?);
        db.close()
            .with_context(|| format!("closing {}", engine.name()))?;
        drop(db);
        if temp.is_some() {
            // Fresh database per engine; free the disk before the next one.
            let _ = std::fs::remove_dir_all(&path);
        }
    }
    Ok(out)
}

/// The paths `paths` holds more than once: an engine's rounds in a directory given by `--db`.
fn repeated_paths(paths: impl Iterator<Item = PathBuf>) -> HashSet<PathBuf> {
    let mut seen = HashSet::new();
    paths.filter(|p| !seen.insert(p.clone())).collect()
}

/// Whether directory `path` exists and holds anything.
fn holds_files(path: &Path) -> Result<bool> {
    match std::fs::read_dir(path) {
        Ok(mut entries) => Ok(entries.next().is_some()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes the machine's dirty pages back (`sync`) before an engine starts, so that the
/// writeback of what the engine before it wrote (gigabytes at 4,000,000 keys) does not run
/// during this one's phases: the first engine of a run paid for the previous run's writes and
/// scanned 0.55x as fast.
fn write_back_dirty_pages() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// The temporary directory the databases go in when there is no --db.
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
fn write_json<T: serde::Serialize>(path: &Path, docs: &[T]) -> Result<()> {
    let text = if docs.len() == 1 {
        serde_json::to_string_pretty(&docs[0])?
    } else {
        serde_json::to_string_pretty(docs)?
    };
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// The multitenant workload on each engine in turn.
fn run_multitenant(args: Args) -> Result<()> {
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
    args.check()?;
    workload::KeyFormat::new(args.key_size, mt.num_per_tenant)
        .context("keys of --num-per-tenant")?;
    let sizes = mt.sizes();
    let run_config = mt_report::MtRunConfig {
        mt: &mt,
        storage: args.storage.name(),
        cache_bytes: args.cache_bytes,
        sync: args.sync,
    };
    let open = |path: PathBuf| open_config(&args, path, mt.tenants, mt.layout, sizes.clone());
    let values = ValuePool::new(args.value_size, args.compression_ratio, args.seed);
    let order: Vec<(usize, Engine)> = engines.iter().map(|&e| (0, e)).collect();
    let header =
        |_, engine, path: &Path| mt_report::header(engine, &run_config, sizes.as_ref(), path);
    let runs = each_engine(&args, &engines, &order, open, header, |_, engine, db| {
        let run = multitenant::run(db, &mt, &values)
            .with_context(|| format!("{MULTITENANT} on {}", engine.name()))?;
        print_mt_run(&run, &mt, db);
        Ok((engine, run, db.stats_json()))
    })?;
    if runs.len() > 1 {
        let reports: Vec<RunReport> = runs
            .iter()
            .map(|(engine, run, _)| RunReport {
                engine: *engine,
                round: 0,
                phases: vec![run.put.without_delta(), run.get.without_delta()],
                stats: serde_json::Value::Null,
            })
            .collect();
        println!("\n{}", report::ratio_table(&reports));
    }
    if let Some(json_path) = &args.json {
        let docs: Vec<_> = runs
            .iter()
            .map(|(engine, run, stats)| {
                multitenant::json::run_doc(*engine, run, &run_config, sizes.as_ref(), stats)
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

/// What a multitenant run prints after it ends: its phases, tenants, summary and cost model.
fn print_mt_run(run: &MtRun, mt: &multitenant::MtConfig, db: &dyn BenchDb) {
    let per_tenant = |f: fn(&multitenant::TenantResult) -> f64| -> Vec<f64> {
        run.tenants.iter().map(f).collect()
    };
    let put = per_tenant(|t| t.put.ops_per_sec());
    println!("{}", mt_report::mt_phase_lines(&run.put, &put));
    let get = per_tenant(|t| t.get.ops_per_sec());
    println!("{}", mt_report::mt_phase_lines(&run.get, &get));
    println!("\n{}", mt_report::tenant_table(run));
    let summary = mt_report::summary(run, mt);
    println!("\n{}", mt_report::summary_text(&summary));
    if let Some(text) = mt_report::cost_model_text(run, &summary, mt.layout.one_namespace()) {
        println!("\n{text}");
    }
    if let Some(s) = db.db_stats() {
        let phases = [run.put.clone(), run.get.clone()];
        println!("\n{}", report::cerberus_summary(&s, &phases));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::DEFAULT_NUM_PER_TENANT;
    use cerberus_bench_engines::profile::ProfileArg;
    use cerberus_bench_engines::StorageArg;
    use clap::Parser;

    /// The `vlog_bytes` each round's stats report, in round order.
    fn vlog_bytes_by_round(json: &Path) -> Vec<u64> {
        let docs: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        let docs = docs.as_array().unwrap();
        docs.iter()
            .map(|d| d["stats"]["vlog_bytes"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn rounds_in_a_given_directory_each_start_on_a_fresh_database() {
        let dir = tempfile::tempdir().unwrap();
        let (db, json) = (dir.path().join("db"), dir.path().join("run.json"));
        let args = |json: &Path| {
            Args::try_parse_from([
                "cerberus-bench",
                "fillrandom",
                "--num",
                "300",
                "--rounds",
                "3",
                "--db",
                db.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
            ])
            .unwrap()
        };
        run(args(&json)).unwrap();
        // A round that reopened the one before it would hold both rounds' records.
        let bytes = vlog_bytes_by_round(&json);
        assert_eq!(bytes.len(), 3);
        assert!(
            bytes[0] > 0 && bytes.iter().all(|&b| b == bytes[0]),
            "{bytes:?}"
        );
        // The last round's database stays; run again there, the bench refuses to delete it.
        assert!(holds_files(&db).unwrap());
        let again = run(args(&dir.path().join("again.json"))).unwrap_err();
        assert!(
            format!("{again:#}").contains("a database is there already"),
            "{again:#}"
        );
        assert!(holds_files(&db).unwrap());
    }

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
        let cfg = OpenConfig::at(std::path::Path::new(""), LayoutArg::PerNamespace);
        for engine in [Engine::RocksDb, Engine::RocksDbBlob] {
            let err = engine.check(&cfg).unwrap_err().to_string();
            assert!(err.contains("--features rocksdb"), "{err}");
            assert!(err.contains("install-peers"), "{err}");
        }
    }
}
