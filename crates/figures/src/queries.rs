//! `cerberus-paper plot-queries --input RUN.json ... --out DIR`: PNG charts of `cerberus-paper
//! queries` runs. Each run gives one chart: for every query and secondary key, how many times
//! faster each engine answered than the run's baseline (the engine without an index, else
//! SQLite), so the paper's ratios (Figures 4 and 11) read off the bars' heights.

use super::charts::{Chart, Legend, Series, PALETTE};
use crate::docs::queries::{EngineDoc, QueriesDoc};
use crate::error::{bail, Context, Result};
use clap::Parser;
use serde::Deserialize;
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-paper plot-queries",
    bin_name = "cerberus-paper plot-queries",
    version,
    about = "Draws the speedup charts of `cerberus-paper queries` runs (their --json files)"
)]
struct Args {
    /// JSON files written by `cerberus-paper queries --json` (one chart each).
    #[arg(long, required = true, num_args = 1..)]
    input: Vec<PathBuf>,

    /// Directory the PNG files go to (made if missing).
    #[arg(long)]
    out: PathBuf,

    /// TrueType or OpenType font for the text [default: DejaVu Sans, or another sans-serif
    /// font found under /usr/share/fonts].
    #[arg(long, env = "CERBERUS_PLOT_FONT")]
    font: Option<PathBuf>,
}

/// `cerberus-paper plot-queries ...`; `args` starts with `plot-queries`.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let mut charts = Vec::new();
    for path in &args.input {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let run: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let stem = path
            .file_stem()
            .map_or("queries".into(), |s| s.to_string_lossy().into_owned());
        charts.push(chart(&stem, &run).with_context(|| format!("{}", path.display()))?);
    }
    crate::render::draw_charts(args.font.as_deref(), &args.out, &charts)
}

/// Median latencies by (query, secondary key).
type Times = Vec<((String, String), f64)>;

/// The run's engines, and each one's median latency per (query, sk).
fn engines(run: &QueriesDoc) -> Vec<(String, Times)> {
    let times = |r: &EngineDoc| {
        let each = r.queries.iter();
        each.map(|q| ((q.query.clone(), q.sk.clone()), q.median_us))
            .collect()
    };
    run.runs
        .iter()
        .map(|r| (r.engine.clone(), times(r)))
        .collect()
}

/// One chart: the baseline's latency over each other engine's, per query.
fn chart(stem: &str, run: &Value) -> Result<Chart> {
    let run = QueriesDoc::deserialize(run)?;
    let engines = engines(&run);
    let base = engines
        .iter()
        .position(|(n, _)| n == "sqlite")
        .or_else(|| engines.iter().position(|(n, _)| n.contains("no index")))
        .context("no baseline in the run (sqlite, or an engine without an index)")?;
    let (base_name, all_times) = &engines[base];
    // One secondary key per query (the paper's figures: AUST, and FRAN for Q7), if the run
    // has it; every one otherwise.
    let paper = |(q, sk): &(String, String)| sk == "AUST" || (q.starts_with("Q7") && sk == "FRAN");
    let base_times: Vec<_> = match all_times.iter().any(|(k, _)| paper(k)) {
        true => all_times
            .iter()
            .filter(|(k, _)| paper(k))
            .cloned()
            .collect(),
        false => all_times.clone(),
    };
    let categories: Vec<(String, String)> = base_times.iter().map(|(k, _)| k.clone()).collect();
    if categories.is_empty() {
        bail!("the baseline ran no query");
    }
    let series = engines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != base)
        .map(|(i, (name, times))| Series {
            ranges: Vec::new(),
            name: name.clone(),
            color: PALETTE[i % PALETTE.len()],
            values: base_times
                .iter()
                .map(|(k, b)| {
                    times
                        .iter()
                        .find(|(tk, _)| tk == k)
                        .filter(|(_, t)| *t > 0.0)
                        .map(|(_, t)| b / t)
                })
                .collect(),
        })
        .collect();
    let cache = run.cache_bytes;
    Ok(Chart {
        file: format!("{stem}.png"),
        title: format!(
            "{} ({} records), {}, cache {} MiB: times faster than {base_name}",
            run.dataset,
            run.records,
            run.storage,
            cache >> 20
        ),
        x_desc: "query, secondary key".into(),
        y_desc: format!("{base_name} latency / engine latency"),
        categories: categories
            .iter()
            .map(|(q, sk)| format!("{q} {sk}"))
            .collect(),
        series,
        percent: false,
        legend: Legend::UpperLeft,
        bars: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn speedups_over_the_baseline() {
        let run = json!({"dataset": "glacier", "records": 10, "storage": "nand", "cache_bytes": 0,
            "runs": [
                {"engine": "cerberus (no index)", "queries": [
                    {"query": "Q2", "sk": "AUST", "median_us": 100.0},
                    {"query": "Q7", "sk": "FRAN", "median_us": 50.0}]},
                {"engine": "cerberus (vas)", "queries": [
                    {"query": "Q2", "sk": "AUST", "median_us": 10.0}]}]});
        let c = chart("q", &run).unwrap();
        assert_eq!(c.categories, ["Q2 AUST", "Q7 FRAN"]);
        assert!(c.y_desc.starts_with("cerberus (no index)"));
        assert_eq!(c.series.len(), 1);
        assert_eq!(c.series[0].values, [Some(10.0), None]);
        assert!(chart("q", &json!({"runs": []})).is_err());
    }
}
