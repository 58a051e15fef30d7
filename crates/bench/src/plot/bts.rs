//! `cerberus-bench plot-bts --input BTS.json --out DIR`: the charts of a `cerberus-bench bts`
//! run (the BTS paper's Figure 7): per client thread count, the medians of each policy's
//! mean and p99 put latency, and its puts per second.

use super::charts::{Chart, Legend, Series};
use anyhow::{bail, Context, Result};
use clap::Parser;
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench plot-bts",
    bin_name = "cerberus-bench plot-bts",
    about = "Draws the charts of a `cerberus-bench bts --json` run"
)]
struct Args {
    #[arg(long)]
    input: PathBuf,
    /// Directory the PNG files go to (made if missing).
    #[arg(long)]
    out: PathBuf,
    /// TrueType or OpenType font for the text.
    #[arg(long, env = "CERBERUS_PLOT_FONT")]
    font: Option<PathBuf>,
}

pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let text = std::fs::read_to_string(&args.input)
        .with_context(|| format!("reading {}", args.input.display()))?;
    let run: Value = serde_json::from_str(&text).context("parsing the run")?;
    let charts = charts(&run)?;
    super::draw_charts(args.font.as_deref(), &args.out, &charts)
}

/// Case 1-3 of the paper, in its colours' order.
fn color(policy: &str) -> [u8; 3] {
    match policy {
        "off" => [44, 160, 44],
        "inline" => [214, 39, 40],
        _ => [31, 119, 180],
    }
}

fn label(policy: &str) -> String {
    match policy {
        "off" => "off (no background service, Case 1)".into(),
        "inline" => "inline (task on the put's core, Case 2)".into(),
        "bts" => "bts (idle cores, Case 3)".into(),
        p => p.into(),
    }
}

fn charts(run: &Value) -> Result<Vec<Chart>> {
    let medians = run["medians"].as_array().context("no medians in the run")?;
    let mut threads: Vec<u64> = medians
        .iter()
        .filter_map(|m| m["threads"].as_u64())
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let mut policies: Vec<String> = Vec::new();
    for m in medians {
        if let Some(p) = m["policy"].as_str() {
            if !policies.iter().any(|x| x == p) {
                policies.push(p.to_string());
            }
        }
    }
    if threads.is_empty() || policies.is_empty() {
        bail!("the run has no points");
    }
    let value_kib = run["value_size"].as_u64().unwrap_or(0) / 1024;
    let cores = run["cores"].as_u64().unwrap_or(0);
    let cpus = run["cpus"].as_u64().unwrap_or(0);
    let rounds = run["rounds"].as_u64().unwrap_or(1);
    let chart = |file: &str, what: &str, y: &str, field: &str, legend: Legend| Chart {
        file: file.into(),
        title: format!(
            "{what} (fill sequential, {value_kib} KiB, dedup; {cores} cores on {cpus} CPUs; \
             median of {rounds})"
        ),
        x_desc: "client threads".into(),
        y_desc: y.into(),
        categories: threads.iter().map(|t| t.to_string()).collect(),
        series: policies
            .iter()
            .map(|p| Series {
                name: label(p),
                color: color(p),
                values: threads
                    .iter()
                    .map(|&t| {
                        medians
                            .iter()
                            .find(|m| m["policy"] == p.as_str() && m["threads"] == t)
                            .and_then(|m| m[field].as_f64())
                    })
                    .collect(),
            })
            .collect(),
        percent: false,
        legend,
    };
    Ok(vec![
        chart(
            "bts-mean-latency.png",
            "Mean put latency",
            "microseconds",
            "mean_us",
            Legend::UpperLeft,
        ),
        chart(
            "bts-p99-latency.png",
            "p99 put latency",
            "microseconds",
            "p99_us",
            Legend::UpperLeft,
        ),
        chart(
            "bts-throughput.png",
            "Puts per second",
            "puts/s",
            "puts_per_sec",
            Legend::UpperRight,
        ),
    ])
}
