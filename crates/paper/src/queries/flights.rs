//! `cerberus-paper queries --dataset FILE.jsonl --set flights`: every query kind on real data
//! (nycflights13's flights, `scripts/dataset-flights`) on the engine and on SQLite in the same
//! run, each answer checked between the two and against the reference answers kept in
//! `crates/paper/data/flights-answers.json`.
//!
//! Both sides hold the same 6 indexes, created before a load in batches of 1,000. Each round
//! loads both afresh, runs every query, applies the same updates and deletes to both, and runs
//! every query again; the rounds alternate which side goes first, and within a query the
//! timed runs alternate too. Records come back as (key, value bytes) on both sides; a
//! keys-only find returns keys alone.
//!
//! With `--device local` and the `postgres` feature, PostgreSQL (a server this run starts,
//! `flights_pg.rs`) is a third side, the peer of queries through the device: loaded, queried
//! and mutated the same way, its answers checked against ours by the documents' content.

use super::flights_device::DeviceSide;
#[cfg(feature = "postgres")]
use super::flights_pg::PgSide;
#[cfg(not(feature = "postgres"))]
use super::flights_pg_off::PgSide;
use super::flights_query::{
    in_batches, queries, Answer, FlightQuery, Kind, Out, WriteOp, ATTRS, BATCH,
};
use super::flights_sql::SqliteSide;
use anyhow::{bail, Context, Result};
use cerberus_engine::{
    Aggregate, Db, Filter, FindOptions, IndexKind, Namespace, Options, Readable, TopOptions,
    WriteBatch,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha1::{Digest, Sha1};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// Our side: the embedded engine, or a local device (`--device local`).
pub enum Ours {
    Engine(EngineSide),
    Device(DeviceSide),
}

impl Ours {
    /// A fresh side loaded with `records` under the 6 indexes, and the load's seconds.
    fn load(cfg: &Config) -> Result<(Ours, f64)> {
        let dir = cfg.dir.join("ours");
        Ok(match cfg.device {
            false => {
                let (side, secs) = EngineSide::load(&dir, cfg.records, cfg.kind, !cfg.fresh)?;
                (Ours::Engine(side), secs)
            }
            true => {
                let (side, secs) = DeviceSide::load(&dir, cfg.records, cfg.kind, !cfg.fresh)?;
                (Ours::Device(side), secs)
            }
        })
    }

    fn write<'a>(&self, ops: impl Iterator<Item = WriteOp<'a>>) -> Result<()> {
        match self {
            Ours::Engine(side) => side.write(ops),
            Ours::Device(side) => side.write(ops),
        }
    }

    fn run(&self, q: &FlightQuery, filter: &Filter) -> Result<Out> {
        match self {
            Ours::Engine(side) => side.run(q, filter),
            Ours::Device(side) => side.run(q),
        }
    }

    fn close(self) -> Result<()> {
        match self {
            Ours::Engine(side) => side.close(),
            Ours::Device(side) => side.close(),
        }
    }
}

/// The engine's side: a fresh database with the 6 indexes.
pub struct EngineSide {
    db: Db,
    ns: Namespace,
}

impl EngineSide {
    /// Creates the indexes, loads `records` in batches, flushes (on the clock) and, if
    /// `settle`, waits for the compactions (off it). Returns the side and the load's seconds.
    pub fn load(
        dir: &Path,
        records: &[(Vec<u8>, Vec<u8>)],
        kind: IndexKind,
        settle: bool,
    ) -> Result<(EngineSide, f64)> {
        let _ = std::fs::remove_dir_all(dir);
        let db = Db::builder(Options::default()).open(dir)?;
        let ns = db.create_namespace("flights")?;
        let t = Instant::now();
        for a in ATTRS {
            ns.create_index(a, kind)?;
        }
        let ours = EngineSide { db, ns };
        ours.write(records.iter().map(|(k, v)| (k, Some(v))))?;
        ours.db.flush()?;
        let secs = t.elapsed().as_secs_f64();
        if settle {
            ours.db.wait_for_compactions()?;
        }
        Ok((ours, secs))
    }

    /// Puts (`Some`) and deletes (`None`) in batches of 1,000.
    pub fn write<'a>(&self, ops: impl Iterator<Item = WriteOp<'a>>) -> Result<()> {
        in_batches(ops, |chunk| {
            let mut batch = WriteBatch::new();
            for (k, v) in chunk {
                match v {
                    Some(v) => batch.put(k.as_slice(), v.as_slice()),
                    None => batch.delete(k.as_slice()),
                };
            }
            Ok(self.ns.write(batch)?)
        })
    }

    /// One run of `q` (its filter parsed).
    pub fn run(&self, q: &FlightQuery, filter: &Filter) -> Result<Out> {
        Ok(match &q.kind {
            Kind::Find { keys_only } => {
                let mut opts = FindOptions {
                    keys_only: *keys_only,
                    ..FindOptions::default()
                };
                let mut rows = Vec::new();
                loop {
                    let page = self.ns.find(filter, &opts)?;
                    rows.extend(page.value.into_iter().map(|f| (f.pk, f.value)));
                    match page.continuation {
                        Some(c) => opts.continuation = Some(c),
                        None => break,
                    }
                }
                Out::Rows(rows)
            }
            Kind::Top { by, k } => {
                let opts = TopOptions {
                    by: by.to_string(),
                    desc: true,
                    k: *k,
                    projection: None,
                };
                let top = self.ns.top(filter, &opts)?;
                Out::Ranked(top.value.into_iter().map(|r| r.pk).collect())
            }
            Kind::Agg { op, attr } => {
                let op = Aggregate::parse(op, *attr)?;
                Out::Value(self.ns.aggregate(filter, &op)?.value)
            }
        })
    }

    pub fn close(self) -> Result<()> {
        Ok(self.db.close()?)
    }
}

/// Puts (`Some`) and deletes (`None`) by key.
pub type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// The updates and deletes applied to both sides after the first pass: every 97th record
/// updated (its dep_delay moved by 5, and alternately its carrier set to "ZZ" or its tailnum
/// to null, so that index entries move), every 131st (from the 2nd) deleted.
pub fn mutations(records: &[(Vec<u8>, Vec<u8>)]) -> Result<Ops> {
    let mut out = Vec::new();
    for (i, (k, v)) in records.iter().enumerate() {
        if i % 97 == 0 {
            let mut doc: Value = serde_json::from_slice(v)?;
            if let Some(d) = doc["dep_delay"].as_i64() {
                doc["dep_delay"] = json!(d + 5);
            }
            match (i / 97) % 2 {
                0 => doc["carrier"] = json!("ZZ"),
                _ => doc["tailnum"] = Value::Null,
            }
            out.push((k.clone(), Some(serde_json::to_vec(&doc)?)));
        } else if i % 131 == 1 {
            out.push((k.clone(), None));
        }
    }
    Ok(out)
}

/// The reference answers kept in the repo, for the file whose sha1 they name.
#[derive(Debug, Serialize, Deserialize)]
pub struct Reference {
    pub dataset_sha1: String,
    pub records: usize,
    pub answers: BTreeMap<String, Answer>,
}

pub const REFERENCE: &str = include_str!("../../data/flights-answers.json");

pub fn file_sha1(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Sha1::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Figures of one query (or the load, or the mutations) over every round.
#[derive(Debug, Default, Serialize)]
pub struct Row {
    pub name: String,
    pub filter: String,
    pub count: u64,
    pub digest: String,
    /// SQLite's query plan.
    pub sqlite_plan: String,
    /// PostgreSQL's (EXPLAIN), when it ran.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub postgres_plan: String,
    /// Milliseconds of each timed run.
    pub ours_ms: Vec<f64>,
    pub sqlite_ms: Vec<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub postgres_ms: Vec<f64>,
    pub ours_median_ms: f64,
    pub sqlite_median_ms: f64,
    /// SQLite's median over ours: above 1, ours is faster.
    pub ratio: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres_median_ms: Option<f64>,
    /// PostgreSQL's median over ours: above 1, ours is faster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres_ratio: Option<f64>,
}

/// What a flights run measured.
#[derive(Debug, Serialize)]
pub struct Report {
    pub dataset: String,
    pub records: usize,
    /// `engine` (embedded) or `device` (a local device over loopback).
    pub through: String,
    pub index: String,
    pub rounds: usize,
    pub runs_per_round: usize,
    /// Whether the reference answers applied (the file's sha1 is theirs).
    pub reference_checked: bool,
    /// PostgreSQL's settings, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres_settings: Option<String>,
    /// Milliseconds of PostgreSQL's `ANALYZE` after each round's load (apart from the load).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub postgres_analyze_ms: Vec<f64>,
    /// Our side queried right after its load (`--fresh`), else once its compactions ended.
    #[serde(default)]
    pub fresh: bool,
    pub rows: Vec<Row>,
}

/// How to run.
pub struct Config<'a> {
    pub dataset: &'a Path,
    pub records: &'a [(Vec<u8>, Vec<u8>)],
    pub kind: IndexKind,
    pub rounds: usize,
    pub runs: usize,
    pub dir: &'a Path,
    /// Our side through a local device instead of the embedded engine.
    pub device: bool,
    /// Reference answers to check against (`None`: ours and SQLite against each other only).
    pub reference: Option<&'a BTreeMap<String, Answer>>,
    /// PostgreSQL as a third side (needs the `postgres` feature).
    pub postgres: bool,
    /// Query our side right after its load: loaded last of the sides, its compactions
    /// not waited for (they run beside the first queries).
    pub fresh: bool,
    /// The k of the top-K queries.
    pub top_k: &'a [usize],
    /// Time only the queries whose name contains this (all are still checked).
    pub only: Option<&'a str>,
}

/// Every round: both sides loaded, the queries, the mutations, the queries again.
pub fn run(cfg: &Config) -> Result<Report> {
    let set = queries(cfg.top_k);
    let filters = set
        .iter()
        .map(|q| Filter::parse(&q.filter).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    let muts = mutations(cfg.records)?;
    let phases = ["", "mut "];
    let mut rows: Vec<Row> = Vec::new();
    let pg = match cfg.postgres {
        true => Some(PgSide::start_for_device()?),
        false => None,
    };
    let sides = 2 + usize::from(pg.is_some());
    let mut analyze_ms = Vec::new();
    let row = |rows: &mut Vec<Row>, name: &str, filter: String| -> usize {
        match rows.iter().position(|r| r.name == name) {
            Some(i) => i,
            None => {
                rows.push(Row {
                    name: name.into(),
                    filter,
                    ..Row::default()
                });
                rows.len() - 1
            }
        }
    };
    for round in 0..cfg.rounds {
        let (ours, sql) = load_all(cfg, pg.as_ref(), round, &mut rows, row)?;
        if let Some(pg) = &pg {
            analyze_ms.push(pg.analyze()? * 1e3);
        }
        for phase in phases {
            if phase == "mut " {
                let i = row(&mut rows, "mutate", format!("{} ops", muts.len()));
                let t = Instant::now();
                ours.write(muts.iter().map(|(k, v)| (k, v.as_ref())))?;
                rows[i].ours_ms.push(ms(t));
                let t = Instant::now();
                sql.write(&muts)?;
                rows[i].sqlite_ms.push(ms(t));
                if let Some(pg) = &pg {
                    let t = Instant::now();
                    pg.write(&muts)?;
                    rows[i].postgres_ms.push(ms(t));
                }
            }
            for (q, f) in set.iter().zip(&filters) {
                let name = format!("{phase}{}", q.name);
                // Untimed: the answers checked (and the caches warmed alike).
                let a = checked(cfg, &name, q, ours.run(q, f)?, &sql, pg.as_ref())?;
                if cfg.only.is_some_and(|only| !q.name.contains(only)) {
                    continue;
                }
                let i = row(&mut rows, &name, q.filter.to_string());
                if let Some(pg) = pg.as_ref().filter(|_| rows[i].postgres_plan.is_empty()) {
                    rows[i].postgres_plan = pg.plan(q)?;
                }
                (rows[i].count, rows[i].digest) = (a.count, a.digest);
                if rows[i].sqlite_plan.is_empty() {
                    rows[i].sqlite_plan = sql.plan(q)?;
                }
                for run in 0..cfg.runs {
                    for side in order(round + run, sides) {
                        let t = Instant::now();
                        match (side, &pg) {
                            (0, _) => drop(ours.run(q, f)?),
                            (1, _) => drop(sql.run(q)?),
                            (_, Some(pg)) => drop(pg.run(q)?),
                            (_, None) => bail!("no side {side}"),
                        }
                        match side {
                            0 => rows[i].ours_ms.push(ms(t)),
                            1 => rows[i].sqlite_ms.push(ms(t)),
                            _ => rows[i].postgres_ms.push(ms(t)),
                        }
                    }
                }
            }
        }
        ours.close()?;
        drop(sql);
        let _ = std::fs::remove_dir_all(cfg.dir.join("ours"));
        let _ = std::fs::remove_file(cfg.dir.join("sqlite.db"));
    }
    for r in &mut rows {
        r.ours_median_ms = median(&r.ours_ms);
        r.sqlite_median_ms = median(&r.sqlite_ms);
        r.ratio = r.sqlite_median_ms / r.ours_median_ms.max(1e-9);
        if !r.postgres_ms.is_empty() {
            let m = median(&r.postgres_ms);
            r.postgres_median_ms = Some(m);
            r.postgres_ratio = Some(m / r.ours_median_ms.max(1e-9));
        }
    }
    Ok(Report {
        dataset: cfg.dataset.display().to_string(),
        records: cfg.records.len(),
        through: if cfg.device { "device" } else { "engine" }.into(),
        index: cfg.kind.to_string(),
        rounds: cfg.rounds,
        runs_per_round: cfg.runs,
        reference_checked: cfg.reference.is_some(),
        postgres_settings: pg.as_ref().map(|pg| pg.settings()),
        postgres_analyze_ms: analyze_ms,
        fresh: cfg.fresh,
        rows,
    })
}

/// Ours' answer of `q` (its run `out`), checked against SQLite's, PostgreSQL's (by the
/// documents' content) and the reference answer.
fn checked(
    cfg: &Config,
    name: &str,
    q: &FlightQuery,
    out: Out,
    sql: &SqliteSide,
    pg: Option<&PgSide>,
) -> Result<Answer> {
    if let Some(pg) = pg {
        let (a, p) = (out.clone().canonical()?, pg.run(q)?.canonical()?);
        let (a, p) = (a.answer(), p.answer());
        if a != p {
            bail!("{name}: ours {a:?}, PostgreSQL {p:?} (documents' content)");
        }
    }
    let (a, b) = (out.answer(), sql.run(q)?.answer());
    if a != b {
        bail!("{name}: ours {a:?}, SQLite {b:?}");
    }
    if let Some(reference) = cfg.reference {
        match reference.get(name) {
            Some(r) if *r == a => {}
            Some(r) => bail!("{name}: {a:?}, the reference answer is {r:?}"),
            None => bail!("{name}: no reference answer"),
        }
    }
    Ok(a)
}

/// Loads every side (PostgreSQL's too if given), in the order of the round, and records the
/// loads' times.
fn load_all(
    cfg: &Config,
    pg: Option<&PgSide>,
    round: usize,
    rows: &mut Vec<Row>,
    row: impl Fn(&mut Vec<Row>, &str, String) -> usize,
) -> Result<(Ours, SqliteSide)> {
    let i = row(rows, "load", format!("batches of {BATCH}, 6 indexes"));
    let (mut ours, mut sql) = (None, None);
    let mut sides = order(round, 2 + usize::from(pg.is_some()));
    if cfg.fresh {
        // Ours last, so that the queries start right after its load.
        sides.retain(|&s| s != 0);
        sides.push(0);
    }
    for side in sides {
        match side {
            0 => {
                let (o, secs) = Ours::load(cfg)?;
                rows[i].ours_ms.push(secs * 1e3);
                ours = Some(o);
            }
            1 => {
                let (s, secs) = SqliteSide::load(&cfg.dir.join("sqlite.db"), cfg.records)?;
                rows[i].sqlite_ms.push(secs * 1e3);
                sql = Some(s);
            }
            _ => {
                if let Some(pg) = pg {
                    rows[i].postgres_ms.push(pg.load(cfg.records)? * 1e3);
                }
            }
        }
    }
    Ok((ours.context("no load")?, sql.context("no load")?))
}

/// The `n` sides (0 ours, 1 SQLite, 2 PostgreSQL) rotated by `turn`, so that each goes
/// first in turn (with two: ours first on even turns, as before PostgreSQL).
fn order(turn: usize, n: usize) -> Vec<usize> {
    (0..n).map(|s| (s + turn) % n).collect()
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn range(v: &[f64]) -> (f64, f64) {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max)
}

/// The table: per query its results, each side's median and range, and the ratios; the
/// PostgreSQL columns only when it ran (the `postgres` feature and `--device local`).
pub fn render(report: &Report) -> String {
    let pg = report.rows.iter().any(|r| !r.postgres_ms.is_empty());
    let mut columns = vec![
        ("query", false),
        ("results", true),
        ("ours ms (range)", true),
        ("SQLite ms (range)", true),
        ("SQLite/ours", true),
    ];
    if pg {
        columns.extend([("PostgreSQL ms (range)", true), ("PostgreSQL/ours", true)]);
    }
    let mut t = cerberus_figures::Table::aligned(columns);
    for r in &report.rows {
        let cell = |v: &[f64], m: f64| {
            let (lo, hi) = range(v);
            format!("{m:.2} ({lo:.2}-{hi:.2})")
        };
        let results = match r.name.as_str() {
            "load" | "mutate" => r.filter.clone(),
            _ => r.count.to_string(),
        };
        let mut cells = vec![
            r.name.clone(),
            results,
            cell(&r.ours_ms, r.ours_median_ms),
            cell(&r.sqlite_ms, r.sqlite_median_ms),
            format!("{:.2}x", r.ratio),
        ];
        if pg {
            cells.push(cell(
                &r.postgres_ms,
                r.postgres_median_ms.unwrap_or(f64::NAN),
            ));
            cells.push(format!("{:.2}x", r.postgres_ratio.unwrap_or(f64::NAN)));
        }
        t.row(cells);
    }
    let state = match report.fresh {
        true => "queried right after its load, compactions running",
        false => "queried once its compactions ended",
    };
    let mut head = format!(
        "ours: the {} ({} index), {state}",
        report.through, report.index
    );
    if let Some(settings) = &report.postgres_settings {
        let analyze = report.postgres_analyze_ms.iter().map(|m| format!("{m:.0}"));
        head += &format!(
            "\nPostgreSQL: {settings}; ANALYZE after each load (ms, not in the load): {}",
            analyze.collect::<Vec<_>>().join(", ")
        );
    }
    format!("{head}\n\n{}", t.render())
}
