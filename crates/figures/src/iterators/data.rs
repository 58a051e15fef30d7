//! Reading the JSON files of `scripts/repro-iterators`: what each seekrandom run measured,
//! grouped by the sweep's parts (file name prefixes) and points (the documents' `config`).

use crate::error::{input, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The NAND sweep: `nand-v{V}-l{L}-d{D}-r{R}.json`.
pub const NAND_PREFIX: &str = "nand-";
/// The posix comparison: `posix-n{N}-v{V}-t{T}-r{R}.json` (an array: one document per engine).
pub const POSIX_PREFIX: &str = "posix-";
/// Index prefetch off and on: `idx-d{D}-{off|on}-r{R}.json`.
pub const INDEX_PREFIX: &str = "idx-";

/// One seekrandom phase of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeekRun {
    pub engine: String,
    pub num: u64,
    pub value_size: u64,
    pub scan_length: u64,
    /// Cerberus's; `None` for other engines.
    pub prefetch_degree: Option<u64>,
    pub index_prefetch: Option<bool>,
    pub seeks: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub mb_per_sec: f64,
    pub entries: u64,
    pub next_p50_us: Option<f64>,
    pub next_p99_us: Option<f64>,
    pub next_p999_us: Option<f64>,
}

impl SeekRun {
    pub fn entries_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.entries as f64 / self.seconds
        } else {
            0.0
        }
    }

    pub fn entries_per_seek(&self) -> f64 {
        if self.seeks > 0 {
            self.entries as f64 / self.seeks as f64
        } else {
            0.0
        }
    }
}

/// A point of the NAND sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NandPoint {
    pub value_size: u64,
    pub scan_length: u64,
    pub prefetch_degree: u64,
}

/// A point of the posix comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PosixPoint {
    pub num: u64,
    pub value_size: u64,
    pub threads: u64,
}

/// One engine of one posix run: ops/s of its phases by name, and its seekrandom phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineRun {
    pub engine: String,
    pub ops_per_sec: BTreeMap<String, f64>,
    pub seek: Option<SeekRun>,
}

/// Everything a sweep directory holds.
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    /// Runs (repeats) of each NAND point.
    pub nand: BTreeMap<NandPoint, Vec<SeekRun>>,
    /// Posix runs of each point, each run with its engines in the order they ran.
    pub posix: BTreeMap<PosixPoint, Vec<Vec<EngineRun>>>,
    /// Runs by value prefetch degree and index prefetch off (`false`) or on (`true`).
    pub index: BTreeMap<(u64, bool), Vec<SeekRun>>,
}

impl Sweep {
    pub fn is_empty(&self) -> bool {
        self.nand.is_empty() && self.posix.is_empty() && self.index.is_empty()
    }
}

/// What the sweep reads of a workload run's document (`report::run_doc`'s fields).
#[derive(Deserialize)]
struct RunIn {
    engine: Option<String>,
    config: Option<ConfigIn>,
    phases: Option<Vec<PhaseIn>>,
}

#[derive(Deserialize)]
struct ConfigIn {
    num: Option<u64>,
    value_size: Option<u64>,
    threads: Option<u64>,
    seekrandom: Option<SeekConfigIn>,
}

#[derive(Deserialize)]
struct SeekConfigIn {
    prefetch_degree: Option<u64>,
    index_prefetch: Option<bool>,
}

#[derive(Deserialize)]
struct PhaseIn {
    name: Option<String>,
    ops: Option<u64>,
    seconds: Option<f64>,
    ops_per_sec: Option<f64>,
    mb_per_sec: Option<f64>,
    entries: Option<u64>,
    scan_length: Option<u64>,
    next_latency_us: Option<NextIn>,
}

#[derive(Deserialize)]
struct NextIn {
    p50: Option<f64>,
    p99: Option<f64>,
    p999: Option<f64>,
}

fn need<T>(x: Option<T>, what: &str) -> Result<T> {
    x.ok_or_else(|| input(format!("no {what}")))
}

impl RunIn {
    fn of(doc: &Value) -> Result<RunIn> {
        Ok(RunIn::deserialize(doc)?)
    }

    fn engine(&self) -> String {
        self.engine.clone().unwrap_or_else(|| "?".into())
    }
}

/// The seekrandom phase of one engine's document, if it has one.
pub fn seek_run(doc: &Value) -> Result<Option<SeekRun>> {
    let run = RunIn::of(doc)?;
    let phases = need(run.phases.as_ref(), "phases")?;
    let Some(p) = phases
        .iter()
        .find(|p| p.name.as_deref() == Some("seekrandom"))
    else {
        return Ok(None);
    };
    let c = need(run.config.as_ref(), "config")?;
    let seek = c.seekrandom.as_ref();
    let next = |f: fn(&NextIn) -> Option<f64>| p.next_latency_us.as_ref().and_then(f);
    Ok(Some(SeekRun {
        engine: run.engine(),
        num: c.num.unwrap_or(0),
        value_size: need(c.value_size, "value_size")?,
        scan_length: need(p.scan_length, "scan_length")?,
        prefetch_degree: seek.and_then(|s| s.prefetch_degree),
        index_prefetch: seek.and_then(|s| s.index_prefetch),
        seeks: need(p.ops, "ops")?,
        seconds: need(p.seconds, "seconds")?,
        ops_per_sec: need(p.ops_per_sec, "ops_per_sec")?,
        mb_per_sec: need(p.mb_per_sec, "mb_per_sec")?,
        entries: need(p.entries, "entries")?,
        next_p50_us: next(|n| n.p50),
        next_p99_us: next(|n| n.p99),
        next_p999_us: next(|n| n.p999),
    }))
}

/// Each engine of a posix run's document (one object or an array of them).
pub fn engine_runs(doc: &Value) -> Result<Vec<EngineRun>> {
    let docs: Vec<&Value> = match doc {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    docs.into_iter()
        .map(|d| {
            let run = RunIn::of(d)?;
            let ops = run.phases.iter().flatten();
            let ops = ops.filter_map(|p| Some((p.name.clone()?, p.ops_per_sec?)));
            Ok(EngineRun {
                engine: run.engine(),
                ops_per_sec: ops.collect(),
                seek: seek_run(d)?,
            })
        })
        .collect()
}

/// Reads every `*.json` of `dir` whose name has one of the sweep's prefixes; files that
/// cannot be read are skipped with a warning.
pub fn read_sweep(dir: &Path) -> Result<(Sweep, Vec<String>)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    let mut sweep = Sweep::default();
    let mut warnings = Vec::new();
    for name in names {
        let part = [NAND_PREFIX, POSIX_PREFIX, INDEX_PREFIX]
            .into_iter()
            .find(|p| name.starts_with(p));
        let Some(part) = part else { continue };
        let path = dir.join(&name);
        let read = || -> Result<Value> {
            let text = std::fs::read(&path)?;
            Ok(serde_json::from_slice(&text)?)
        };
        let result = read().and_then(|doc| add(&mut sweep, part, &doc));
        if let Err(e) = result {
            warnings.push(format!("{name}: skipped: {}", e.chain()));
        }
    }
    Ok((sweep, warnings))
}

fn add(sweep: &mut Sweep, part: &str, doc: &Value) -> Result<()> {
    let first = match doc {
        Value::Array(a) => a.first().ok_or_else(|| input("an empty array"))?,
        other => other,
    };
    match part {
        NAND_PREFIX => {
            let run = seek_run(first)?.ok_or_else(|| input("no seekrandom phase"))?;
            let point = NandPoint {
                value_size: run.value_size,
                scan_length: run.scan_length,
                prefetch_degree: run
                    .prefetch_degree
                    .ok_or_else(|| input("no prefetch degree: not a cerberus run"))?,
            };
            sweep.nand.entry(point).or_default().push(run);
        }
        INDEX_PREFIX => {
            let run = seek_run(first)?.ok_or_else(|| input("no seekrandom phase"))?;
            let on = run
                .index_prefetch
                .ok_or_else(|| input("no index_prefetch: not a cerberus run"))?;
            let d = run
                .prefetch_degree
                .ok_or_else(|| input("no prefetch degree: not a cerberus run"))?;
            sweep.index.entry((d, on)).or_default().push(run);
        }
        _ => {
            let run = RunIn::of(first)?;
            let c = need(run.config, "config")?;
            let point = PosixPoint {
                num: need(c.num, "num")?,
                value_size: need(c.value_size, "value_size")?,
                threads: c.threads.unwrap_or(1),
            };
            sweep
                .posix
                .entry(point)
                .or_default()
                .push(engine_runs(doc)?);
        }
    }
    Ok(())
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use serde_json::json;

    /// A seekrandom document as cerberus-bench writes it (the fields read here).
    pub fn seek_doc(engine: &str, v: u64, l: u64, d: Option<u64>, idx: bool, ops: f64) -> Value {
        json!({
            "engine": engine,
            "workload": "seekrandom",
            "config": { "num": 1000, "value_size": v,
                        "seekrandom": { "seeks": 10, "scan_length": l, "keys_only": false,
                                        "prefetch_degree": d,
                                        "index_prefetch": d.map(|_| idx) } },
            "phases": [ { "name": "seekrandom", "ops": 10, "seconds": 10.0 / ops,
                          "ops_per_sec": ops, "mb_per_sec": ops * l as f64 * v as f64 / 1048576.0,
                          "entries": 10 * l, "scan_length": l,
                          "next_latency_us": { "p50": 1.0, "p99": 100.0, "p999": 1000.0 / ops } } ]
        })
    }

    #[test]
    fn a_sweep_directory_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, v: &Value| {
            std::fs::write(dir.path().join(name), serde_json::to_vec(v).unwrap()).unwrap()
        };
        write(
            "nand-v128-l128-d0-r1.json",
            &seek_doc("cerberus", 128, 128, Some(0), true, 10.0),
        );
        write(
            "nand-v128-l128-d0-r2.json",
            &seek_doc("cerberus", 128, 128, Some(0), true, 20.0),
        );
        write(
            "nand-v128-l128-d8-r1.json",
            &seek_doc("cerberus", 128, 128, Some(8), true, 40.0),
        );
        write(
            "idx-d8-off-r1.json",
            &seek_doc("cerberus", 256, 9, Some(8), false, 1.0),
        );
        write(
            "idx-d8-on-r1.json",
            &seek_doc("cerberus", 256, 9, Some(8), true, 2.0),
        );
        let mut fill = seek_doc("rocksdb", 1024, 100, None, false, 5.0);
        fill["phases"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({ "name": "fillrandom", "ops_per_sec": 1000.0 }));
        write(
            "posix-r1.json",
            &json!([seek_doc("cerberus", 1024, 100, Some(0), true, 6.0), fill]),
        );
        write("nand-broken.json", &json!({ "phases": [] }));
        write("other.json", &json!(1));
        let (s, warnings) = read_sweep(dir.path()).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("nand-broken"));
        let p = NandPoint {
            value_size: 128,
            scan_length: 128,
            prefetch_degree: 0,
        };
        assert_eq!(s.nand[&p].len(), 2);
        assert_eq!(s.nand.len(), 2);
        let r = &s.nand[&p][0];
        assert_eq!((r.entries, r.seeks), (1280, 10));
        assert!((r.entries_per_sec() - 1280.0).abs() < 1e-6);
        assert_eq!(r.entries_per_seek(), 128.0);
        assert_eq!(s.index[&(8, false)][0].ops_per_sec, 1.0);
        assert_eq!(s.index[&(8, true)][0].next_p999_us, Some(500.0));
        assert_eq!(s.posix.len(), 1);
        let (point, runs) = s.posix.iter().next().unwrap();
        assert_eq!(
            (point.num, point.value_size, point.threads),
            (1000, 1024, 1)
        );
        assert_eq!(runs[0][1].engine, "rocksdb");
        assert_eq!(runs[0][1].ops_per_sec["fillrandom"], 1000.0);
        assert_eq!(runs[0][1].seek.as_ref().unwrap().prefetch_degree, None);
    }
}
