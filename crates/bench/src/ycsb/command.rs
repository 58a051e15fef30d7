//! `cerberus-bench ycsb`: each workload on each engine, each on a fresh database, the engines
//! alternated over `--rounds` as the workload list's runner does.

use super::args::Args;
use super::report::{self, WorkloadRun};
use super::run::{run_all, Target};
use super::workload::Workload;
use crate::cli::parse_engines;
use crate::rounds;
use crate::workload::ValuePool;
use anyhow::{Context, Result};
use cerberus_bench_engines::{self as engines, BenchDb, CursorOptions};
use clap::Parser;
use std::ffi::OsString;
use std::path::Path;

pub fn main(argv: Vec<OsString>) -> Result<()> {
    let args = match Args::try_parse_from(argv) {
        Ok(a) => a,
        // --help and --version print and end as clap's own parse does.
        Err(e) => e.exit(),
    };
    let context = crate::markdown::RunContext::now();
    let runs = run(&args)?;
    if let Some(path) = &args.markdown {
        let note = format!(
            "{} round(s), the engines alternated (every other round in reverse), each \
             workload on a fresh database; a ratio above 1: the first engine is faster.",
            args.rounds
        );
        let table = report::markdown(
            &runs,
            &parse_engines(&args.engine)?,
            &Workload::parse_list(&args.workload)?,
        );
        crate::markdown::write(path, &context.document(&note, &table))?;
    }
    if let Some(path) = &args.json {
        let docs: Vec<_> = runs.iter().map(report::doc).collect();
        let text = serde_json::to_string_pretty(&docs)? + "\n";
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Runs and prints every workload on every engine; the runs, in the order they ran.
pub fn run(args: &Args) -> Result<Vec<WorkloadRun>> {
    let workloads = Workload::parse_list(&args.workload)?;
    let engine_list = parse_engines(&args.engine)?;
    for &w in &workloads {
        args.config(w)?;
    }
    for &e in &engine_list {
        e.check(&args.open_config(Path::new("")))?;
    }
    let temp = match &args.db {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("cerberus-ycsb-")
                .tempdir()?,
        ),
    };
    let base = args
        .db
        .clone()
        .or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()))
        .context("a database directory")?;
    let mut runs = Vec::new();
    for (round, engine) in rounds::order(&engine_list, args.rounds) {
        for &w in &workloads {
            let path = base.join(format!("{}-{}-{round}", engine.name(), w.name()));
            // E's scans on Redis read a sorted set of the keys its puts keep, as YCSB's
            // Redis binding does; only there, so that the other workloads' puts stay plain.
            let config = engines::OpenConfig {
                ordered_keys: w == Workload::E,
                ..args.open_config(&path)
            };
            let db = engines::open(engine, &config)?;
            let outcome = one(args, w, &*db)
                .with_context(|| format!("ycsb {} on {}", w.name(), engine.name()));
            db.close()
                .with_context(|| format!("closing {}", engine.name()))?;
            drop(db);
            // Every run has a fresh database and none is read again: each goes once closed,
            // also under --db (6 workloads x engines x rounds of them would fill a disk).
            let _ = std::fs::remove_dir_all(&path);
            let Some(spaces) = outcome? else {
                println!(
                    "ycsb {} on {}: not supported (the engine has no ordered scans)\n",
                    w.name(),
                    engine.name()
                );
                continue;
            };
            let r = WorkloadRun {
                round,
                engine,
                workload: w,
                spaces,
            };
            println!("{}\n", report::text(&r, args.rounds));
            runs.push(r);
        }
    }
    if engine_list.len() > 1 {
        println!("{}", report::ratio_table(&runs, &engine_list, &workloads));
    }
    Ok(runs)
}

/// Workload `w` on `db`, on its key space or its tenants'; `None` when it scans and the
/// engine cannot.
fn one(args: &Args, w: Workload, db: &dyn BenchDb) -> Result<Option<Vec<super::run::Outcome>>> {
    let cfg = args.config(w)?;
    if w == Workload::E && db.cursor(&CursorOptions::default()).is_err() {
        return Ok(None);
    }
    let values = ValuePool::new(cfg.record_bytes, 1.0, args.seed);
    let tenants = match args.tenants {
        0 => Vec::new(),
        n => db.create_tenants(n)?,
    };
    let targets: Vec<Target<'_>> = if tenants.is_empty() {
        vec![Target { db, tenant: None }]
    } else {
        tenants
            .iter()
            .map(|t| Target {
                db,
                tenant: Some(t),
            })
            .collect()
    };
    Ok(Some(run_all(&targets, &cfg, &values)?))
}
