//! Reading a grid: the points of its JSON files, each named by its place in the grid.

use crate::docs::multitenant::SummaryDoc;
use crate::error::{bail, input, Context, Result};
use crate::repeat::{median_doc, run_files, run_stem};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a point sits in the grid: its file name's parts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PointName {
    /// `nand0` (NAND model, no cache), `nandbf` (NAND model, every filter cached), `posix`.
    pub storage: String,
    pub engine: String,
    pub layout: String,
    pub tenants: usize,
    /// Keys per tenant.
    pub keys: u64,
    /// `settled` or `no-settle`.
    pub settle: String,
}

pub const SETTLED: &str = "settled";
pub const NO_SETTLE: &str = "no-settle";

impl PointName {
    /// The file name the grid script gives this point, without `.json`.
    pub fn stem(&self) -> String {
        format!(
            "{}-{}-{}-t{}-k{}-{}",
            self.storage, self.engine, self.layout, self.tenants, self.keys, self.settle
        )
    }

    /// Parses [`PointName::stem`]'s form; `None` for any other name.
    pub fn parse(stem: &str) -> Option<PointName> {
        let (rest, settle) = match stem.strip_suffix(&format!("-{NO_SETTLE}")) {
            Some(rest) => (rest, NO_SETTLE),
            None => (stem.strip_suffix(&format!("-{SETTLED}"))?, SETTLED),
        };
        let parts: Vec<&str> = rest.split('-').collect();
        let [storage, engine, layout, t, k] = parts[..] else {
            return None;
        };
        if [storage, engine, layout].iter().any(|s| s.is_empty()) {
            return None;
        }
        Some(PointName {
            storage: storage.into(),
            engine: engine.into(),
            layout: layout.into(),
            tenants: t.strip_prefix('t')?.parse().ok()?,
            keys: k.strip_prefix('k')?.parse().ok()?,
            settle: settle.into(),
        })
    }

    /// The point's place from the document's own `config`, for a file not named by the script.
    fn from_config(doc: &MtDoc) -> Option<PointName> {
        let c = doc.config.as_ref()?;
        let storage = match c.storage.as_str() {
            "nand" if c.cache_bytes == 0 => "nand0",
            "nand" => "nandbf",
            other => other,
        };
        Some(PointName {
            storage: storage.into(),
            engine: doc.engine.clone()?,
            layout: c.layout.clone(),
            tenants: c.tenants,
            keys: c.num_per_tenant,
            settle: if c.settle == Some(false) {
                NO_SETTLE
            } else {
                SETTLED
            }
            .into(),
        })
    }
}

/// What the plots read of a multitenant document (`multitenant::report::run_doc`'s fields).
#[derive(Deserialize)]
struct MtDoc {
    engine: Option<String>,
    workload: Option<String>,
    config: Option<MtConfigDoc>,
    summary: Option<SummaryDoc>,
    #[serde(default)]
    tenants: Vec<TenantDoc>,
}

#[derive(Deserialize)]
struct MtConfigDoc {
    storage: String,
    #[serde(default)]
    cache_bytes: u64,
    settle: Option<bool>,
    layout: String,
    tenants: usize,
    num_per_tenant: u64,
}

#[derive(Deserialize)]
struct TenantDoc {
    gets_by_level: Option<BTreeMap<String, u64>>,
    get_latency_us: Option<LatencyDoc>,
}

#[derive(Deserialize)]
struct LatencyDoc {
    mean: f64,
}

/// One run of the grid: the figures the charts and the grid table use.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub name: PointName,
    /// Means over the tenants (per-get figures `None` when the engine counts none: RocksDB).
    pub summary: SummaryDoc,
    /// Gets of all tenants by where they were answered, in search order (see [`step_order`]);
    /// empty when the engine counts none.
    pub gets_by_step: Vec<(String, u64)>,
    /// The mean over the tenants of their mean get latency, us.
    pub measured_get_us: Option<f64>,
    /// A point run several times (`NAME.r1.json` ..): each run's point, in run order; the
    /// fields above are then those of the runs' median document. Empty for a single run.
    pub runs: Vec<Point>,
}

/// Sort key of a get's search step: `memtable`, `L0`, `runs` (namespace runs split out of L0),
/// `L1`, `L2`, ..., then any other name.
pub fn step_order(step: &str) -> (u8, u32, String) {
    match step {
        "memtable" => (0, 0, String::new()),
        "L0" => (1, 0, String::new()),
        "runs" => (2, 0, String::new()),
        _ => match step.strip_prefix('L').and_then(|n| n.parse::<u32>().ok()) {
            Some(n) => (3, n, String::new()),
            None => (4, 0, step.to_string()),
        },
    }
}

/// The point of one multitenant document; `name` is the file's, if it follows the grid's form.
fn point_from_doc(name: Option<PointName>, doc: serde_json::Value) -> Result<Point> {
    let doc: MtDoc = serde_json::from_value(doc)?;
    if let Some(w) = doc.workload.as_deref().filter(|w| *w != "multitenant") {
        bail!("workload {w}, not multitenant");
    }
    let mut name = match name {
        Some(n) => n,
        None => PointName::from_config(&doc)
            .ok_or_else(|| input("neither a grid file name nor a multitenant config"))?,
    };
    if let Some(e) = &doc.engine {
        // A file with several engines: each document says its own.
        name.engine = e.clone();
    }
    let summary = doc.summary.context("no summary")?;
    let mut steps: BTreeMap<(u8, u32, String), (String, u64)> = BTreeMap::new();
    for (step, n) in doc
        .tenants
        .iter()
        .flat_map(|t| t.gets_by_level.iter().flatten())
    {
        steps
            .entry(step_order(step))
            .or_insert_with(|| (step.clone(), 0))
            .1 += n;
    }
    let latencies: Vec<f64> = doc
        .tenants
        .iter()
        .filter_map(|t| Some(t.get_latency_us.as_ref()?.mean))
        .collect();
    Ok(Point {
        name,
        summary,
        gets_by_step: steps.into_values().collect(),
        measured_get_us: (!latencies.is_empty())
            .then(|| latencies.iter().sum::<f64>() / latencies.len() as f64),
        runs: Vec::new(),
    })
}

/// The points of one file: one document, or an array of them (one per engine).
pub fn points_from_text(stem: &str, text: &str) -> Result<Vec<Point>> {
    points_from_value(stem, serde_json::from_str(text).context("not JSON")?)
}

fn points_from_value(stem: &str, v: serde_json::Value) -> Result<Vec<Point>> {
    let name = PointName::parse(stem);
    match v {
        serde_json::Value::Array(docs) => docs
            .into_iter()
            .map(|d| point_from_doc(name.clone(), d))
            .collect(),
        doc => Ok(vec![point_from_doc(name, doc)?]),
    }
}

/// The points of a point's runs (`NAME.r1.json` ..): those of their median document, each
/// with the runs' own points.
fn repeated_points(stem: &str, files: &[PathBuf]) -> Result<Vec<Point>> {
    let docs = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f)?;
            serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))
        })
        .collect::<Result<Vec<serde_json::Value>>>()?;
    let mut points = points_from_value(stem, median_doc(&docs, &[]))?;
    for doc in docs {
        for (p, run) in points.iter_mut().zip(points_from_value(stem, doc)?) {
            p.runs.push(run);
        }
    }
    Ok(points)
}

/// Every multitenant point of the `*.json` files in `dir` (not its subdirectories), and a
/// warning for each file that is not one, or that repeats a point. A point run several times
/// (`NAME.r1.json` ..) is read from its runs, and its median document `NAME.json` left out.
pub fn read_grid(dir: &Path) -> Result<(Vec<Point>, Vec<String>)> {
    let repeated = run_files(dir)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    files.sort();
    let mut points: Vec<Point> = Vec::new();
    let mut warnings = Vec::new();
    for f in files {
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let read = match (run_stem(stem), repeated.get(stem)) {
            (Some((base, _)), _) if repeated[base].first() != Some(&f) => continue,
            (Some((base, _)), _) => repeated_points(base, &repeated[base]),
            (None, Some(_)) => continue,
            (None, None) => std::fs::read_to_string(&f)
                .map_err(Into::into)
                .and_then(|text| points_from_text(stem, &text)),
        };
        match read {
            Ok(ps) => {
                for p in ps {
                    if points.iter().any(|q| q.name == p.name) {
                        warnings.push(format!(
                            "{}: {} is already in another file; left out",
                            f.display(),
                            p.name.stem()
                        ));
                    } else {
                        points.push(p);
                    }
                }
            }
            Err(e) => warnings.push(format!("{}: skipped: {}", f.display(), e.chain())),
        }
    }
    if points.is_empty() {
        bail!("no multitenant JSON files in {}", dir.display());
    }
    Ok((points, warnings))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A multitenant document as the bench writes it, cut down to what the charts read.
    pub(crate) fn doc(
        layout: &str,
        tenants: usize,
        put: f64,
        get: f64,
        loads: Option<f64>,
    ) -> String {
        let tenant = |i: usize| {
            format!(
                r#"{{"name":"tenant-{i}","nsid":{},"put_ops_per_sec":{put},"get_ops_per_sec":{get},
                   "gets_by_level":{{"memtable":10,"L0":20,"L1":50,"L2":20,"L3":0}}}}"#,
                i + 1
            )
        };
        let ts: Vec<String> = (0..tenants).map(tenant).collect();
        let loads = loads.map_or("null".into(), |l| l.to_string());
        format!(
            r#"{{"engine":"cerberus","workload":"multitenant",
                "config":{{"tenants":{tenants},"num_per_tenant":1000,"layout":"{layout}",
                           "storage":"nand","cache_bytes":0}},
                "tenants":[{}],
                "summary":{{"tenants":{tenants},"mean_put_ops_per_sec":{put},
                            "mean_get_ops_per_sec":{get},"mean_filter_loads_per_get":{loads},
                            "mean_page_reads_per_get":4.5,"nand_read_time_us_per_get":null}}}}"#,
            ts.join(",")
        )
    }

    #[test]
    fn names_round_trip() {
        let n = PointName::parse("nand0-cerberus-per_namespace-t8-k200000-settled").unwrap();
        assert_eq!(n.storage, "nand0");
        assert_eq!(n.engine, "cerberus");
        assert_eq!(n.layout, "per_namespace");
        assert_eq!((n.tenants, n.keys), (8, 200_000));
        assert_eq!(n.settle, SETTLED);
        assert_eq!(n.stem(), "nand0-cerberus-per_namespace-t8-k200000-settled");
        let n = PointName::parse("posix-rocksdb-baseline-t16-k1000000-no-settle").unwrap();
        assert_eq!(
            (n.layout.as_str(), n.settle.as_str()),
            ("baseline", NO_SETTLE)
        );
        assert_eq!(PointName::parse(&n.stem()), Some(n));
        for bad in [
            "nand-cerberus-shared-4",
            "nand0-cerberus-shared-t4-k10-later",
            "nand0-cerberus-shared-4-k10-settled",
            "nand0-cerberus-t4-k10-settled",
            "nand0-cerberus--t4-k10-settled",
            "x-nand0-cerberus-shared-t4-k10-settled",
        ] {
            assert_eq!(PointName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_document_becomes_a_point() {
        let text = doc("shared", 2, 1500.0, 3000.0, Some(1.25));
        let ps = points_from_text("nandbf-cerberus-shared-t2-k1000-no-settle", &text).unwrap();
        assert_eq!(ps.len(), 1);
        let p = &ps[0];
        assert_eq!(
            p.name.storage, "nandbf",
            "the file name wins over the config"
        );
        assert_eq!(p.name.settle, NO_SETTLE);
        assert_eq!(p.summary.mean_put_ops_per_sec, 1500.0);
        assert_eq!(p.summary.mean_get_ops_per_sec, 3000.0);
        assert_eq!(p.summary.mean_filter_loads_per_get, Some(1.25));
        assert_eq!(p.summary.mean_page_reads_per_get, Some(4.5));
        let steps: Vec<(&str, u64)> = p.gets_by_step.iter().map(|(s, n)| (&**s, *n)).collect();
        assert_eq!(
            steps,
            [
                ("memtable", 20),
                ("L0", 40),
                ("L1", 100),
                ("L2", 40),
                ("L3", 0)
            ]
        );

        // Any other name: the config says where it sits.
        let p = &points_from_text("my-run", &text).unwrap()[0];
        assert_eq!(p.name.stem(), "nand0-cerberus-shared-t2-k1000-settled");

        // RocksDB: no namespace counters.
        let text = r#"[{"engine":"rocksdb","workload":"multitenant",
            "tenants":[{"name":"tenant-0","gets_by_level":null}],
            "summary":{"mean_put_ops_per_sec":10,"mean_get_ops_per_sec":20,
                       "mean_filter_loads_per_get":null,"mean_page_reads_per_get":null}}]"#;
        let p = &points_from_text("posix-rocksdb-per_namespace-t1-k50-settled", text).unwrap()[0];
        assert_eq!(p.name.engine, "rocksdb");
        assert_eq!(p.summary.mean_filter_loads_per_get, None);
        assert!(p.gets_by_step.is_empty());

        assert!(points_from_text("x", "{").is_err());
        assert!(points_from_text("x", r#"{"workload":"fillrandom","summary":{}}"#).is_err());
        assert!(points_from_text(
            "posix-cerberus-shared-t1-k5-settled",
            r#"{"summary":{"mean_get_ops_per_sec":1}}"#
        )
        .is_err());
    }

    #[test]
    fn search_steps_sort_in_search_order() {
        let mut steps = vec!["L10", "L2", "runs", "other", "L0", "memtable", "L1"];
        steps.sort_by_key(|s| step_order(s));
        assert_eq!(
            steps,
            ["memtable", "L0", "runs", "L1", "L2", "L10", "other"]
        );
        let text = r#"{"workload":"multitenant","tenants":[
              {"gets_by_level":{"L1":3,"runs":2,"memtable":1,"L0":0}},
              {"gets_by_level":{"L1":1,"L2":4}}],
            "summary":{"mean_put_ops_per_sec":1,"mean_get_ops_per_sec":1}}"#;
        let p = &points_from_text("posix-cerberus-per_namespace-t2-k5-settled", text).unwrap()[0];
        let steps: Vec<(&str, u64)> = p.gets_by_step.iter().map(|(s, n)| (&**s, *n)).collect();
        assert_eq!(
            steps,
            [
                ("memtable", 1),
                ("L0", 0),
                ("runs", 2),
                ("L1", 4),
                ("L2", 4)
            ]
        );
    }

    #[test]
    fn an_empty_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_grid(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no multitenant JSON"), "{err}");
    }
}
