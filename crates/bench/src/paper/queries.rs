//! The Cerberus paper's (TECS 2023) secondary-key query figures: response time of Q1-Q6
//! (Table 5) with the classic index (Cerberus), the VAS index (Cerberus-VAS) and without an
//! index (the KVSSD baseline: the host reads every record through the device's iterator and
//! filters), Fig. 11 and 12; and in `queries_fig13.rs` the put cost of keeping the index
//! (Fig. 13a) and the top-50 analytic query in the device against on the host (Fig. 13b).
//! Every run is a `cerberus-bench queries` child on the NAND model without cache (the
//! paper's device reads its index and filter blocks from flash), through a device on a
//! loopback port so that results cross a wire to the host as the paper's do.
//! `queries_model.rs` holds the additive model of a response time (the model column).

#[path = "queries_fig13.rs"]
mod fig13;
#[path = "queries_model.rs"]
mod model;
use model::{additive, per_byte_ms};

use super::ctx::{args, median_range, Ctx};
use super::Experiment;
use anyhow::{bail, Context, Result};
use cerberus_figures::docs::paper::{ExperimentDoc, FigureDoc, Headline};
use cerberus_figures::docs::queries::{EngineDoc, QueriesDoc};

pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "cerberus-fig11-12",
            reproduces: "Cerberus Fig. 11/12: Q1-Q6 response time, classic, VAS, host scan",
            run: fig11_12,
        },
        Experiment {
            name: "cerberus-fig13",
            reproduces: "Cerberus Fig. 13: put cost of the index, top-50 in the device or host",
            run: fig13::fig13,
        },
    ]
}

/// The compared systems: the `--index` kind and its legend.
pub(crate) const KINDS: [(&str, &str); 3] = [
    ("none", "KVSSD-baseline (no index: host scan)"),
    ("classic", "Cerberus (classic index)"),
    ("vas", "Cerberus-VAS"),
];
pub(crate) const NONE: usize = 0;
pub(crate) const CLASSIC: usize = 1;
pub(crate) const VAS: usize = 2;

/// One `queries` run's settings.
pub(crate) struct RunOpts {
    pub dataset: &'static str,
    pub records: u64,
    /// Through a local device (else the engine embedded in the process).
    pub device: bool,
    pub repeat: usize,
    /// Past `repeat`, the ms each kind spends on a query at least (`--min-query-ms`).
    pub min_query_ms: f64,
    pub load_repeat: usize,
}

impl RunOpts {
    /// The command line, the kinds in `order`.
    fn args(&self, order: &[usize]) -> Vec<String> {
        let index: Vec<&str> = order.iter().map(|&i| KINDS[i].0).collect();
        let mut a = args(&["queries", "--dataset", self.dataset, "--storage", "nand"]);
        a.extend(args(&["--cache-bytes", "0", "--interleave", "--index"]));
        a.push(index.join(","));
        a.extend(["--records".into(), self.records.to_string()]);
        a.extend(["--repeat".into(), self.repeat.to_string()]);
        if self.min_query_ms > 0.0 {
            a.extend(["--min-query-ms".into(), self.min_query_ms.to_string()]);
        }
        if self.load_repeat > 1 {
            a.extend(["--load-repeat".into(), self.load_repeat.to_string()]);
        }
        if self.device {
            a.extend(args(&["--device", "local"]));
        }
        a
    }

    /// The command as the report shows it (the kinds in the first round's order).
    pub fn shown(&self) -> String {
        self.args(&[NONE, CLASSIC, VAS]).join(" ")
    }
}

/// Runs `queries` once with every kind, the kinds' order (loads and interleaved queries)
/// rotated by `round` so that none of them always goes first; its engines in `KINDS` order.
pub(crate) fn run(ctx: &mut Ctx, o: &RunOpts, round: usize) -> Result<Vec<EngineDoc>> {
    let order: Vec<usize> = (0..KINDS.len())
        .map(|k| (k + round) % KINDS.len())
        .collect();
    // Fig. 13's runs through the device are Fig. 11/12's: one run measures both.
    let v = ctx.run_json_reusing(&o.args(&order))?;
    let doc: QueriesDoc = serde_json::from_value(v).context("not a queries document")?;
    if doc.runs.len() != KINDS.len() {
        bail!(
            "a queries run with {} engines, not {}",
            doc.runs.len(),
            KINDS.len()
        );
    }
    let mut out: Vec<Option<EngineDoc>> = KINDS.iter().map(|_| None).collect();
    for (e, &i) in doc.runs.into_iter().zip(&order) {
        let kind = if i == NONE { "no index" } else { KINDS[i].0 };
        if !e.engine.contains(kind) {
            bail!("engine `{}` where {kind} was expected", e.engine);
        }
        out[i] = Some(e);
    }
    out.into_iter()
        .map(|e| e.context("an engine missing"))
        .collect()
}

/// The mean over its secondary keys of a query's median response time, in ms (the
/// paper's bars are averages over the keys).
pub(crate) fn query_ms(e: &EngineDoc, query: &str) -> Option<f64> {
    let xs: Vec<f64> = e
        .queries
        .iter()
        .filter(|q| q.query == query)
        .map(|q| q.median_us / 1e3)
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// One secondary key's run of a query.
pub(crate) fn query_sk<'a>(
    e: &'a EngineDoc,
    query: &str,
    sk: &str,
) -> Option<&'a cerberus_figures::docs::queries::QueryDoc> {
    e.queries.iter().find(|q| q.query == query && q.sk == sk)
}

// The documents' parts, under the names this module and Fig. 13 use.
use super::parts::{ours as series, paper as paper_series};

/// A value at one category alone.
fn only(categories: &[&str], at: &str, v: f64) -> Vec<Option<f64>> {
    categories.iter().map(|c| (*c == at).then_some(v)).collect()
}

/// A headline from the rounds' values of ours (an error if no round gave one).
pub(crate) fn headline(
    claim: &str,
    paper: f64,
    ours: &[f64],
    command: &str,
    why: String,
) -> Result<Headline> {
    let (m, r) = median_range(ours);
    if !m.is_finite() {
        bail!("no run measured `{claim}`");
    }
    Ok(Headline {
        claim: claim.into(),
        paper,
        ours: m,
        ours_range: r,
        model: None,
        command: command.into(),
        why,
        floor: false,
    })
}

/// `h` with the cost model's value: the median of its rounds' predictions (none if no round
/// gave one).
pub(crate) fn with_model(mut h: Headline, rounds: &[f64]) -> Headline {
    let (m, _) = median_range(rounds);
    h.model = m.is_finite().then_some(m);
    h
}

/// Per round, `f` of that round's engines where it gives a value.
pub(crate) fn per_round(
    rounds: &[Vec<EngineDoc>],
    f: impl Fn(&[EngineDoc]) -> Option<f64>,
) -> Vec<f64> {
    rounds
        .iter()
        .filter_map(|r| f(r))
        .filter(|v| v.is_finite())
        .collect()
}

const GLACIER_SKS: [&str; 4] = ["FRAN", "BHUT", "AUST", "BOLI"];
const TWEET_SKS: [&str; 3] = ["2517", "3161", "1153"];
/// The queries on glacier (Fig. 11) and on tweets (Fig. 12).
const GLACIER_QUERIES: [&str; 3] = ["Q1", "Q2", "Q3"];
const TWEET_QUERIES: [&str; 3] = ["Q4", "Q5", "Q6"];
/// The response time figures' y axis.
const MS_DESC: &str = "response time, ms (mean over the secondary keys; median of the runs)";

/// The runs of glacier and tweets through the device, for Fig. 11/12 and Fig. 13 alike.
pub(crate) fn device_opts(ctx: &Ctx) -> [RunOpts; 2] {
    let glacier = RunOpts {
        dataset: "glacier",
        records: ctx.scale(1_500, 104_600),
        device: true,
        // One run a query at least: each run without an index scans every record, and the
        // rounds (fresh processes) give the medians. The indexes' sub-millisecond queries
        // (Q1, Q4) run until they have taken 50 ms: one run of them is mostly noise.
        repeat: 1,
        min_query_ms: DEVICE_MIN_QUERY_MS,
        load_repeat: 1,
    };
    let tweets = RunOpts {
        dataset: "tweets",
        // Half the paper's tweets (0.5 GB): a host scan per query a round bounds it.
        records: ctx.scale(1_200, 66_400),
        ..glacier
    };
    [glacier, tweets]
}

/// `--min-query-ms` of the runs through the device.
pub(crate) const DEVICE_MIN_QUERY_MS: f64 = 50.0;

/// Runs the rounds of Fig. 11/12 and writes its figures, headlines and notes.
fn fig11_12(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    let [glacier, tweets] = device_opts(ctx);
    let (mut g, mut t) = (Vec::new(), Vec::new());
    for round in 0..ctx.rounds {
        g.push(run(ctx, &glacier, round)?);
        t.push(run(ctx, &tweets, round)?);
    }
    let figures = fig11_12_figures(&g, &t);
    let headlines = fig11_12_headlines(&g, &t, &glacier, &tweets)?;
    super::parts::doc(
        ctx,
        "Cerberus (TECS 2023), Fig. 11 and 12, Table 5 (Q1-Q6)",
        "Response time of the paper's secondary-key queries Q1-Q6 on glacier and tweets, \
         with the classic index (Cerberus), the VAS index (Cerberus-VAS) and no index (the \
         KVSSD baseline: the host scans every record).",
        figures,
        headlines,
        fig11_12_notes(&glacier, &tweets),
    )
}

/// The rounds a query ran in: glacier's for Q1-Q3, tweets' for Q4-Q6.
fn rounds_of<'a>(
    g: &'a [Vec<EngineDoc>],
    t: &'a [Vec<EngineDoc>],
    q: &str,
) -> &'a [Vec<EngineDoc>] {
    if GLACIER_QUERIES.contains(&q) {
        g
    } else {
        t
    }
}

/// Classic over VAS per round: the same process ran both, interleaved.
fn vas_gain(rounds: &[Vec<EngineDoc>], q: &str) -> Vec<f64> {
    per_round(rounds, |r| {
        Some(query_ms(&r[CLASSIC], q)? / query_ms(&r[VAS], q)?)
    })
}

/// Per query, a kind's response times of the rounds.
fn per_query(rounds: &[Vec<EngineDoc>], queries: &[&str], kind: usize) -> Vec<Vec<f64>> {
    queries
        .iter()
        .map(|q| per_round(rounds, |r| query_ms(&r[kind], q)))
        .collect()
}

/// Fig. 11 or 12: the queries' response times with the two indexes.
fn time_figure(file: &str, title: &str, rounds: &[Vec<EngineDoc>], qs: &[&str]) -> FigureDoc {
    FigureDoc {
        file: file.into(),
        title: title.into(),
        x_desc: "query".into(),
        y_desc: MS_DESC.into(),
        categories: qs.iter().map(|q| q.to_string()).collect(),
        series: [CLASSIC, VAS]
            .iter()
            .map(|&k| series(KINDS[k].1, &per_query(rounds, qs, k)))
            .collect(),
        bars: true,
    }
}

/// Fig. 11 and 12, Q1-Q6 with the baseline's host scan, and the classic index over VAS.
fn fig11_12_figures(g: &[Vec<EngineDoc>], t: &[Vec<EngineDoc>]) -> Vec<FigureDoc> {
    let all_q: Vec<&str> = GLACIER_QUERIES
        .iter()
        .chain(&TWEET_QUERIES)
        .copied()
        .collect();
    vec![
        time_figure(
            "cerberus-fig11-glacier.png",
            "Cerberus Fig. 11: Q1-Q3 on glacier (NAND model, no cache, through a device)",
            g,
            &GLACIER_QUERIES,
        ),
        time_figure(
            "cerberus-fig12-tweets.png",
            "Cerberus Fig. 12: Q4-Q6 on tweets (NAND model, no cache, through a device)",
            t,
            &TWEET_QUERIES,
        ),
        FigureDoc {
            file: "cerberus-fig11-12-scan.png".into(),
            title: "Cerberus Q1-Q6 with the KVSSD-baseline's host scan beside the indexes".into(),
            x_desc: "query".into(),
            y_desc: MS_DESC.into(),
            categories: all_q.iter().map(|q| q.to_string()).collect(),
            series: KINDS
                .iter()
                .enumerate()
                .map(|(k, (_, name))| {
                    let xs: Vec<Vec<f64>> = all_q
                        .iter()
                        .map(|q| per_round(rounds_of(g, t, q), |r| query_ms(&r[k], q)))
                        .collect();
                    series(*name, &xs)
                })
                .collect(),
            bars: true,
        },
        FigureDoc {
            file: "cerberus-fig11-12-vas-gain.png".into(),
            title: "Cerberus Fig. 11/12: response time, Cerberus over Cerberus-VAS".into(),
            x_desc: "query".into(),
            y_desc: "response time ratio (mean over the keys)".into(),
            categories: all_q.iter().map(|q| q.to_string()).collect(),
            series: vec![
                series(
                    "ours",
                    &all_q
                        .iter()
                        .map(|q| vas_gain(rounds_of(g, t, q), q))
                        .collect::<Vec<_>>(),
                ),
                // The text: Q1 "almost the same"; Q5 "1.25x at most" (over its keys). One
                // series each, as the charts join a series' points across its gaps.
                paper_series("paper, Q1: about even", only(&all_q, "Q1", 1.0)),
                paper_series("paper, Q5: at most", only(&all_q, "Q5", 1.25)),
            ],
            bars: true,
        },
    ]
}

/// The notes on Fig. 11/12: records, rounds, device, the baseline.
fn fig11_12_notes(glacier: &RunOpts, tweets: &RunOpts) -> Vec<String> {
    vec![
        format!(
            "Records: glacier {}, tweets {} (the paper: 104.6K and 132.8K), generated by \
             cerberus-datasets with the paper's value sizes (about 1 KB and 8 KB), not the \
             public datasets; the secondary keys are the paper's.",
            glacier.records, tweets.records
        ),
        format!(
            "Each round one `queries` process per dataset with the three kinds, loaded in \
             turn and their queries interleaved run by run ({} run a query at least, more \
             until a kind has spent {} ms on it, at most 100; the median kept), the kinds' \
             order rotated from round to round.",
            glacier.repeat, glacier.min_query_ms
        ),
        "Device: the NAND timing model without block cache behind a device on a loopback \
         port (this VM's 2 cores), not the Cosmos+ OpenSSD's ARM cores over PCIe; results \
         cross the loopback wire as the paper's Step 3 crosses PCIe."
            .into(),
        "The paper's Fig. 11/12 show only Cerberus and Cerberus-VAS; the baseline's host \
         scan (every record through the device's iterator, filtered on the host, stopping \
         at a limit once met) is ours, for scale."
            .into(),
    ]
}

/// One secondary key's median response time of a query, in ms.
fn sk_ms(e: &EngineDoc, q: &str, sk: &str) -> Option<f64> {
    query_sk(e, q, sk).map(|d| d.median_us / 1e3)
}

/// The mean over its keys of a query's secondary search time from the engine's counters.
fn sk_search(e: &EngineDoc, q: &str) -> Option<f64> {
    let xs: Vec<f64> = e
        .queries
        .iter()
        .filter(|d| d.query == q)
        .filter_map(|d| d.stats.get("secondary_search_ns")?.as_f64())
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The bytes a query sent to the host, over its keys.
fn query_bytes(e: &EngineDoc, q: &str) -> f64 {
    let qs = e.queries.iter().filter(|d| d.query == q);
    qs.map(|d| d.bytes as f64).sum()
}

/// The rounds' values, two decimals each.
fn rounds_line(xs: &[f64]) -> String {
    let parts: Vec<String> = xs.iter().map(|x| format!("{x:.2}")).collect();
    parts.join(", ")
}

/// Fig. 11/12's headlines: glacier's (Q1, Q2), then tweets' (Q4, Q5, Q6).
fn fig11_12_headlines(
    g: &[Vec<EngineDoc>],
    t: &[Vec<EngineDoc>],
    glacier: &RunOpts,
    tweets: &RunOpts,
) -> Result<Vec<Headline>> {
    let (gc, tc) = (glacier.shown(), tweets.shown());
    let mut headlines = glacier_headlines(g, &gc)?;
    headlines.extend(tweet_headlines(g, t, &gc, &tc)?);
    Ok(headlines)
}

/// The headlines on glacier: Q1 and Q2, classic over VAS, Q2's pk search share and units.
fn glacier_headlines(g: &[Vec<EngineDoc>], gc: &str) -> Result<Vec<Headline>> {
    let q2_aust = per_round(g, |r| {
        Some(sk_ms(&r[CLASSIC], "Q2", "AUST")? / sk_ms(&r[VAS], "Q2", "AUST")?)
    });
    // The other units' mean over FRAN's, on Cerberus.
    let fran = per_round(g, |r| {
        let others: Vec<f64> = GLACIER_SKS[1..]
            .iter()
            .filter_map(|sk| sk_ms(&r[CLASSIC], "Q2", sk))
            .collect();
        let mean = others.iter().sum::<f64>() / others.len() as f64;
        Some(mean / sk_ms(&r[CLASSIC], "Q2", "FRAN")?)
    });
    // The share of the pk index search in Q2 (AUST) on Cerberus: of the engine's steps
    // (the transfer not counted), from that run's own counters.
    let pk_share = per_round(g, |r| {
        let s = &query_sk(&r[CLASSIC], "Q2", "AUST")?.stats;
        let ns = |k: &str| s.get(k).and_then(serde_json::Value::as_f64);
        let pk = ns("primary_search_ns")?;
        Some(pk / (pk + ns("secondary_search_ns")? + ns("value_read_ns")?))
    });
    // The engine's secondary search time alone (see Q1's headline).
    let q1_steps = per_round(g, |r| {
        Some(sk_search(&r[CLASSIC], "Q1")? / sk_search(&r[VAS], "Q1")?)
    });
    let q1_model = per_round(g, |r| additive((&r[CLASSIC], "Q1"), (&r[VAS], "Q1"), 0.0));
    Ok(vec![
        with_model(
            headline(
                "Q1 response time, Cerberus over Cerberus-VAS (mean of the 4 units)",
                1.0,
                &vas_gain(g, "Q1"),
                gc,
                format!(
                    "Q1 reads pks from the secondary index alone on both (Step 0 then Step 3); \
                     the paper calls them almost the same, and gives no figure. Ours is under \
                     a millisecond through the loopback device, where the wire and the \
                     scheduler weigh as much as the search: the engine's secondary search time \
                     alone, Cerberus over Cerberus-VAS, was {} (rounds). The model column: \
                     VAS's response with Cerberus' engine time in place of its own.",
                    rounds_line(&q1_steps)
                ),
            )?,
            &q1_model,
        ),
        headline(
            "Q2 (AUST) response time, Cerberus over Cerberus-VAS",
            9.31,
            &q2_aust,
            gc,
            "The classic index finds each of the 50 records through the primary index (Step \
             1: a filter and index block read from flash per level consulted, no cache), the \
             VAS index reads them at the value-log address its entry holds. How far apart \
             they are depends on how many primary levels a lookup consults (the paper's tree \
             at 104.6K records; ours at the run's records) and on the per-page cost of our \
             NAND model against the OpenSSD's."
                .into(),
        )?,
        headline(
            "Q2 on Cerberus, pk index search share of the query's engine time (AUST)",
            0.84,
            &pk_share,
            gc,
            "Ours: primary_search_ns over the engine's three steps (secondary search, primary \
             search, value reads) of the same run, the wire not counted; the paper's 84 % is \
             of its whole response time."
                .into(),
        )?,
        headline(
            "Q2 on Cerberus, the other units' time over FRAN's",
            1.4,
            &fran,
            gc,
            "In the paper FRAN's records sit in L1 of the primary tree and the other units' in \
             L2 (the order the public dataset was loaded in); our generated records spread \
             the units over the key range alike, so no unit is favoured by its level."
                .into(),
        )?,
    ])
}

/// The headlines on tweets: Q4 over Q1 (both datasets), Q5 classic over VAS, Q5's bytes.
fn tweet_headlines(
    g: &[Vec<EngineDoc>],
    t: &[Vec<EngineDoc>],
    gc: &str,
    tc: &str,
) -> Result<Vec<Headline>> {
    // Q4 over Q1 needs both datasets of the same round.
    let q4_q1: Vec<f64> = g
        .iter()
        .zip(t)
        .filter_map(|(g, t)| Some(query_ms(&t[CLASSIC], "Q4")? / query_ms(&g[CLASSIC], "Q1")?))
        .collect();
    // The same from the engine's secondary-search counters alone: sub-millisecond
    // queries through a loopback device are at the mercy of the wire and the scheduler.
    let q4_q1_steps: Vec<f64> = g
        .iter()
        .zip(t)
        .filter_map(|(g, t)| Some(sk_search(&t[CLASSIC], "Q4")? / sk_search(&g[CLASSIC], "Q1")?))
        .filter(|v| v.is_finite())
        .collect();
    let q4_q1_model: Vec<f64> = g
        .iter()
        .zip(t)
        .filter_map(|(g, t)| {
            let per_byte = per_byte_ms(&t[CLASSIC])?;
            additive((&t[CLASSIC], "Q4"), (&g[CLASSIC], "Q1"), per_byte)
        })
        .filter(|v| v.is_finite())
        .collect();
    let q5_max = per_round(t, |r| {
        TWEET_SKS
            .iter()
            .filter_map(|sk| Some(sk_ms(&r[CLASSIC], "Q5", sk)? / sk_ms(&r[VAS], "Q5", sk)?))
            .reduce(f64::max)
    });
    let q5_q6 = per_round(t, |r| {
        Some(query_bytes(&r[VAS], "Q5") / query_bytes(&r[VAS], "Q6"))
    });
    Ok(vec![
        with_model(
            headline(
                "Q4 response time over Q1's, on Cerberus",
                5.89,
                &q4_q1,
                &format!("{tc}; {gc}"),
                format!(
                    "Q4 returns every tweet of a user (no limit) and Q1 the first 50 pks of a \
                     unit; the paper attributes the gap to Q4's secondary search reaching L1 \
                     (88 %). Ours is under a millisecond each through the loopback device, \
                     where the wire and the scheduler weigh as much as the search: the \
                     engine's secondary search time alone, Q4 over Q1, was {} (rounds). The \
                     model column: Q1's response with Q4's engine time in place of its own and \
                     the wire's cost of the bytes Q4 sends beyond Q1's (a byte's cost from the \
                     round's Q5 and Q6: the same records, whole or their text alone).",
                    rounds_line(&q4_q1_steps)
                ),
            )?,
            &q4_q1_model,
        ),
        headline(
            "Q5 response time, Cerberus over Cerberus-VAS, the largest of the 3 users",
            1.25,
            &q5_max,
            tc,
            "The paper's Q5 primary lookups end in the MemTable (87 %), which leaves VAS little \
             to save; ours run after a flush and the compactions settle, so every primary \
             lookup goes to flash and VAS saves all of Step 1."
                .into(),
        )?,
        headline(
            "Q5 bytes to the host over Q6's (Cerberus-VAS)",
            29.9,
            &q5_q6,
            tc,
            format!(
                "Q6 returns the text alone: the paper's texts average 0.5 KB in 8 KB records, \
                 our generator's are shorter (rounds: {}).",
                rounds_line(&q5_q6)
            ),
        )?,
    ])
}
