//! Repeated grid points: `scripts/repro-multitenant --repeat N` runs each point N times into
//! `NAME.r1.json` .. `NAME.rN.json`; `cerberus-bench grid-median --dir DIR` writes beside them
//! `NAME.json`, their median document: every number the median of the runs' (integers stay
//! integers), everything else the first run's, plus `repeat` (the runs' files) and `ranges`
//! (`[min, max]` of every number of `summary`, `phases` and `tenants`). Readers of the single
//! run's document read it as one; the grid table and charts read the runs themselves.

use crate::error::{Context, Result};
use crate::table::median;
use clap::Parser;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Writes the median document of each repeated point of a grid (scripts/repro-multitenant).
#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench grid-median",
    bin_name = "cerberus-bench grid-median"
)]
struct Args {
    /// Directory of the grid's JSON files (the OUT of scripts/repro-multitenant).
    #[arg(long)]
    dir: PathBuf,
}

/// `cerberus-bench grid-median ...`; `args` starts with `grid-median`.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    for (base, files) in run_files(&args.dir)? {
        let docs = files
            .iter()
            .map(|f| read(f))
            .collect::<Result<Vec<Value>>>()?;
        let names: Vec<String> = files
            .iter()
            .filter_map(|f| Some(f.file_name()?.to_str()?.to_string()))
            .collect();
        let out = args.dir.join(format!("{base}.json"));
        let text = serde_json::to_string_pretty(&median_doc(&docs, &names))? + "\n";
        std::fs::write(&out, text).with_context(|| format!("writing {}", out.display()))?;
        println!("{}", out.display());
    }
    Ok(())
}

fn read(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// `NAME.rK` -> `(NAME, K)`; `None` for a stem that is not a run's.
pub fn run_stem(stem: &str) -> Option<(&str, usize)> {
    let (base, k) = stem.rsplit_once(".r")?;
    let k: usize = k.parse().ok()?;
    (!base.is_empty() && k > 0).then_some((base, k))
}

/// The runs' files in `dir` by the stem of the point they repeat, in run order.
pub fn run_files(dir: &Path) -> Result<BTreeMap<String, Vec<PathBuf>>> {
    let mut groups: BTreeMap<String, BTreeMap<usize, PathBuf>> = BTreeMap::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = e?.path();
        if path.extension().is_none_or(|e| e != "json") || !path.is_file() {
            continue;
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if let Some((base, k)) = run_stem(stem) {
            let base = base.to_string();
            groups.entry(base).or_default().insert(k, path);
        }
    }
    Ok(groups
        .into_iter()
        .map(|(b, runs)| (b, runs.into_values().collect()))
        .collect())
}

/// The median document of the runs' documents (one object each, or an array of them).
pub fn median_doc(docs: &[Value], files: &[String]) -> Value {
    let refs: Vec<&Value> = docs.iter().collect();
    let mut doc = median_of(&refs);
    let mark = |one: &mut Value, runs: &[&Value]| {
        let Value::Object(map) = one else { return };
        map.insert(
            "repeat".into(),
            serde_json::json!({ "runs": runs.len(), "files": files }),
        );
        let mut ranges = Map::new();
        for key in ["summary", "phases", "tenants"] {
            let at: Vec<&Value> = runs.iter().filter_map(|r| r.get(key)).collect();
            if let Some(r) = (at.len() == runs.len()).then(|| range_of(&at)).flatten() {
                ranges.insert(key.into(), r);
            }
        }
        map.insert("ranges".into(), Value::Object(ranges));
    };
    match &mut doc {
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let runs: Vec<&Value> = refs.iter().filter_map(|d| d.get(i)).collect();
                mark(item, &runs);
            }
        }
        one => mark(one, &refs),
    }
    doc
}

/// The same place in every run, or `None` where a run lacks it.
fn children<'a>(
    vs: &[&'a Value],
    at: impl Fn(&'a Value) -> Option<&'a Value>,
) -> Option<Vec<&'a Value>> {
    vs.iter().map(|v| at(v)).collect()
}

/// Numbers: the median (an integer when all are); objects and arrays: member by member where
/// every run has the member; anything else, or a mismatch: the first run's.
fn median_of(vs: &[&Value]) -> Value {
    match vs[0] {
        Value::Number(_) => {
            let xs: Option<Vec<f64>> = vs.iter().map(|v| v.as_f64()).collect();
            let Some(m) = xs.and_then(median) else {
                return vs[0].clone();
            };
            if vs.iter().all(|v| v.is_u64()) {
                Value::from(m.round() as u64)
            } else if vs.iter().all(|v| v.is_i64()) {
                Value::from(m.round() as i64)
            } else {
                Value::from(m)
            }
        }
        Value::Object(first) => Value::Object(
            first
                .iter()
                .map(|(k, v)| {
                    let m = children(vs, |d| d.get(k)).map_or_else(|| v.clone(), |c| median_of(&c));
                    (k.clone(), m)
                })
                .collect(),
        ),
        Value::Array(first)
            if vs
                .iter()
                .all(|v| v.as_array().map(Vec::len) == Some(first.len())) =>
        {
            Value::Array(
                (0..first.len())
                    .map(|i| children(vs, |d| d.get(i)).map_or(Value::Null, |c| median_of(&c)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// `[min, max]` of each number, in the shape of the documents; `None` where there is none.
fn range_of(vs: &[&Value]) -> Option<Value> {
    match vs[0] {
        Value::Number(_) => {
            if let Some(xs) = vs.iter().map(|v| v.as_u64()).collect::<Option<Vec<u64>>>() {
                return Some(serde_json::json!([xs.iter().min()?, xs.iter().max()?]));
            }
            let xs: Vec<f64> = vs.iter().map(|v| v.as_f64()).collect::<Option<_>>()?;
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            Some(serde_json::json!([lo, hi]))
        }
        Value::Object(first) => {
            let map: Map<String, Value> = first
                .keys()
                .filter_map(|k| Some((k.clone(), range_of(&children(vs, |d| d.get(k))?)?)))
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        Value::Array(first)
            if vs
                .iter()
                .all(|v| v.as_array().map(Vec::len) == Some(first.len())) =>
        {
            let items: Vec<Value> = (0..first.len())
                .map(|i| {
                    children(vs, |d| d.get(i))
                        .and_then(|c| range_of(&c))
                        .unwrap_or(Value::Null)
                })
                .collect();
            Some(Value::Array(items))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn run_stems_parse() {
        assert_eq!(
            run_stem("posix-cerberus-shared-t4-k10-settled.r2"),
            Some(("posix-cerberus-shared-t4-k10-settled", 2))
        );
        assert_eq!(run_stem("a.r10"), Some(("a", 10)));
        for bad in ["a", "a.r", "a.r0", "a.rx", ".r1", "a.r-1"] {
            assert_eq!(run_stem(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_median_document_keeps_the_keys_and_adds_ranges() {
        let run = |put: f64, misses: u64, rss: u64, name: &str| {
            json!({"engine": "cerberus", "config": {"tenants": 2, "layout": "shared"},
                   "phases": [{"name": "put", "ops_per_sec": put}],
                   "tenants": [{"name": "tenant-0", "gets_by_level": {"L0": misses}}],
                   "summary": {"mean_put_ops_per_sec": put, "get_misses": misses,
                               "peak_rss_bytes": rss, "mean_alka_us": null, "note": name}})
        };
        let docs = [
            run(100.0, 1, 10, "a"),
            run(300.0, 4, 20, "b"),
            run(200.0, 2, 40, "c"),
        ];
        let files = [
            "x.r1.json".to_string(),
            "x.r2.json".into(),
            "x.r3.json".into(),
        ];
        let m = median_doc(&docs, &files);
        let s = &m["summary"];
        assert_eq!(s["mean_put_ops_per_sec"], 200.0);
        assert_eq!(s["get_misses"], 2);
        assert!(s["get_misses"].is_u64());
        assert_eq!(s["peak_rss_bytes"], 20);
        assert!(s["mean_alka_us"].is_null());
        assert_eq!(s["note"], "a");
        assert_eq!(m["config"]["tenants"], 2);
        assert_eq!(m["phases"][0]["ops_per_sec"], 200.0);
        assert_eq!(m["tenants"][0]["gets_by_level"]["L0"], 2);
        assert_eq!(m["repeat"]["runs"], 3);
        assert_eq!(m["repeat"]["files"][2], "x.r3.json");
        let r = &m["ranges"];
        assert_eq!(r["summary"]["mean_put_ops_per_sec"], json!([100.0, 300.0]));
        assert_eq!(r["summary"]["peak_rss_bytes"], json!([10, 40]));
        assert!(r["summary"].get("mean_alka_us").is_none());
        assert_eq!(r["phases"][0]["ops_per_sec"], json!([100.0, 300.0]));
        assert_eq!(r["tenants"][0]["gets_by_level"]["L0"], json!([1, 4]));
        // Two runs: integers round their middle.
        let m = median_doc(&docs[..2], &files[..2]);
        assert_eq!(m["summary"]["get_misses"], 3);
        // An array of documents (several engines in a file): each its own.
        let arrays = [json!([docs[0].clone()]), json!([docs[1].clone()])];
        let m = median_doc(&arrays, &files[..2]);
        assert_eq!(m[0]["summary"]["mean_put_ops_per_sec"], 200.0);
        assert_eq!(m[0]["repeat"]["runs"], 2);
    }

    #[test]
    fn run_files_group_by_point() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "p.r2.json",
            "p.r1.json",
            "p.json",
            "q.r1.json",
            "notes.r1.md",
        ] {
            std::fs::write(dir.path().join(f), "{}").unwrap();
        }
        let groups = run_files(dir.path()).unwrap();
        let names: Vec<(&str, Vec<String>)> = groups
            .iter()
            .map(|(b, fs)| {
                let fs = fs
                    .iter()
                    .map(|f| f.file_name().unwrap().to_string_lossy().into_owned());
                (b.as_str(), fs.collect())
            })
            .collect();
        assert_eq!(
            names,
            [
                ("p", vec!["p.r1.json".into(), "p.r2.json".into()]),
                ("q", vec!["q.r1.json".into()])
            ]
        );
    }
}
