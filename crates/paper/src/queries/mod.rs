//! `cerberus-paper queries`: the Cerberus paper's secondary-key queries (Table 5) over a
//! JSON-lines dataset, on the engine with no index, a classic index and a VAS index, and on
//! SQLite with an expression index (feature `sqlite`), in one run.
//!
//! Per index kind: a fresh database, the index created before the load (so the load pays for
//! it, as the paper's Put() figures do), every record put under its key field, a flush and the
//! compactions that follow (`--load-repeat` times, the engines in turn). Then, with every
//! engine loaded, each query for each secondary key `--repeat` times (with `--interleave`, the
//! engines in turn for each repetition, so that this machine's slow spells fall on all of them
//! alike). The figures:
//! load time, and per query the median latency with the engine's breakdown of the last run
//! (entries read from the index, primary lookups, value reads, pages by purpose, time per
//! step).

mod args;
mod device;
#[cfg(feature = "sqlite")]
mod flights;
#[cfg(feature = "sqlite")]
mod flights_device;
#[cfg(feature = "sqlite")]
mod flights_main;
#[cfg(all(feature = "sqlite", feature = "postgres"))]
mod flights_pg;
#[cfg(all(feature = "sqlite", not(feature = "postgres")))]
mod flights_pg_off;
#[cfg(all(test, feature = "sqlite", feature = "postgres"))]
mod flights_pg_tests;
#[cfg(feature = "sqlite")]
mod flights_query;
#[cfg(feature = "sqlite")]
mod flights_sql;
#[cfg(all(test, feature = "sqlite"))]
mod flights_tests;
#[cfg(all(feature = "sqlite", feature = "postgres"))]
mod postgres_server;
mod records;
#[cfg(feature = "sqlite")]
mod sqlite;
mod workload;

use anyhow::{bail, Context, Result};
use args::QueriesArgs;
use cerberus_engine::storage::NandConfig;
use cerberus_engine::{Db, Filter, IndexKind, Namespace, Options, StorageKind};
use cerberus_figures::docs::queries::{EngineDoc, QueriesDoc, QueryDoc};
use cerberus_figures::Table;
use clap::Parser;
use records::load_dataset;
use std::ffi::OsString;
use std::time::Instant;
use workload::{QueryRun, QuerySet, RunStats};

pub fn main(args: Vec<OsString>) -> Result<()> {
    let args = QueriesArgs::try_parse_from(args)?;
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    if !(args.min_query_ms.is_finite() && args.min_query_ms >= 0.0) {
        bail!("--min-query-ms must be a number of ms, at least 0");
    }
    match args.set.as_deref() {
        None => {}
        #[cfg(feature = "sqlite")]
        Some("flights") => return flights_main::main(&args),
        #[cfg(not(feature = "sqlite"))]
        Some("flights") => {
            bail!("--set flights needs cerberus-paper built with the sqlite feature")
        }
        Some(other) => bail!("--set: unknown {other} (flights)"),
    }
    let tmp = tempfile::tempdir()?;
    let dir = args.db.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let (records, set) = load_dataset(&args, &dir)?;
    eprintln!(
        "dataset {}: {} records, {:.1} MB",
        args.dataset,
        records.len(),
        records
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>() as f64
            / 1e6
    );
    let kinds = args
        .index
        .split(',')
        .map(str::trim)
        .map(|kind| match kind {
            "none" => Ok((kind, None)),
            "classic" => Ok((kind, Some(IndexKind::Classic))),
            "vas" => Ok((kind, Some(IndexKind::Vas))),
            other => bail!("--index: unknown kind {other} (none, classic, vas)"),
        })
        .collect::<Result<Vec<_>>>()?;
    #[cfg(not(feature = "sqlite"))]
    if args.sqlite {
        bail!("--sqlite needs cerberus-paper built with the sqlite feature");
    }
    // Rounds of loads alone, engines in turn, so that a slow spell of the machine falls on
    // all of them; the last round loads and queries.
    let rounds = args.load_repeat.max(1);
    let mut loads: Vec<Vec<f64>> = vec![Vec::new(); kinds.len() + usize::from(args.sqlite)];
    let mut engines = Vec::new();
    for round in 0..rounds {
        let last = round + 1 == rounds;
        // Kept for the queries in the last round, else closed at once.
        let mut keep = |i: usize, l: Loaded| -> Result<()> {
            loads[i].push(l.load_secs);
            match last {
                true => engines.push(l),
                false => l.close()?,
            }
            Ok(())
        };
        for (i, (kind, index)) in kinds.iter().enumerate() {
            keep(
                i,
                load_cerberus(&args, &dir.join(kind), &records, &set, *index)?,
            )?;
        }
        #[cfg(feature = "sqlite")]
        if args.sqlite {
            let (db, secs) = sqlite::Sqlite::load(&dir.join("sqlite.db"), &records, &set)?;
            let l = Loaded::new("sqlite", "", None, secs, Engine::Sqlite(db));
            keep(kinds.len(), l)?;
        }
    }
    // Every engine loaded; the queries run on all of them in turn.
    let runs = Runs {
        repeat: args.repeat,
        min_us: args.min_query_ms * 1e3,
        interleave: args.interleave,
    };
    let results = run_queries(&set, &runs, &engines)?;
    let mut runs = Vec::new();
    for ((engine, queries), secs) in engines.into_iter().zip(results).zip(loads) {
        runs.push(EngineDoc {
            engine: engine.name.to_string(),
            load_secs: median(secs.clone()),
            load_secs_each: secs,
            queries,
        });
        engine.close()?;
    }
    print_table(&set, &runs);
    if let Some(path) = &args.json {
        let doc = QueriesDoc {
            cache_bytes: args.cache_bytes,
            dataset: args.dataset.clone(),
            records: records.len(),
            repeat: args.repeat,
            runs,
            storage: args.storage.clone(),
        };
        std::fs::write(path, serde_json::to_vec_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// An engine loaded and ready for the queries.
struct Loaded {
    name: String,
    load_secs: f64,
    engine: Engine,
}

enum Engine {
    Embedded {
        db: Db,
        ns: Namespace,
    },
    /// `host_scan`: no index, the host reads the records it needs (the KVSSD baseline).
    Device {
        target: device::Target,
        host_scan: bool,
    },
    #[cfg(feature = "sqlite")]
    Sqlite(sqlite::Sqlite),
}

impl Loaded {
    /// Named `WHAT (KIND)`, or `WHAT (NONE)` without an index; says its load time.
    fn new(
        what: &str,
        none: &str,
        index: Option<IndexKind>,
        load_secs: f64,
        engine: Engine,
    ) -> Loaded {
        let name = match index {
            None if none.is_empty() => what.to_string(),
            None => format!("{what} ({none})"),
            Some(k) => format!("{what} ({k})"),
        };
        eprintln!("{name}: loaded in {load_secs:.2} s");
        Loaded {
            name,
            load_secs,
            engine,
        }
    }

    /// One run of `q` (its filter parsed as `filter`).
    fn run(&self, q: &workload::Query, filter: &Filter) -> Result<QueryRun> {
        match &self.engine {
            Engine::Embedded { ns, .. } => {
                let (n, stats) = workload::run_engine(ns, q, filter)?;
                let bytes = match &stats {
                    RunStats::Engine(pages) => pages.iter().map(|p| p.bytes_returned).sum(),
                    RunStats::Json(_) => 0,
                };
                Ok((n, stats, bytes))
            }
            Engine::Device {
                target,
                host_scan: true,
            } => target.run_on_host(q, filter),
            Engine::Device { target, .. } => target.run(q),
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(db) => db.run(q),
        }
    }

    fn close(self) -> Result<()> {
        match self.engine {
            Engine::Embedded { db, .. } => Ok(db.close()?),
            Engine::Device { target, .. } => target.stop(),
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(_) => Ok(()),
        }
    }
}

/// Loads a fresh database with `index` (embedded, or through a local device) and settles it:
/// flushed (within the load's time), its compactions done.
fn load_cerberus(
    args: &QueriesArgs,
    dir: &std::path::Path,
    records: &[(Vec<u8>, Vec<u8>)],
    set: &QuerySet,
    index: Option<IndexKind>,
) -> Result<Loaded> {
    let _ = std::fs::remove_dir_all(dir);
    if let Some(d) = &args.device {
        if d != "local" {
            bail!("--device: only `local` (a device this run starts) is supported");
        }
        return load_device(args, dir, records, set, index);
    }
    let storage = match args.storage.as_str() {
        "posix" => StorageKind::Posix,
        "nand" => StorageKind::Nand(NandConfig::default()),
        other => bail!("--storage: unknown {other} (posix, nand)"),
    };
    let mut opts = Options::default();
    opts.cache_bytes = args.cache_bytes;
    let db = Db::builder(opts).storage(storage).open(dir)?;
    let ns = db.create_namespace("data")?;
    let t = Instant::now();
    if let Some(kind) = index {
        ns.create_index(&set.attr, kind)?;
    }
    for (k, v) in records {
        ns.put(k, v)?;
    }
    db.flush()?;
    let load_secs = t.elapsed().as_secs_f64();
    db.wait_for_compactions()?;
    Ok(Loaded::new(
        "cerberus",
        "no index",
        index,
        load_secs,
        Engine::Embedded { db, ns },
    ))
}

/// `load_cerberus` through a local device.
fn load_device(
    args: &QueriesArgs,
    dir: &std::path::Path,
    records: &[(Vec<u8>, Vec<u8>)],
    set: &QuerySet,
    index: Option<IndexKind>,
) -> Result<Loaded> {
    let target = device::Target::start(dir, args.storage == "nand", args.cache_bytes)?;
    let t = Instant::now();
    if let Some(kind) = index {
        target.create_index(&set.attr, kind == IndexKind::Vas)?;
    }
    target.load(records, args.load_connections)?;
    target.flush()?;
    let load_secs = t.elapsed().as_secs_f64();
    target.settle()?;
    let engine = Engine::Device {
        target,
        host_scan: index.is_none(),
    };
    Ok(Loaded::new(
        "device",
        "no index: host scan",
        index,
        load_secs,
        engine,
    ))
}

/// How often each query runs on each engine.
struct Runs {
    /// Runs at least.
    repeat: usize,
    /// Then more runs until an engine has spent this long on the query, up to `MAX_RUNS`.
    min_us: f64,
    /// The engines in turn for each run (a slow spell of the machine falls on all of them
    /// alike, but each run finds the CPU caches as another engine left them); else each
    /// engine's runs back to back, one query after another (the engines' runs of a query
    /// minutes apart at most).
    interleave: bool,
}

/// The most runs of one query on one engine that `Runs::min_us` asks for.
const MAX_RUNS: usize = 100;

impl Runs {
    /// Whether an engine's runs of a query (their times, us) are enough.
    fn enough(&self, times: &[f64]) -> bool {
        times.len() >= self.repeat
            && (times.iter().sum::<f64>() >= self.min_us || times.len() >= MAX_RUNS)
    }
}

/// Runs every query of `set` on each engine as `runs` says; per engine, one JSON object per
/// query with the median latency and the last run's figures.
fn run_queries(set: &QuerySet, runs: &Runs, engines: &[Loaded]) -> Result<Vec<Vec<QueryDoc>>> {
    // Parsed before the clock starts, as SQLite's statements are prepared.
    let filters = set
        .queries
        .iter()
        .map(|q| Filter::parse(&q.filter).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    let mut results: Vec<Vec<QueryDoc>> = engines.iter().map(|_| Vec::new()).collect();
    for (q, filter) in set.queries.iter().zip(&filters) {
        let mut times: Vec<Vec<f64>> = engines.iter().map(|_| Vec::new()).collect();
        let mut last: Vec<Option<QueryRun>> = engines.iter().map(|_| None).collect();
        let mut timed = |e: usize, times: &mut Vec<f64>| -> Result<()> {
            let t = Instant::now();
            let run = engines[e].run(q, filter)?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
            last[e] = Some(run);
            Ok(())
        };
        if runs.interleave {
            while !times.iter().all(|t| runs.enough(t)) {
                for (e, t) in times.iter_mut().enumerate() {
                    if !runs.enough(t) {
                        timed(e, t)?;
                    }
                }
            }
        } else {
            for (e, t) in times.iter_mut().enumerate() {
                while !runs.enough(t) {
                    timed(e, t)?;
                }
            }
        }
        for (e, (times, last)) in times.into_iter().zip(last).enumerate() {
            let (n, stats, bytes) = last.context("no run")?;
            results[e].push(QueryDoc {
                bytes,
                runs: times.len(),
                median_us: median(times),
                query: q.name.to_string(),
                results: n,
                sk: q.sk_label(),
                stats: stats.to_json()?,
            });
        }
    }
    Ok(results)
}

fn print_table(set: &QuerySet, runs: &[EngineDoc]) {
    let engines = runs.iter().map(|r| (r.engine.as_str(), true));
    let mut t = Table::aligned([("query", false), ("sk", false)].into_iter().chain(engines));
    let load = runs.iter().map(|r| format!("{:.2}", r.load_secs));
    t.row(
        ["load".to_string(), "(s)".to_string()]
            .into_iter()
            .chain(load),
    );
    for (i, q) in set.queries.iter().enumerate() {
        let cells = runs.iter().map(|r| {
            let cell = &r.queries[i];
            format!(
                "{:.0} us ({} found, {} B)",
                cell.median_us, cell.results, cell.bytes
            )
        });
        t.row([q.name.to_string(), q.sk_label()].into_iter().chain(cells));
    }
    print!("\n{}", t.render());
}

#[cfg(test)]
mod tests {
    use super::{Runs, MAX_RUNS};

    #[test]
    fn a_query_runs_until_its_time_is_spent_within_the_bounds() {
        let runs = Runs {
            repeat: 3,
            min_us: 1_000.0,
            interleave: true,
        };
        // Fewer than --repeat runs are never enough, however long they took.
        assert!(!runs.enough(&[5_000.0, 5_000.0]));
        assert!(runs.enough(&[5_000.0, 5_000.0, 5_000.0]));
        // Sub-millisecond runs go on until they add up to the minimum...
        assert!(!runs.enough(&[300.0; 3]));
        assert!(runs.enough(&[300.0; 4]));
        // ...or until the cap.
        assert!(!runs.enough(&vec![1.0; MAX_RUNS - 1]));
        assert!(runs.enough(&vec![1.0; MAX_RUNS]));
        let plain = Runs {
            min_us: 0.0,
            ..runs
        };
        assert!(plain.enough(&[1.0; 3]));
    }
}
