//! Summary of several rounds of one engine list (`--rounds N`): the engines ran in turn, round
//! after round (device, redis, redis, device, ...: see [`order`]), each on a fresh database.
//!
//! Why: this VM's CPUs change speed from minute to minute, by more than the gaps measured
//! between engines; one run of each, seconds apart, compares the minutes as much as the
//! engines. Alternating puts every engine under the same drift, and the ratio is taken within
//! each round (the engines that ran next to each other) before its median is taken.

use crate::report::RunReport;
use cerberus_bench_engines::Engine;
use cerberus_figures::{median, thousands, Table};

/// The least and the greatest of `xs`.
pub fn range(xs: &[f64]) -> (f64, f64) {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// One phase of one engine over the rounds.
pub struct PhaseRounds {
    pub ops_per_sec: Vec<f64>,
    /// p99 latency of each round, microseconds.
    pub p99_us: Vec<f64>,
}

/// The runs of `rounds` rounds of `engines`: `(round, engine)` in the order they run. Every
/// other round runs the engines in reverse (A B, B A, A B, ...): an engine that ran second in
/// every round ran beside the state the first left (its writeback, its freed memory), and
/// the NVMe/TCP wire measured 0.81x the native one for gets when it always ran first, and
/// 0.93x when it always ran second.
pub fn order(engines: &[Engine], rounds: usize) -> Vec<(usize, Engine)> {
    (0..rounds)
        .flat_map(|r| {
            let mut these = engines.to_vec();
            if r % 2 == 1 {
                these.reverse();
            }
            these.into_iter().map(move |e| (r, e))
        })
        .collect()
}

/// Per engine of `engines` and phase, that phase's figures over the rounds, in round order
/// (whatever place the engine had in each round).
pub fn collect(runs: &[RunReport], engines: &[Engine]) -> Vec<Vec<PhaseRounds>> {
    engines
        .iter()
        .map(|&e| {
            let mut mine: Vec<&RunReport> = runs.iter().filter(|r| r.engine == e).collect();
            mine.sort_by_key(|r| r.round);
            let phases = mine.first().map_or(0, |r| r.phases.len());
            (0..phases)
                .map(|i| PhaseRounds {
                    ops_per_sec: mine
                        .iter()
                        .filter_map(|r| r.phases.get(i))
                        .map(|p| p.outcome.ops_per_sec())
                        .collect(),
                    p99_us: mine
                        .iter()
                        .filter_map(|r| r.phases.get(i))
                        .map(|p| p.outcome.latency.percentile(99.0) / 1e3)
                        .collect(),
                })
                .collect()
        })
        .collect()
}

/// The table printed after the rounds: per phase and engine the median ops/s (min-max) and
/// median p99; then the first engine over each other, the median of the per-round ratios
/// (min-max).
pub fn table(runs: &[RunReport], engines: &[Engine]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let rounds = runs.len() / engines.len().max(1);
    let per = collect(runs, engines);
    let names: Vec<&str> = engines.iter().map(|e| e.name()).collect();
    let mut out = format!(
        "median of {rounds} rounds, engines alternated (every other round in reverse): \
         ops/sec (min-max) and p99 in us; ratios taken within each round"
    );
    for (i, p) in first.phases.iter().enumerate() {
        out += &format!("\n{}", p.outcome.name);
        for (e, name) in names.iter().enumerate() {
            let Some(ph) = per[e].get(i) else { continue };
            let (lo, hi) = range(&ph.ops_per_sec);
            out += &format!(
                "\n  {name:<14} {:>10.0} ({lo:.0}-{hi:.0})  p99 {:.0}",
                median(ph.ops_per_sec.iter().copied()).unwrap_or(0.0),
                median(ph.p99_us.iter().copied()).unwrap_or(0.0),
            );
        }
        for (e, name) in names.iter().enumerate().skip(1) {
            let ratios = ratios(&per, e, i);
            if let Some(m) = median(ratios.iter().copied()) {
                let (lo, hi) = range(&ratios);
                out += &format!(
                    "\n  {:<14} {m:>10.3} ({lo:.3}-{hi:.3})",
                    format!("{}/{name}", names[0])
                );
            }
        }
    }
    out
}

/// The first engine's ops/s over engine `e`'s in phase `i`, one ratio per round.
fn ratios(per: &[Vec<PhaseRounds>], e: usize, i: usize) -> Vec<f64> {
    let (Some(a), Some(b)) = (per[0].get(i), per[e].get(i)) else {
        return Vec::new();
    };
    a.ops_per_sec
        .iter()
        .zip(&b.ops_per_sec)
        .filter(|(_, b)| **b > 0.0)
        .map(|(a, b)| a / b)
        .collect()
}

/// The rounds as a markdown table (`--markdown`): a row per phase and engine, its median
/// ops/s (min-max) and p99, and the first engine over it, the median of the per-round ratios
/// (min-max).
pub fn markdown(runs: &[RunReport], engines: &[Engine]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let per = collect(runs, engines);
    let names: Vec<&str> = engines.iter().map(|e| e.name()).collect();
    let ratio_head = format!("{}/engine", names[0]);
    let mut t = Table::aligned([
        ("phase", false),
        ("engine", false),
        ("ops/s, median (min-max)", true),
        ("p99 us", true),
        (ratio_head.as_str(), true),
    ]);
    for (i, p) in first.phases.iter().enumerate() {
        for (e, name) in names.iter().enumerate() {
            let Some(ph) = per[e].get(i) else { continue };
            let (lo, hi) = range(&ph.ops_per_sec);
            let ops = median(ph.ops_per_sec.iter().copied()).unwrap_or(0.0);
            let p99 = median(ph.p99_us.iter().copied()).unwrap_or(0.0);
            let rs = ratios(&per, e, i);
            let ratio = match median(rs.iter().copied()) {
                Some(m) if e > 0 => {
                    let (lo, hi) = range(&rs);
                    format!("**{m:.3}** ({lo:.3}-{hi:.3})")
                }
                _ => String::new(),
            };
            t.row([
                p.outcome.name.to_string(),
                name.to_string(),
                format!("{} ({}-{})", thousands(ops), thousands(lo), thousands(hi)),
                format!("{p99:.1}"),
                ratio,
            ]);
        }
    }
    t.render().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_other_round_runs_the_engines_in_reverse() {
        let (a, b) = (Engine::Device, Engine::DeviceNvme);
        assert_eq!(
            order(&[a, b], 3),
            vec![(0, a), (0, b), (1, b), (1, a), (2, a), (2, b)]
        );
        assert_eq!(order(&[a], 2), vec![(0, a), (1, a)]);
    }
}
