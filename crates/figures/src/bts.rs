//! `cerberus-paper plot-bts --input BTS.json --out DIR`: the charts of a `cerberus-paper bts`
//! run (the BTS paper's Figure 7): per client thread count, the medians of each policy's
//! mean and p99 put latency, and its puts per second.

use super::charts::{Chart, Legend, Series};
use crate::docs::bts::{Median, RunDoc};
use crate::error::{bail, Context, Result};
use cerberus_device::Policy;
use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-paper plot-bts",
    bin_name = "cerberus-paper plot-bts",
    about = "Draws the charts of a `cerberus-paper bts --json` run"
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

/// `cerberus-paper plot-bts ...`; `args` starts with `plot-bts`.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let text = std::fs::read_to_string(&args.input)
        .with_context(|| format!("reading {}", args.input.display()))?;
    let run: RunDoc = serde_json::from_str(&text).context("parsing the run")?;
    let charts = charts(&run)?;
    crate::render::draw_charts(args.font.as_deref(), &args.out, &charts)
}

/// Case 1-3 of the paper, in its colours' order.
fn color(policy: Policy) -> [u8; 3] {
    match policy {
        Policy::Off => [44, 160, 44],
        Policy::Inline => [214, 39, 40],
        Policy::Bts => [31, 119, 180],
    }
}

fn label(policy: Policy) -> &'static str {
    match policy {
        Policy::Off => "off (no background service, Case 1)",
        Policy::Inline => "inline (task on the put's core, Case 2)",
        Policy::Bts => "bts (idle cores, Case 3)",
    }
}

fn charts(run: &RunDoc) -> Result<Vec<Chart>> {
    let medians = &run.medians;
    let mut threads: Vec<usize> = medians.iter().map(|m| m.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut policies: Vec<Policy> = Vec::new();
    for m in medians {
        if !policies.contains(&m.policy) {
            policies.push(m.policy);
        }
    }
    if threads.is_empty() || policies.is_empty() {
        bail!("the run has no points");
    }
    let value_kib = run.value_size / 1024;
    let (cores, cpus, rounds) = (run.cores, run.cpus, run.rounds);
    let chart = |file: &str, what: &str, y: &str, field: fn(&Median) -> f64, legend| Chart {
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
                ranges: Vec::new(),
                name: label(*p).into(),
                color: color(*p),
                values: threads
                    .iter()
                    .map(|&t| {
                        medians
                            .iter()
                            .find(|m| m.policy == *p && m.threads == t)
                            .map(field)
                    })
                    .collect(),
            })
            .collect(),
        percent: false,
        legend,
        bars: false,
    };
    Ok(vec![
        chart(
            "bts-mean-latency.png",
            "Mean put latency",
            "microseconds",
            |m| m.mean_us,
            Legend::UpperLeft,
        ),
        chart(
            "bts-p99-latency.png",
            "p99 put latency",
            "microseconds",
            |m| m.p99_us,
            Legend::UpperLeft,
        ),
        chart(
            "bts-throughput.png",
            "Puts per second",
            "puts/s",
            |m| m.puts_per_sec,
            Legend::UpperRight,
        ),
    ])
}
