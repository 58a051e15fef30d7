//! Reading a grid: the points of its JSON files, each named by its place in the grid.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
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
    fn from_config(doc: &Value) -> Option<PointName> {
        let c = doc.get("config")?;
        let cache = c.get("cache_bytes").and_then(Value::as_u64).unwrap_or(0);
        let storage = match c.get("storage")?.as_str()? {
            "nand" if cache == 0 => "nand0",
            "nand" => "nandbf",
            other => other,
        };
        let settle = match c.get("settle").and_then(Value::as_bool) {
            Some(false) => NO_SETTLE,
            _ => SETTLED,
        };
        Some(PointName {
            storage: storage.into(),
            engine: doc.get("engine")?.as_str()?.into(),
            layout: c.get("layout")?.as_str()?.into(),
            tenants: usize::try_from(c.get("tenants")?.as_u64()?).ok()?,
            keys: c.get("num_per_tenant")?.as_u64()?,
            settle: settle.into(),
        })
    }
}

/// One run of the grid: the figures the charts use.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub name: PointName,
    /// Means over the tenants of each tenant's ops/s.
    pub put_ops_per_tenant: f64,
    pub get_ops_per_tenant: f64,
    /// Means over the tenants; `None` when the engine counts none (RocksDB).
    pub filter_loads_per_get: Option<f64>,
    pub page_reads_per_get: Option<f64>,
    /// Gets of all tenants by where they were answered, in search order (see [`step_order`]);
    /// empty when the engine counts none.
    pub gets_by_step: Vec<(String, u64)>,
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
pub fn point_from_doc(name: Option<PointName>, doc: &Value) -> Result<Point> {
    if let Some(w) = doc.get("workload").and_then(Value::as_str) {
        if w != "multitenant" {
            bail!("workload {w}, not multitenant");
        }
    }
    let mut name = match name {
        Some(n) => n,
        None => PointName::from_config(doc)
            .ok_or_else(|| anyhow!("neither a grid file name nor a multitenant config"))?,
    };
    if let Some(e) = doc.get("engine").and_then(Value::as_str) {
        // A file with several engines: each document says its own.
        name.engine = e.to_string();
    }
    let summary = doc
        .get("summary")
        .filter(|s| s.is_object())
        .ok_or_else(|| anyhow!("no summary"))?;
    let number = |key: &str| summary.get(key).and_then(Value::as_f64);
    let mut steps: BTreeMap<(u8, u32, String), (String, u64)> = BTreeMap::new();
    let tenants = doc.get("tenants").and_then(Value::as_array);
    for t in tenants.into_iter().flatten() {
        let Some(by) = t.get("gets_by_level").and_then(Value::as_object) else {
            continue;
        };
        for (step, n) in by {
            let n = n
                .as_u64()
                .ok_or_else(|| anyhow!("gets_by_level.{step} is not a count"))?;
            steps
                .entry(step_order(step))
                .or_insert_with(|| (step.clone(), 0))
                .1 += n;
        }
    }
    Ok(Point {
        name,
        put_ops_per_tenant: number("mean_put_ops_per_sec")
            .ok_or_else(|| anyhow!("no summary.mean_put_ops_per_sec"))?,
        get_ops_per_tenant: number("mean_get_ops_per_sec")
            .ok_or_else(|| anyhow!("no summary.mean_get_ops_per_sec"))?,
        filter_loads_per_get: number("mean_filter_loads_per_get"),
        page_reads_per_get: number("mean_page_reads_per_get"),
        gets_by_step: steps.into_values().collect(),
    })
}

/// The points of one file: one document, or an array of them (one per engine).
pub fn points_from_text(stem: &str, text: &str) -> Result<Vec<Point>> {
    let v: Value = serde_json::from_str(text).context("not JSON")?;
    let name = PointName::parse(stem);
    match &v {
        Value::Array(docs) => docs
            .iter()
            .map(|d| point_from_doc(name.clone(), d))
            .collect(),
        doc => Ok(vec![point_from_doc(name, doc)?]),
    }
}

/// Every multitenant point of the `*.json` files in `dir` (not its subdirectories), and a
/// warning for each file that is not one, or that repeats a point.
pub fn read_grid(dir: &Path) -> Result<(Vec<Point>, Vec<String>)> {
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
        let read = std::fs::read_to_string(&f)
            .map_err(anyhow::Error::from)
            .and_then(|text| points_from_text(stem, &text));
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
            Err(e) => warnings.push(format!("{}: skipped: {e:#}", f.display())),
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
    pub(in crate::plot) fn doc(
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
        assert_eq!(p.put_ops_per_tenant, 1500.0);
        assert_eq!(p.get_ops_per_tenant, 3000.0);
        assert_eq!(p.filter_loads_per_get, Some(1.25));
        assert_eq!(p.page_reads_per_get, Some(4.5));
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
        assert_eq!(p.filter_loads_per_get, None);
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
