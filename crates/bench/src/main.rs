//! `cerberus-bench WORKLOAD[,WORKLOAD...] [flags]`: db_bench-style benchmarks of Cerberus and,
//! with the `rocksdb` feature, of RocksDB, run in one process so that figures compare.

mod engine;
mod histogram;
mod report;
mod workload;

use anyhow::{bail, Context, Result};
use clap::Parser;
use engine::{Engine, OpenConfig, StorageArg};
use report::{PhaseReport, RunConfig, RunReport};
use std::path::PathBuf;
use std::process::ExitCode;

/// The engine frees on background threads what writers allocated (frozen memtables); mimalloc
/// handles such cross-thread frees without contending on one arena lock, unlike glibc malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use workload::{BenchConfig, ValuePool, Workload};

/// Runs the listed workloads in order on one database, as db_bench's --benchmarks does.
#[derive(Parser, Debug)]
#[command(name = "cerberus-bench", version, about, long_about = None)]
struct Args {
    /// Comma-separated workloads: fillseq, fillrandom, overwrite, readrandom,
    /// readwhilewriting, flush, compact.
    workloads: String,

    /// Engines to run the whole list on, in turn, each on a fresh database:
    /// cerberus, rocksdb, or both (`cerberus,rocksdb`, which also prints their ratio).
    #[arg(long, default_value = "cerberus")]
    engine: String,

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

    /// Storage under Cerberus (nand: real files behind the NAND timing model).
    #[arg(long, value_enum, default_value_t = StorageArg::Posix)]
    storage: StorageArg,

    /// Cache bytes: Cerberus's filter and index cache, RocksDB's LRU block cache.
    #[arg(long, default_value_t = cerberus_engine::Options::default().cache_bytes)]
    cache_bytes: u64,

    /// Sync (fsync) every write.
    #[arg(long)]
    sync: bool,

    /// Database directory, reused if it exists (default: a temporary one deleted at the end).
    /// With several engines each gets its own subdirectory named after it.
    #[arg(long)]
    db: Option<PathBuf>,

    /// Writes the results as JSON to this file (an array when several engines ran).
    #[arg(long)]
    json: Option<PathBuf>,

    /// Seed of the key and value generators.
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Fraction of each value that is random, the rest repeating it (as db_bench's
    /// --compression_ratio); 1.0 makes values incompressible.
    #[arg(long, default_value_t = 0.5)]
    compression_ratio: f64,
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
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cerberus-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    let workloads = Workload::parse_list(&args.workloads)?;
    let engines = parse_engines(&args.engine)?;
    if args.num == 0 {
        bail!("--num must be at least 1");
    }
    if args.threads == 0 {
        bail!("--threads must be at least 1");
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
        seed: args.seed,
        compression_ratio: args.compression_ratio,
    };
    let run_config = RunConfig {
        workload: &args.workloads,
        bench: &bench,
        storage: args.storage.name(),
        cache_bytes: args.cache_bytes,
        sync: args.sync,
    };
    let open_config = |path: PathBuf| OpenConfig {
        path,
        storage: args.storage,
        cache_bytes: args.cache_bytes,
        sync: args.sync,
    };
    // Refuse an engine this binary cannot run before running any.
    for &e in &engines {
        e.check(&open_config(PathBuf::new()))?;
    }

    let temp = match &args.db {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("cerberus-bench-")
                .tempdir()
                .context("creating a temporary directory")?,
        ),
    };
    let values = ValuePool::new(args.value_size, args.compression_ratio, args.seed);

    let mut runs = Vec::new();
    for (n, &engine) in engines.iter().enumerate() {
        let path = match (&args.db, &temp) {
            (Some(db), _) if engines.len() == 1 => db.clone(),
            (Some(db), _) => db.join(engine.name()),
            (None, Some(t)) => t.path().join(engine.name()),
            (None, None) => unreachable!(),
        };
        if n > 0 {
            println!();
        }
        println!("{}", report::header(engine, &run_config, &path));
        let db = engine::open(engine, &open_config(path.clone()))?;

        let mut phases = Vec::new();
        for (i, &w) in workloads.iter().enumerate() {
            let before = db.db_stats();
            let outcome = workload::run_phase(&*db, w, i, &bench, &values)
                .with_context(|| format!("{} on {}", w.name(), engine.name()))?;
            let delta = match (before, db.db_stats()) {
                (Some(b), Some(a)) => Some(report::stats_delta(&b, &a)),
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
            phases,
            stats,
        });
    }

    if runs.len() > 1 {
        println!("\n{}", report::ratio_table(&runs));
    }

    if let Some(json_path) = &args.json {
        let docs: Vec<_> = runs
            .iter()
            .map(|r| report::run_doc(r, &run_config))
            .collect();
        // One engine: one object; several: an array of them.
        let text = if docs.len() == 1 {
            serde_json::to_string_pretty(&docs[0])?
        } else {
            serde_json::to_string_pretty(&docs)?
        };
        std::fs::write(json_path, text + "\n")
            .with_context(|| format!("writing {}", json_path.display()))?;
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
        assert_eq!(a.engine, "cerberus");
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
            sync: false,
        };
        let err = Engine::RocksDb.check(&cfg).unwrap_err().to_string();
        assert!(err.contains("--features rocksdb"), "{err}");
        assert!(err.contains("install-peers"), "{err}");
    }
}
