//! `cerberus-bench plot-noisy --input NOISY.json --out DIR`: the charts of a
//! `cerberus-bench noisy` run, per storage the victim's gets/s and p99 get latency in each
//! phase, a line per layout; and the text table the run prints ([`table`]).

use crate::charts::{layout_color, layout_order, Chart, Legend, Series, PALETTE};
use crate::docs::noisy::{NoisyDoc, NoisyPhase, NoisyRun};
use crate::error::{bail, Context, Result};
use crate::table::{thousands, Table};
use clap::Parser;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench plot-noisy",
    bin_name = "cerberus-bench plot-noisy",
    about = "Draws the charts of a `cerberus-bench noisy --json` run"
)]
struct Args {
    /// The run's JSON document.
    #[arg(long)]
    input: PathBuf,
    /// Directory the PNG files go to (made if missing).
    #[arg(long, default_value = "docs/plots")]
    out: PathBuf,
    /// TrueType or OpenType font for the text.
    #[arg(long, env = "CERBERUS_PLOT_FONT")]
    font: Option<PathBuf>,
}

/// `cerberus-bench plot-noisy ...`; `args` starts with `plot-noisy`.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let text = std::fs::read_to_string(&args.input)
        .with_context(|| format!("reading {}", args.input.display()))?;
    let doc: NoisyDoc = serde_json::from_str(&text).context("parsing the run")?;
    let charts = charts(&doc);
    if charts.is_empty() {
        bail!("no runs in {}", args.input.display());
    }
    crate::render::draw_charts(args.font.as_deref(), &args.out, &charts)
}

fn storages(doc: &NoisyDoc) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    doc.runs
        .iter()
        .map(|r| r.storage.as_str())
        .filter(|s| seen.insert(*s))
        .collect()
}

fn runs_of<'a>(doc: &'a NoisyDoc, storage: &str) -> Vec<&'a NoisyRun> {
    let mut runs: Vec<&NoisyRun> = doc.runs.iter().filter(|r| r.storage == storage).collect();
    runs.sort_by_key(|r| layout_order(&r.layout));
    runs
}

/// Per storage: the victim's gets/s and its p99 get latency against the phases, a line per
/// layout.
fn charts(doc: &NoisyDoc) -> Vec<Chart> {
    let mut out = Vec::new();
    for storage in storages(doc) {
        let runs = runs_of(doc, storage);
        let mut phases: Vec<&str> = Vec::new();
        for p in runs.iter().flat_map(|r| &r.phases) {
            if !phases.contains(&p.name.as_str()) {
                phases.push(&p.name);
            }
        }
        let about = format!(
            "{} neighbours writing {}x the victim's {} keys each, {}, {storage}",
            doc.config.neighbours,
            doc.config.write_factor,
            thousands(doc.config.victim_keys as f64),
            doc.engine
        );
        let chart = |file: &str, what: &str, y: &str, f: fn(&NoisyPhase) -> f64| Chart {
            file: format!("noisy-{}-{storage}-{file}.png", doc.engine),
            title: format!("{what}: {about}"),
            x_desc: "phase".into(),
            y_desc: y.into(),
            categories: phases.iter().map(ToString::to_string).collect(),
            series: runs
                .iter()
                .enumerate()
                .map(|(i, r)| Series {
                    name: r.label(),
                    // Several runs of a layout need a color each.
                    color: if r.is_variant() {
                        PALETTE[i % PALETTE.len()]
                    } else {
                        layout_color(&r.layout, i)
                    },
                    values: phases
                        .iter()
                        .map(|n| r.phases.iter().find(|p| p.name == *n).map(f))
                        .collect(),
                    ranges: Vec::new(),
                })
                .collect(),
            percent: false,
            legend: Legend::UpperRight,
            bars: false,
        };
        out.push(chart(
            "victim-gets",
            "Victim gets/s",
            "victim gets/s",
            |p| p.victim_gets_per_sec,
        ));
        out.push(chart(
            "victim-p99",
            "Victim p99 get latency",
            "victim p99 get latency (us)",
            |p| p.victim_latency_us.p99,
        ));
    }
    out
}

fn fixed(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// The text the run prints: per storage a markdown table, a row per layout and phase.
pub fn table(doc: &NoisyDoc) -> String {
    let c = &doc.config;
    let mut out = format!(
        "noisy: {}, victim {} keys, {} gets per quiet phase; {} neighbours writing {}x its \
         keys each; {} B keys, {} B values, profile {}, cache {} B\n",
        doc.engine,
        thousands(c.victim_keys as f64),
        thousands(c.victim_gets as f64),
        c.neighbours,
        c.write_factor,
        c.key_size,
        c.value_size,
        c.profile.as_deref().unwrap_or("none"),
        c.cache_bytes
    );
    if c.victim_nice != 0 {
        out += &format!("victim's client thread at nice {}\n", c.victim_nice);
    }
    if let Some(threads) = c.network_threads {
        out += &format!(
            "device: {threads} network thread(s) at nice {}, lanes at nice {}, victim \
             reservation {} ops/s, neighbours putting {} at a time\n",
            c.network_nice, c.background_nice, c.victim_reservation_ops, c.neighbour_batch
        );
        if let Some(n) = c.frames_per_turn {
            out += &format!("device: {n} frames per connection's turn (0: no turns)\n");
        }
    }
    for storage in storages(doc) {
        out += &format!("\n## {storage}\n\n");
        let mut t = Table::aligned([
            ("layout", false),
            ("phase", false),
            ("victim gets/s", true),
            ("vs alone", true),
            ("p50 us", true),
            ("p99 us", true),
            ("p999 us", true),
            ("filter loads/get", true),
            ("pages/get", true),
            ("neighbour puts/s", true),
        ]);
        for r in runs_of(doc, storage) {
            let alone = r.phases.first().map(|p| p.victim_gets_per_sec);
            for p in &r.phases {
                let l = &p.victim_latency_us;
                let ratio = alone
                    .filter(|a| *a > 0.0)
                    .map(|a| p.victim_gets_per_sec / a);
                let puts = (p.neighbour_puts > 0).then_some(p.neighbour_puts_per_sec);
                t.row([
                    r.label(),
                    p.name.clone(),
                    thousands(p.victim_gets_per_sec),
                    fixed(ratio, 2) + "x",
                    fixed(Some(l.p50), 1),
                    fixed(Some(l.p99), 1),
                    fixed(Some(l.p999), 1),
                    fixed(p.filter_loads_per_get, 2),
                    fixed(p.page_reads_per_get, 2),
                    puts.map_or("-".into(), thousands),
                ]);
            }
        }
        out += t.render();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::noisy::{LatencyUs, NoisyConfig};

    fn phase(name: &str, gets_per_sec: f64, p99: f64) -> NoisyPhase {
        NoisyPhase {
            name: name.into(),
            seconds: 1.0,
            victim_gets: gets_per_sec as u64,
            victim_gets_per_sec: gets_per_sec,
            victim_latency_us: LatencyUs {
                mean: p99 / 2.0,
                p50: p99 / 3.0,
                p99,
                p999: p99 * 2.0,
            },
            victim_misses: 0,
            filter_loads_per_get: Some(0.5),
            page_reads_per_get: None,
            neighbour_puts: u64::from(name == "noisy") * 1000,
            neighbour_puts_per_sec: 5000.0,
            victim_shares_served: None,
            threads: Default::default(),
        }
    }

    fn doc() -> NoisyDoc {
        let run = |storage: &str, layout: &str| NoisyRun {
            storage: storage.into(),
            layout: layout.into(),
            counters_shared_by_tenants: layout == "baseline",
            shares: None,
            neighbours_niced: false,
            phases: vec![
                phase("alone", 1000.0, 10.0),
                phase("noisy", 500.0, 40.0),
                phase("settled", 900.0, 12.0),
            ],
        };
        NoisyDoc {
            engine: "cerberus".into(),
            workload: "noisy".into(),
            config: NoisyConfig {
                neighbours: 7,
                victim_keys: 50_000,
                write_factor: 2,
                victim_gets: 50_000,
                key_size: 16,
                value_size: 1024,
                profile: Some("paper".into()),
                cache_bytes: 0,
                seed: 42,
                neighbour_batch: 1,
                victim_reservation_ops: 0,
                network_threads: None,
                network_nice: 0,
                background_nice: 0,
                victim_nice: 0,
                frames_per_turn: None,
            },
            runs: vec![
                run("nand", "shared"),
                run("nand", "per_namespace"),
                run("posix", "baseline"),
            ],
        }
    }

    #[test]
    fn charts_per_storage_with_a_line_per_layout() {
        let charts = charts(&doc());
        let files: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "noisy-cerberus-nand-victim-gets.png",
                "noisy-cerberus-nand-victim-p99.png",
                "noisy-cerberus-posix-victim-gets.png",
                "noisy-cerberus-posix-victim-p99.png",
            ]
        );
        let gets = &charts[0];
        assert_eq!(gets.categories, ["alone", "noisy", "settled"]);
        let names: Vec<&str> = gets.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["per_namespace", "shared"]);
        assert_eq!(
            gets.series[0].values,
            [Some(1000.0), Some(500.0), Some(900.0)]
        );
        assert_eq!(
            charts[1].series[1].values,
            [Some(10.0), Some(40.0), Some(12.0)]
        );
    }

    #[test]
    fn the_table_has_a_row_per_layout_and_phase() {
        let text = table(&doc());
        assert!(text.contains("## nand\n"), "{text}");
        assert!(
            text.contains(
                "| per_namespace | noisy | 500 | 0.50x | 13.3 | 40.0 | 80.0 | 0.50 | - | 5,000 |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| baseline | settled | 900 | 0.90x | 4.0 | 12.0 | 24.0 | 0.50 | - | - |"
            ),
            "{text}"
        );
        // The document round-trips through its JSON.
        let d = doc();
        let back: NoisyDoc = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }
}
