//! BTS's Figure 7 (Park et al., "BTS: Exploring Effects of Background Task-Aware Scheduling
//! for Key-Value CSDs"): put-only fill sequential of 16 KiB values from 1 to many client
//! threads, with offline dedup (128 B chunks, SHA-1) as the background task, in the paper's
//! three cases: no background service (`off`), the task on the put's core (`inline`, SPDK)
//! and BTS (`bts`); once with the device's cores pinned to CPUs and once not. Each round
//! runs `cerberus-paper bts` once per pinning (alternated), its policies in turn within each
//! thread count (the round's first policy rotating).

use super::ctx::{median_range, Ctx};
use super::experiment::Experiment;
use super::parts::{doc, fig, headline, join, ours, paper, ratios, words};
use anyhow::{Context, Result};
use cerberus_device::Policy;
use cerberus_figures::docs::bts::{Point, RunDoc};
use cerberus_figures::docs::paper::{ExperimentDoc, FigureDoc, Headline};

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        name: "bts-fig7",
        reproduces: "BTS Fig. 7: fillseq put latency over client threads, off/inline/BTS, \
                     cores pinned and not",
        run: fig7,
    }]
}

const POLICIES: [(Policy, &str, &str); 3] = [
    (Policy::Off, "off", "Case 1: no background service"),
    (Policy::Inline, "inline", "Case 2: inline (SPDK)"),
    (Policy::Bts, "bts", "Case 3: BTS"),
];
const PINS: [(bool, &str); 2] = [(false, "not pinned"), (true, "pinned")];
/// The device's cores (network threads), as in docs/bts.md.
const CORES: usize = 4;
/// Section V-C: with three host threads or fewer BTS "shows a similar delay time to Case
/// 1" (idle cores take the tasks).
const PAPER_BELOW: f64 = 1.0;
/// Section V-C: above its threshold (21 threads) BTS "shows no performance gain" over
/// Case 2.
const PAPER_ABOVE: f64 = 1.0;
/// The most threads at which the paper has BTS on par with Case 1.
const PAPER_IDLE_THREADS: usize = 3;

/// pts[pin][policy][thread]: that point of each round, in round order.
type Points = Vec<Vec<Vec<Vec<Point>>>>;

fn fig7(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    let threads: Vec<usize> = ctx.scale(vec![1, 4], vec![1, 2, 3, 4, 8, 16, 32]);
    let num: usize = ctx.scale(300, 12_000);
    let list = join(&threads, usize::to_string).replace(' ', "");
    let (pts, cpus) = run_rounds(ctx, &threads, num, &list)?;
    let figures = figures(&pts, &threads);
    let headlines = headlines(&pts, &threads, num, cpus);
    doc(
        ctx,
        "BTS (KV-CSD, Park et al.), Fig. 7 and Section V-C",
        "Foreground put latency and throughput over client threads with offline dedup as the \
         background task: no service, inline, BTS; device cores pinned and not.",
        figures,
        headlines,
        differences(num, cpus, &list),
    )
}

/// Runs the rounds (each pinning once per round, alternated) and returns their points and
/// the machine's CPU count.
fn run_rounds(ctx: &mut Ctx, threads: &[usize], num: usize, list: &str) -> Result<(Points, usize)> {
    let mut pts: Points = vec![vec![vec![Vec::new(); threads.len()]; POLICIES.len()]; 2];
    let mut cpus = 0;
    for round in 0..ctx.rounds {
        for k in 0..PINS.len() {
            let pi = (k + round) % PINS.len();
            // The bts command runs its policies in the order given within each thread
            // count: the round's first one rotates.
            let mut order: Vec<&str> = POLICIES.iter().map(|p| p.1).collect();
            order.rotate_left(round % POLICIES.len());
            let mut a = words(&format!(
                "bts --policy {} --client-threads {list} --num {num} --cores {CORES} \
                 --value-size 16384 --rounds 1",
                order.join(",")
            ));
            if PINS[pi].0 {
                a.push("--pin".into());
            }
            let doc: RunDoc = serde_json::from_value(ctx.run_json(&a)?)
                .context("reading the bts command's document")?;
            cpus = doc.cpus;
            for (oi, &(policy, name, _)) in POLICIES.iter().enumerate() {
                for (ti, &t) in threads.iter().enumerate() {
                    let p = doc
                        .points
                        .iter()
                        .find(|p| p.policy == policy && p.threads == t)
                        .with_context(|| format!("the bts run has no point {name} x {t}"))?;
                    pts[pi][oi][ti].push(p.clone());
                }
            }
        }
    }
    Ok((pts, cpus))
}

/// A point's mean put latency, us.
fn mean(p: &Point) -> f64 {
    p.mean_us
}

/// A point's puts/s.
fn puts(p: &Point) -> f64 {
    p.puts_per_sec
}

/// Per thread count, the rounds' figure of one pinning and policy.
fn per(pts: &Points, pi: usize, oi: usize, f: fn(&Point) -> f64) -> Vec<Vec<f64>> {
    pts[pi][oi]
        .iter()
        .map(|ps| ps.iter().map(f).collect())
        .collect()
}

/// Per thread count, policy a's figure over policy b's in each round (same bts run).
fn over(pts: &Points, pi: usize, a: usize, b: usize, f: fn(&Point) -> f64) -> Vec<Vec<f64>> {
    per(pts, pi, a, f)
        .iter()
        .zip(&per(pts, pi, b, f))
        .map(|(x, y)| ratios(x, y))
        .collect()
}

/// The latency figure of each pinning, the throughput figure and the ratios' figure.
fn figures(pts: &Points, threads: &[usize]) -> Vec<FigureDoc> {
    let categories: Vec<String> = threads.iter().map(usize::to_string).collect();
    let mut figures = Vec::new();
    for (pi, (_, pin)) in PINS.iter().enumerate() {
        figures.push(fig(
            &format!("bts-fig7-latency-{}.png", pin.replace(' ', "-")),
            format!("BTS Fig. 7: mean put latency, 16 KiB fillseq, cores {pin}"),
            "client threads",
            "mean put latency, us (median of the runs)",
            &categories,
            (0..POLICIES.len())
                .map(|oi| ours(POLICIES[oi].2, &per(pts, pi, oi, mean)))
                .collect(),
        ));
    }
    let mut throughput = Vec::new();
    let mut ratio_lines = Vec::new();
    for (pi, (_, pin)) in PINS.iter().enumerate() {
        for (oi, p) in POLICIES.iter().enumerate() {
            throughput.push(ours(format!("{}, {pin}", p.1), &per(pts, pi, oi, puts)));
        }
        ratio_lines.push(ours(
            format!("BTS over Case 1, {pin}"),
            &over(pts, pi, 2, 0, mean),
        ));
        if pi == 0 {
            let similar = threads.iter().map(|&t| t <= PAPER_IDLE_THREADS);
            ratio_lines.push(paper(
                "paper: BTS similar to Case 1 up to 3 threads",
                similar.map(|s| s.then_some(PAPER_BELOW)).collect(),
            ));
        }
        ratio_lines.push(ours(
            format!("BTS over Case 2, {pin}"),
            &over(pts, pi, 2, 1, mean),
        ));
    }
    figures.push(fig(
        "bts-fig7-throughput.png",
        "BTS Fig. 7: puts/s, cores pinned and not".into(),
        "client threads",
        "puts/s, all threads (median of the runs)",
        &categories,
        throughput,
    ));
    figures.push(fig(
        "bts-fig7-ratios.png",
        "BTS Fig. 7: BTS's mean put latency over Cases 1 and 2".into(),
        "client threads",
        "mean latency ratio (median of the rounds' ratios)",
        &categories,
        ratio_lines,
    ));
    figures
}

/// Per pinning: BTS over Case 1 at few threads and over Case 2 at the most.
fn headlines(pts: &Points, threads: &[usize], num: usize, cpus: usize) -> Vec<Headline> {
    // Below: the most threads up to the paper's 3 (cores left idle); above: the most.
    let below = threads
        .iter()
        .rposition(|&t| t <= PAPER_IDLE_THREADS)
        .unwrap_or(0);
    let above = threads.len() - 1;
    let (tb, ta) = (threads[below], threads[above]);
    let cmd = |t: usize, pin: bool| {
        format!(
            "bts --policy off,inline,bts --client-threads {t} --num {num} --cores {CORES} \
             --value-size 16384{}",
            if pin { " --pin" } else { "" }
        )
    };
    let mut headlines = Vec::new();
    for (pi, &(pin, pin_name)) in PINS.iter().enumerate() {
        headlines.push(headline(
            format!(
                "mean put latency, BTS over no background service (Case 3 / Case 1), {tb} \
                 client thread(s), cores {pin_name}"
            ),
            PAPER_BELOW,
            median_range(&over(pts, pi, 2, 0, mean)[below]),
            cmd(tb, pin),
            &format!(
                "The paper's text gives the shape, not the figure's numbers: with three host \
                 threads or fewer the background tasks go to idle cores and BTS's latency is \
                 similar to Case 1's (1.0 here). With {tb} thread(s), {} of the device's \
                 {CORES} cores serve no connection and take the moved dedup tasks at \
                 SCHED_IDLE, but they share this machine's {cpus} CPUs with the busy cores \
                 and the clients: a task moved off a busy core still takes CPU time the \
                 foreground would use, unless a CPU is really idle. At one thread BTS can even \
                 beat Case 1: a core busy with background work keeps a vCPU from halting, and \
                 waking a halted vCPU costs ~100 us per put (docs/bts.md).",
                CORES.saturating_sub(tb)
            ),
        ));
        headlines.push(headline(
            format!(
                "puts/s, BTS over inline (Case 3 / Case 2), {ta} client threads, cores \
                 {pin_name}"
            ),
            PAPER_ABOVE,
            median_range(&over(pts, pi, 2, 1, puts)[above]),
            cmd(ta, pin),
            &format!(
                "Past the threshold the paper's BTS 'shows no performance gain' (its latency \
                 rises above Case 2's from 21 threads, the cost of migrating). Ours stops \
                 migrating once no core is idle ({CORES} cores: from {CORES} client threads \
                 on) or the active cores' mean load reaches 0.8, so both place every task \
                 alike and the ratio is the spread of this VM's runs."
            ),
        ));
    }
    headlines
}

/// How this setup differs from the paper's.
fn differences(num: usize, cpus: usize, list: &str) -> Vec<String> {
    vec![
        format!(
            "Machine: the paper's CSD had 6 cores of its own (Xeon E5-2640 v4) and the \
             host 10 cores on another machine over 10 GbE NVMe-oF. Here the device runs \
             in the bench's process with {CORES} cores (network threads) and their \
             lanes, and the client threads and the loopback TCP share the same {cpus} \
             CPUs."
        ),
        format!(
            "{cpus} CPUs for a scheduler whose claim is about idle cores: an idle core \
             here is an idle thread, not an idle CPU. Moving a dedup task to it helps only \
             as far as a CPU has time the foreground leaves, which is why an idle core runs \
             its tasks at SCHED_IDLE. Pinned, core i runs on CPU i mod {cpus}, so cores \
             0 and 2 share a CPU: a task moved between cores on one CPU is not moved off \
             it at all; unpinned, the kernel can put it wherever a CPU is free. With more \
             client threads than CPUs no CPU is idle and BTS has nothing to use."
        ),
        format!(
            "Threshold: the paper's is 21 host threads, measured; ours ends migration \
             when no core is idle ({CORES} threads on) or at a mean load of 0.8."
        ),
        format!(
            "Puts: {num} per point of 16 KiB values (the paper's size) split among the \
             client threads, 16 B keys (the paper: 4 B), one put in flight per thread; \
             thread counts {list} (the paper's run past 21)."
        ),
        "Engine: an LSM tree with a value log behind the device (the paper: a hash-indexed \
         KV VBDEV on SPDK); dedup of 128 B chunks with SHA-1 as the paper's, reading the \
         value back by key."
            .into(),
        "The paper's text gives Fig. 7's shape, not its numbers: the headlines' paper \
         values are its 'similar to Case 1' and 'no performance gain' as 1.0."
            .into(),
    ]
}
