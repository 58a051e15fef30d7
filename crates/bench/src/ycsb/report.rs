//! What `cerberus-bench ycsb` prints and writes as JSON: per workload and engine, the load and
//! run phases' ops/s and, per operation type, ops/s and p50/p99/p99.9 latency; per tenant and
//! summed with --tenants; then the first engine's ratio to each other.

use super::run::{Figures, Outcome};
use super::workload::{Op, Workload};
use cerberus_bench_engines::Engine;
use cerberus_figures::{median, thousands, Table};
use serde_json::{json, Value};

/// One workload on one engine in one round: an outcome per key space (one, or one per tenant).
pub struct WorkloadRun {
    pub round: usize,
    pub engine: Engine,
    pub workload: Workload,
    pub spaces: Vec<Outcome>,
}

impl WorkloadRun {
    /// The run phase's ops/s, summed over the key spaces.
    pub fn ops_per_sec(&self) -> f64 {
        self.spaces
            .iter()
            .map(|s| s.run.ops_per_sec(s.run.total()))
            .sum()
    }

    /// The phase `pick` of every key space merged, at the ops/s their sum makes.
    fn summed(&self, pick: fn(&Outcome) -> &Figures) -> (Figures, f64) {
        let mut all = Figures::default();
        let mut rate = 0.0;
        for s in &self.spaces {
            let f = pick(s);
            rate += f.ops_per_sec(f.total());
            all.seconds = all.seconds.max(f.seconds);
            for (a, b) in all.ops.iter_mut().zip(&f.ops) {
                a.count += b.count;
                a.latency.merge(&b.latency);
            }
            all.read_misses += f.read_misses;
            all.scanned += f.scanned;
        }
        (all, rate)
    }
}

fn us(f: &Figures, op: Op, p: f64) -> f64 {
    f.ops[op.index()].latency.percentile(p) / 1e3
}

/// A phase's lines: its total, then each operation type it did. `rate` is its ops/s (the
/// sum over tenants), each type's share of it in proportion to its count.
fn phase_lines(name: &str, f: &Figures, rate: f64, indent: &str) -> String {
    let total = f.total();
    let mut out = format!("{indent}{name:<8} {total:>10} ops {rate:>12.0} ops/s");
    if f.read_misses > 0 {
        out += &format!("  ({} reads not found)", f.read_misses);
    }
    for op in Op::ALL {
        let count = f.ops[op.index()].count;
        if count == 0 {
            continue;
        }
        let share = rate * count as f64 / total.max(1) as f64;
        out += &format!(
            "\n{indent}  {:<6} {count:>10} ops {share:>12.0} ops/s  p50 {:.1}  p99 {:.1}  \
             p99.9 {:.1} us",
            op.name(),
            us(f, op, 50.0),
            us(f, op, 99.0),
            us(f, op, 99.9),
        );
    }
    out
}

/// The text of one workload run: the header, the load and run phases (summed over tenants),
/// then each tenant's.
pub fn text(r: &WorkloadRun, rounds: usize) -> String {
    let round = if rounds > 1 {
        format!(", round {} of {rounds}", r.round + 1)
    } else {
        String::new()
    };
    let mut out = format!(
        "ycsb {} ({}) on {}{round}",
        r.workload.name(),
        r.workload.describe(),
        r.engine.name()
    );
    let (load, load_rate) = r.summed(|s| &s.load);
    let (run, run_rate) = r.summed(|s| &s.run);
    out += &format!("\n{}", phase_lines("load", &load, load_rate, "  "));
    out += &format!("\n{}", phase_lines("run", &run, run_rate, "  "));
    if run.scanned > 0 {
        out += &format!("\n  scans read {} entries", run.scanned);
    }
    if r.spaces.len() > 1 {
        for (i, s) in r.spaces.iter().enumerate() {
            let rate = s.run.ops_per_sec(s.run.total());
            out += &format!(
                "\n  tenant-{i}\n{}",
                phase_lines("run", &s.run, rate, "    ")
            );
        }
    }
    out
}

/// Per workload, the first engine's run ops/s over each other engine's: the median over the
/// rounds of the ratio within each round.
pub fn ratio_table(runs: &[WorkloadRun], engines: &[Engine], workloads: &[Workload]) -> String {
    let mut out = String::from("ratio of run ops/s (median over rounds, taken within each round)");
    let Some(&first) = engines.first() else {
        return out;
    };
    for &w in workloads {
        for &other in &engines[1..] {
            let rate = |e: Engine, round: usize| {
                runs.iter()
                    .find(|r| r.engine == e && r.workload == w && r.round == round)
                    .map(WorkloadRun::ops_per_sec)
            };
            let ratios = runs
                .iter()
                .filter(|r| r.engine == first && r.workload == w)
                .filter_map(|r| Some((r.ops_per_sec(), rate(other, r.round)?)))
                .filter(|(_, b)| *b > 0.0)
                .map(|(a, b)| a / b);
            if let Some(m) = median(ratios) {
                out += &format!(
                    "\n  {}  {:<20} {m:.3}",
                    w.name(),
                    format!("{}/{}", first.name(), other.name())
                );
            }
        }
    }
    out
}

fn spread(xs: &[f64]) -> String {
    let (lo, hi) = crate::rounds::range(xs);
    format!("({}-{})", thousands(lo), thousands(hi))
}

/// The runs as a markdown table (`--markdown`): per workload and engine, the run phase's
/// median ops/s (min-max), the load's, the reads' (a scan workload's scans') median p50, p99
/// and p99.9, and the first engine's ratio, the median of the per-round ratios (min-max).
pub fn markdown(runs: &[WorkloadRun], engines: &[Engine], workloads: &[Workload]) -> String {
    let Some(&first) = engines.first() else {
        return String::new();
    };
    let ratio_head = format!("{}/engine", first.name());
    let mut t = Table::aligned([
        ("workload", false),
        ("engine", false),
        ("run ops/s, median (min-max)", true),
        ("load ops/s", true),
        ("reads p50 / p99 / p99.9 us", true),
        (ratio_head.as_str(), true),
    ]);
    for &w in workloads {
        for &e in engines {
            let mine: Vec<&WorkloadRun> = runs
                .iter()
                .filter(|r| r.engine == e && r.workload == w)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let run: Vec<f64> = mine.iter().map(|r| r.ops_per_sec()).collect();
            let load = median(mine.iter().map(|r| r.summed(|s| &s.load).1));
            let op = if w == Workload::E { Op::Scan } else { Op::Read };
            let lat = |p: f64| {
                median(mine.iter().map(|r| us(&r.summed(|s| &s.run).0, op, p))).unwrap_or(0.0)
            };
            let ratios: Vec<f64> = runs
                .iter()
                .filter(|r| r.engine == first && r.workload == w && e != first)
                .filter_map(|a| {
                    let b = mine.iter().find(|b| b.round == a.round)?.ops_per_sec();
                    (b > 0.0).then(|| a.ops_per_sec() / b)
                })
                .collect();
            let ratio = median(ratios.iter().copied())
                .map(|m| format!("**{m:.3}** {}", spread_ratio(&ratios)))
                .unwrap_or_default();
            t.row([
                format!("{} ({})", w.name(), w.describe()),
                e.name().to_string(),
                format!(
                    "{} {}",
                    thousands(median(run.iter().copied()).unwrap_or(0.0)),
                    spread(&run)
                ),
                thousands(load.unwrap_or(0.0)),
                format!("{:.1} / {:.1} / {:.1}", lat(50.0), lat(99.0), lat(99.9)),
                ratio,
            ]);
        }
    }
    t.render().to_string()
}

fn spread_ratio(xs: &[f64]) -> String {
    let (lo, hi) = crate::rounds::range(xs);
    format!("({lo:.3}-{hi:.3})")
}

fn phase_doc(f: &Figures, rate: f64) -> Value {
    let total = f.total();
    let ops: serde_json::Map<String, Value> = Op::ALL
        .iter()
        .filter(|op| f.ops[op.index()].count > 0)
        .map(|&op| {
            let count = f.ops[op.index()].count;
            let doc = json!({
                "count": count,
                "ops_per_sec": rate * count as f64 / total.max(1) as f64,
                "p50_us": us(f, op, 50.0),
                "p99_us": us(f, op, 99.0),
                "p999_us": us(f, op, 99.9),
            });
            (op.name().to_string(), doc)
        })
        .collect();
    json!({
        "ops": total,
        "seconds": f.seconds,
        "ops_per_sec": rate,
        "read_misses": f.read_misses,
        "scanned": f.scanned,
        "by_op": ops,
    })
}

/// The JSON document of one workload run: the summed phases and, with tenants, each tenant's.
pub fn doc(r: &WorkloadRun) -> Value {
    let (load, load_rate) = r.summed(|s| &s.load);
    let (run, run_rate) = r.summed(|s| &s.run);
    let tenants: Vec<Value> = if r.spaces.len() > 1 {
        r.spaces
            .iter()
            .map(|s| {
                json!({
                    "load": phase_doc(&s.load, s.load.ops_per_sec(s.load.total())),
                    "run": phase_doc(&s.run, s.run.ops_per_sec(s.run.total())),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "workload": r.workload.name(),
        "engine": r.engine.name(),
        "round": r.round,
        "records_after": r.spaces.iter().map(|s| s.records).sum::<u64>(),
        "load": phase_doc(&load, load_rate),
        "run": phase_doc(&run, run_rate),
        "tenants": tenants,
    })
}
