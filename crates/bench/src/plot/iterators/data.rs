//! Reading the JSON files of `scripts/repro-iterators`: what each seekrandom run measured,
//! grouped by the sweep's parts (file name prefixes) and points (the documents' `config`).

use anyhow::{anyhow, Context, Result};
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

fn f64_at(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_u64()
}

/// The seekrandom phase of one engine's document, if it has one.
pub fn seek_run(doc: &Value) -> Result<Option<SeekRun>> {
    let phases = doc
        .get("phases")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("no phases"))?;
    let Some(p) = phases
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some("seekrandom"))
    else {
        return Ok(None);
    };
    let need = |path: &[&str]| f64_at(p, path).ok_or_else(|| anyhow!("no {}", path.join(".")));
    let c = doc.get("config").ok_or_else(|| anyhow!("no config"))?;
    Ok(Some(SeekRun {
        engine: doc
            .get("engine")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        num: u64_at(c, &["num"]).unwrap_or(0),
        value_size: u64_at(c, &["value_size"]).ok_or_else(|| anyhow!("no value_size"))?,
        scan_length: u64_at(p, &["scan_length"]).ok_or_else(|| anyhow!("no scan_length"))?,
        prefetch_degree: u64_at(c, &["seekrandom", "prefetch_degree"]),
        index_prefetch: c
            .get("seekrandom")
            .and_then(|s| s.get("index_prefetch"))
            .and_then(Value::as_bool),
        seeks: u64_at(p, &["ops"]).ok_or_else(|| anyhow!("no ops"))?,
        seconds: need(&["seconds"])?,
        ops_per_sec: need(&["ops_per_sec"])?,
        mb_per_sec: need(&["mb_per_sec"])?,
        entries: u64_at(p, &["entries"]).ok_or_else(|| anyhow!("no entries"))?,
        next_p50_us: f64_at(p, &["next_latency_us", "p50"]),
        next_p99_us: f64_at(p, &["next_latency_us", "p99"]),
        next_p999_us: f64_at(p, &["next_latency_us", "p999"]),
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
            let mut ops = BTreeMap::new();
            for p in d
                .get("phases")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let (Some(name), Some(o)) = (
                    p.get("name").and_then(Value::as_str),
                    p.get("ops_per_sec").and_then(Value::as_f64),
                ) {
                    ops.insert(name.to_string(), o);
                }
            }
            Ok(EngineRun {
                engine: d
                    .get("engine")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
                ops_per_sec: ops,
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
            warnings.push(format!("{name}: skipped: {e:#}"));
        }
    }
    Ok((sweep, warnings))
}

fn add(sweep: &mut Sweep, part: &str, doc: &Value) -> Result<()> {
    let first = match doc {
        Value::Array(a) => a.first().ok_or_else(|| anyhow!("an empty array"))?,
        other => other,
    };
    match part {
        NAND_PREFIX => {
            let run = seek_run(first)?.ok_or_else(|| anyhow!("no seekrandom phase"))?;
            let point = NandPoint {
                value_size: run.value_size,
                scan_length: run.scan_length,
                prefetch_degree: run
                    .prefetch_degree
                    .ok_or_else(|| anyhow!("no prefetch degree: not a cerberus run"))?,
            };
            sweep.nand.entry(point).or_default().push(run);
        }
        INDEX_PREFIX => {
            let run = seek_run(first)?.ok_or_else(|| anyhow!("no seekrandom phase"))?;
            let on = run
                .index_prefetch
                .ok_or_else(|| anyhow!("no index_prefetch: not a cerberus run"))?;
            let d = run
                .prefetch_degree
                .ok_or_else(|| anyhow!("no prefetch degree: not a cerberus run"))?;
            sweep.index.entry((d, on)).or_default().push(run);
        }
        _ => {
            let c = first.get("config").ok_or_else(|| anyhow!("no config"))?;
            let point = PosixPoint {
                num: u64_at(c, &["num"]).ok_or_else(|| anyhow!("no num"))?,
                value_size: u64_at(c, &["value_size"]).ok_or_else(|| anyhow!("no value_size"))?,
                threads: u64_at(c, &["threads"]).unwrap_or(1),
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

/// The median of the values (the mean of the middle two for an even count); `None` if empty.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
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
    fn medians() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median([]), None);
        assert_eq!(median([f64::NAN, 5.0]), Some(5.0));
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
