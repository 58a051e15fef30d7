//! Cerberus Fig. 13: (a) the put cost of keeping a secondary index, from the loads' times of
//! the `queries` runs (through a device, as the paper's Put() goes to its device, and the
//! engine alone); (b) the top-50 analytic query (Q7, FRAN): sorted in the device (`top`)
//! against every FRAN record sent to the host (Q7-host), and the baseline's host scan.

use super::ctx::Ctx;
use super::parts::{ours as series, paper as paper_series};
use super::queries_runs::{
    device_opts, headline, per_round, query_ms, query_sk, run, with_model, RunOpts, CLASSIC,
    DEVICE_MIN_QUERY_MS, KINDS, NONE, VAS,
};
use anyhow::Result;
use cerberus_figures::docs::paper::{ExperimentDoc, FigureDoc, Headline};
use cerberus_figures::docs::queries::EngineDoc;

/// The paper's Fig. 13a: put response time over the baseline's, glacier and tweets.
const PAPER_PUT: [f64; 2] = [1.11, 1.32];
/// "only a 1.4% difference at most between Cerberus and Cerberus-VAS".
const PAPER_VAS_PUT: f64 = 1.014;
/// Fig. 13b, ms: host analysis and in-storage analysis on Cerberus; about 40 minutes for
/// the baseline's host analysis.
const PAPER_HOST_MS: f64 = 577.3;
const PAPER_DEVICE_MS: f64 = 727.24;
const PAPER_BASELINE_MS: f64 = 40.0 * 60e3;

/// One dataset's runs: through the device and the engine alone, per round.
struct Loads {
    device: Vec<Vec<EngineDoc>>,
    engine: Vec<Vec<EngineDoc>>,
}

/// Mean microseconds per put of a kind's load (its loads' median).
fn put_us(e: &EngineDoc, records: u64) -> Option<f64> {
    (e.load_secs > 0.0 && records > 0).then(|| e.load_secs / records as f64 * 1e6)
}

/// A dataset's runs: its name, records through the device, records for the engine alone.
type Set = (&'static str, u64, u64);

/// A `queries` run's settings: one run a query and one load a kind per process, as the
/// no-index scans bound the time and the rounds (fresh processes) give the medians.
fn opts(dataset: &'static str, records: u64, device: bool) -> RunOpts {
    RunOpts {
        dataset,
        records,
        device,
        repeat: 1,
        min_query_ms: if device { DEVICE_MIN_QUERY_MS } else { 0.0 },
        load_repeat: 1,
    }
}

/// The rounds' runs of Fig. 13, per dataset.
struct Runs {
    sets: [Set; 2],
    loads: Vec<Loads>,
}

impl Runs {
    /// Runs every round: per dataset, through the device and the engine alone.
    fn measure(ctx: &mut Ctx, sets: [Set; 2]) -> Result<Runs> {
        let mut loads: Vec<Loads> = sets
            .iter()
            .map(|_| Loads {
                device: Vec::new(),
                engine: Vec::new(),
            })
            .collect();
        for round in 0..ctx.rounds {
            for (i, (d, dn, en)) in sets.iter().enumerate() {
                let r = run(ctx, &opts(d, *dn, true), round)?;
                loads[i].device.push(r);
                let r = run(ctx, &opts(d, *en, false), round)?;
                loads[i].engine.push(r);
            }
        }
        Ok(Runs { sets, loads })
    }

    /// A dataset's records through the device or for the engine alone.
    fn records(&self, i: usize, device: bool) -> u64 {
        if device {
            self.sets[i].1
        } else {
            self.sets[i].2
        }
    }

    /// A dataset's command as the report shows it.
    fn shown(&self, i: usize, device: bool) -> String {
        opts(self.sets[i].0, self.records(i, device), device).shown()
    }

    /// A dataset's rounds through the device or for the engine alone.
    fn rounds(&self, i: usize, device: bool) -> &[Vec<EngineDoc>] {
        let l = &self.loads[i];
        if device {
            &l.device
        } else {
            &l.engine
        }
    }

    /// Per dataset and round, a kind's put time over another's (loaded in turn in the
    /// same process).
    fn ratios(&self, device: bool, a: usize, b: usize) -> Vec<Vec<f64>> {
        (0..self.sets.len())
            .map(|i| {
                let n = self.records(i, device);
                per_round(self.rounds(i, device), |r| {
                    Some(put_us(&r[a], n)? / put_us(&r[b], n)?)
                })
            })
            .collect()
    }

    /// Per dataset and round, the put time through the device of kind `a` over `b` that
    /// the engine alone predicts: the device adds the same round trip and command handling
    /// to every put, so `(D_b + E_a - E_b) / D_b`, with D the device's and E the engine's
    /// microseconds per put (the engine alone loads fewer records: per put, not in all).
    fn device_model(&self, a: usize, b: usize) -> Vec<Vec<f64>> {
        (0..self.sets.len())
            .map(|i| {
                let (dn, en) = (self.records(i, true), self.records(i, false));
                let (dev, eng) = (self.rounds(i, true), self.rounds(i, false));
                (dev.iter().zip(eng))
                    .filter_map(|(d, e)| {
                        let db = put_us(&d[b], dn)?;
                        Some((db + put_us(&e[a], en)? - put_us(&e[b], en)?) / db)
                    })
                    .filter(|v| v.is_finite())
                    .collect()
            })
            .collect()
    }

    /// The glacier rounds through the device: the top-50 query's.
    fn glacier(&self) -> &[Vec<EngineDoc>] {
        &self.loads[0].device
    }

    /// A kind's response time of a query, per glacier round.
    fn q7(&self, k: usize, q: &str) -> Vec<f64> {
        per_round(self.glacier(), |r| query_ms(&r[k], q))
    }
}

/// Runs the rounds of Fig. 13 and writes its figures, headlines and notes.
pub fn fig13(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    // (dataset, records through the device, records for the engine alone): through the
    // device Fig. 11/12's runs (reused when that experiment ran first), glacier at the
    // paper's count for the top-50 query; the engine alone smaller, as each run also scans
    // every record for each query without an index.
    let [glacier, tweets] = device_opts(ctx);
    let sets = [
        ("glacier", glacier.records, ctx.scale(1_000, 26_150)),
        ("tweets", tweets.records, ctx.scale(600, 33_200)),
    ];
    let runs = Runs::measure(ctx, sets)?;
    let mut figures = put_figures(&runs);
    figures.extend(analytic_figures(&runs));
    let mut headlines = put_headlines(&runs)?;
    headlines.extend(analytic_headlines(&runs)?);
    super::parts::doc(
        ctx,
        "Cerberus (TECS 2023), Fig. 13a and 13b",
        "The put cost of keeping a secondary index, and the top-50 analytic query in the \
         device against on the host.",
        figures,
        headlines,
        fig13_notes(&runs.sets),
    )
}

/// Fig. 13a: the put times, and with an index over without.
fn put_figures(runs: &Runs) -> Vec<FigureDoc> {
    let sets = &runs.sets;
    let set_names: Vec<String> = sets.iter().map(|s| s.0.to_string()).collect();
    let put_categories: Vec<String> = ["through the device", "engine alone"]
        .iter()
        .flat_map(|how| sets.iter().map(move |s| format!("{}, {how}", s.0)))
        .collect();
    let put_series = KINDS
        .iter()
        .enumerate()
        .map(|(k, (_, name))| {
            let mut per: Vec<Vec<f64>> = Vec::new();
            for device in [true, false] {
                for i in 0..runs.loads.len() {
                    let n = runs.records(i, device);
                    per.push(per_round(runs.rounds(i, device), |r| put_us(&r[k], n)));
                }
            }
            series(*name, &per)
        })
        .collect();
    vec![
        FigureDoc {
            file: "cerberus-fig13a-puts.png".into(),
            title: "Cerberus Fig. 13a: put response time while loading (NAND model, no cache)"
                .into(),
            x_desc: "dataset, how the puts arrive".into(),
            y_desc: "µs per put (mean of the load; median of the runs)".into(),
            categories: put_categories,
            series: put_series,
            bars: true,
        },
        FigureDoc {
            file: "cerberus-fig13a-overhead.png".into(),
            title: "Cerberus Fig. 13a: put time with a secondary index over without".into(),
            x_desc: "dataset".into(),
            y_desc: "put time ratio".into(),
            categories: set_names,
            series: vec![
                series(
                    "Cerberus over baseline, through the device",
                    &runs.ratios(true, CLASSIC, NONE),
                ),
                paper_series("paper", PAPER_PUT.iter().map(|v| Some(*v)).collect()),
                series(
                    "Cerberus over baseline, engine alone",
                    &runs.ratios(false, CLASSIC, NONE),
                ),
                series(
                    "Cerberus-VAS over Cerberus, through the device",
                    &runs.ratios(true, VAS, CLASSIC),
                ),
                paper_series("paper (at most)", vec![Some(PAPER_VAS_PUT); 2]),
            ],
            bars: true,
        },
    ]
}

/// Fig. 13b's systems: the kind, the query and the legend.
const APPROACHES: [(usize, &str, &str); 4] = [
    (CLASSIC, "Q7-host", "Cerberus, host analysis"),
    (CLASSIC, "Q7", "Cerberus, in-storage"),
    (VAS, "Q7-host", "Cerberus-VAS, host analysis"),
    (VAS, "Q7", "Cerberus-VAS, in-storage"),
];

/// Fig. 13b: the top-50 query's times and steps, and over Cerberus' host analysis.
fn analytic_figures(runs: &Runs) -> Vec<FigureDoc> {
    let g = runs.glacier();
    // The engine's own step times of the same run (the last of its repetitions), in ms.
    let step_ms = |k: usize, q: &str, keys: &[&str]| -> Vec<f64> {
        per_round(g, |r| {
            let s = &query_sk(&r[k], q, "FRAN")?.stats;
            let ns: Option<Vec<f64>> = keys
                .iter()
                .map(|key| s.get(*key).and_then(serde_json::Value::as_f64))
                .collect();
            Some(ns?.iter().sum::<f64>() / 1e6)
        })
    };
    let filtering = ["secondary_search_ns", "primary_search_ns"];
    let over_host = |k: usize, q: &str| -> Vec<f64> {
        per_round(g, |r| {
            Some(query_ms(&r[k], q)? / query_ms(&r[CLASSIC], "Q7-host")?)
        })
    };
    let per_approach = |f: &dyn Fn(usize, &str) -> Vec<f64>| -> Vec<Vec<f64>> {
        APPROACHES.iter().map(|(k, q, _)| f(*k, q)).collect()
    };
    let categories: Vec<String> = APPROACHES.iter().map(|a| a.2.to_string()).collect();
    vec![
        FigureDoc {
            file: "cerberus-fig13b-analytic.png".into(),
            title: "Cerberus Fig. 13b: top-50 of FRAN by height, in the device or on the host"
                .into(),
            x_desc: "system, where the analysis runs".into(),
            y_desc: "ms (median of the runs; steps from the engine's counters)".into(),
            categories: categories.clone(),
            series: vec![
                series("response time", &per_approach(&|k, q| runs.q7(k, q))),
                series(
                    "filtering (sk and pk index search)",
                    &per_approach(&|k, q| step_ms(k, q, &filtering)),
                ),
                series(
                    "value reads",
                    &per_approach(&|k, q| step_ms(k, q, &["value_read_ns"])),
                ),
            ],
            bars: true,
        },
        FigureDoc {
            file: "cerberus-fig13b-ratio.png".into(),
            title: "Cerberus Fig. 13b: top-50 response time over Cerberus' host analysis".into(),
            x_desc: "system, where the analysis runs".into(),
            y_desc: "response time ratio".into(),
            categories,
            series: vec![
                series("ours", &per_approach(&over_host)),
                paper_series(
                    "paper",
                    vec![Some(1.0), Some(PAPER_DEVICE_MS / PAPER_HOST_MS), None, None],
                ),
            ],
            bars: true,
        },
    ]
}

/// Fig. 13a's headlines: the index's put cost through the device and in the engine, and
/// VAS over the classic index.
fn put_headlines(runs: &Runs) -> Result<Vec<Headline>> {
    let mut headlines: Vec<Headline> = Vec::new();
    let model = runs.device_model(CLASSIC, NONE);
    for (i, (d, _, _)) in runs.sets.iter().enumerate() {
        let h = headline(
            &format!("put time, Cerberus over KVSSD-baseline, {d}, through the device"),
            PAPER_PUT[i],
            &runs.ratios(true, CLASSIC, NONE)[i],
            &runs.shown(i, true),
            "Each put is one round trip to the device on a loopback port, as the paper's \
             Put() is one NVMe command; the index adds its entry to the secondary tree's \
             MemTable and its compactions. Ours on this VM's 2 cores, where the loopback \
             round trip weighs more than the paper's PCIe command, so the index's share is \
             smaller. The model column: the device's put without an index plus what the \
             index adds to the engine's put (the engine-alone runs), over the former."
                .into(),
        )?;
        headlines.push(with_model(h, &model[i]));
    }
    for (i, (d, _, _)) in runs.sets.iter().enumerate() {
        headlines.push(headline(
            &format!("put time, Cerberus over KVSSD-baseline, {d}, engine alone"),
            PAPER_PUT[i],
            &runs.ratios(false, CLASSIC, NONE)[i],
            &runs.shown(i, false),
            "Without the round trip the engine's put is a MemTable insert and a value-log \
             append, and the index's extra insert, record parse and compactions are a large \
             part of it; the paper's figure includes its device's command handling."
                .into(),
        )?);
    }
    // The larger of the two datasets' gaps, as the paper's "at most"; the model the same way.
    let vas_put = larger_gap(&runs.ratios(true, VAS, CLASSIC));
    let h = headline(
        "put time, Cerberus-VAS over Cerberus, the larger gap of glacier and tweets, through \
         the device",
        PAPER_VAS_PUT,
        &vas_put,
        &format!("{}; {}", runs.shown(0, true), runs.shown(1, true)),
        "A VAS entry also holds the record's value-log address, a few bytes more per index \
         entry. The model column: the device's put with the classic index plus what VAS \
         adds to the engine's put (the engine-alone runs), over the former, the larger gap \
         of the two datasets as for ours. One load's put time through the loopback device \
         varies by about 10 % from load to load on this VM (glacier, 104,600 records, three \
         loads of each kind in one process: classic 92-107 us a put, VAS 92-100 us), which \
         the largest of two datasets' gaps takes in whole; the paper's bound is 1.4 %."
            .into(),
    )?;
    headlines.push(with_model(h, &larger_gap(&runs.device_model(VAS, CLASSIC))));
    Ok(headlines)
}

/// Per round, the ratio farther from even of the datasets' (`per`: per dataset, per round).
fn larger_gap(per: &[Vec<f64>]) -> Vec<f64> {
    let rounds = per.iter().map(Vec::len).min().unwrap_or(0);
    (0..rounds)
        .map(|r| {
            per.iter()
                .map(|xs| xs[r])
                .max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()))
                .unwrap_or(f64::NAN)
        })
        .collect()
}

/// Fig. 13b's headlines: the top-50 query in the device over on the host, the paper's
/// times, the filtering and the baseline.
fn analytic_headlines(runs: &Runs) -> Result<Vec<Headline>> {
    let g = runs.glacier();
    let gd = runs.shown(0, true);
    let bytes = |k: usize, q: &str| -> Vec<f64> {
        per_round(g, |r| query_sk(&r[k], q, "FRAN").map(|d| d.bytes as f64))
    };
    let (host_b, dev_b) = (bytes(CLASSIC, "Q7-host"), bytes(CLASSIC, "Q7"));
    let mut headlines: Vec<Headline> = Vec::new();
    let in_dev = per_round(g, |r| {
        Some(query_ms(&r[CLASSIC], "Q7")? / query_ms(&r[CLASSIC], "Q7-host")?)
    });
    headlines.push(headline(
        "top-50 (Q7, FRAN) on Cerberus, in-storage over host analysis",
        1.25,
        &in_dev,
        &gd,
        format!(
            "The paper's device sorts on a 1 GHz ARM core (its sort up to 29x slower than the \
             host's) and saves transfer time (3.9x less); our device shares this VM's cores \
             with the host, so the sort costs the same on both sides and only the transfer \
             differs: host analysis received {} B, in-storage {} B (median of the runs). The \
             host analysis is every FRAN record sent to the host (Q7-host, a find); the \
             host's sort of them is not timed.",
            median_or_zero(&host_b),
            median_or_zero(&dev_b)
        ),
    )?);
    // The paper's own times, in ms, beside ours at the run's glacier records (the
    // paper's count at the full scale).
    for (q, paper, what) in [
        ("Q7-host", PAPER_HOST_MS, "host analysis"),
        ("Q7", PAPER_DEVICE_MS, "in-storage analysis"),
    ] {
        headlines.push(headline(
            &format!("top-50 (Q7, FRAN) on Cerberus, {what}, ms"),
            paper,
            &runs.q7(CLASSIC, q),
            &gd,
            format!(
                "Ours at {} glacier records on the NAND model without cache, a page read \
                 (60 µs) per block the filtering and value reads consult, through a loopback \
                 device; the paper's at 104.6K records on the OpenSSD.",
                runs.sets[0].1
            ),
        )?);
    }
    let filter = per_round(g, |r| {
        let f = |k: usize| -> Option<f64> {
            let s = &query_sk(&r[k], "Q7", "FRAN")?.stats;
            let get = |key: &str| s.get(key).and_then(serde_json::Value::as_f64);
            Some(get("secondary_search_ns")? + get("primary_search_ns")?)
        };
        Some(f(CLASSIC)? / f(VAS)?)
    });
    headlines.push(headline(
        "top-50 filtering time (sk and pk index search), Cerberus over Cerberus-VAS",
        53.3,
        &filter,
        &gd,
        "VAS skips the primary index for each of FRAN's records; ours counts the engine's \
         secondary and primary search time of the in-device run. How many primary levels a \
         lookup consults, at the run's records, sets the gap."
            .into(),
    )?);
    let baseline = per_round(g, |r| {
        Some(query_ms(&r[NONE], "Q7")? / query_ms(&r[CLASSIC], "Q7-host")?)
    });
    headlines.push(headline(
        "top-50: KVSSD-baseline host analysis over Cerberus host analysis",
        PAPER_BASELINE_MS / PAPER_HOST_MS,
        &baseline,
        &gd,
        "The paper's baseline reads every record with a Get() per pk (about 40 minutes); \
         ours reads them through the device's iterator in pages (a scan, not a Get() each), \
         which is far cheaper per record."
            .into(),
    )?);
    Ok(headlines)
}

/// The notes on Fig. 13: records, put time, the analyses, what is not measured.
fn fig13_notes(sets: &[Set; 2]) -> Vec<String> {
    vec![
        format!(
            "Records (the paper: 104.6K glacier, 132.8K tweets; ours generated): through \
             the device glacier {} (the top-50 query's run) and tweets {}; the engine \
             alone glacier {} and tweets {}. Every `queries` run also runs all of its \
             queries, the no-index ones a scan each, which bounds the counts. The runs \
             through the device are Fig. 11/12's (one run measures both when the two \
             experiments run in one `paper` command).",
            sets[0].1, sets[1].1, sets[0].2, sets[1].2
        ),
        "Put time: the load's seconds over its records (one put per round trip through \
         the device, flushed at the end; the compactions after the flush not counted), \
         the kinds loaded in turn in one process, their order rotated by round."
            .into(),
        "Host analysis: Q7-host sends every FRAN record to the host (a find through the \
         device); the host's sort of them is not timed. In-storage: Q7, the device's \
         `top` (k = 50 by max_elev). The baseline: the host reads every record through \
         the device's iterator and filters and sorts them."
            .into(),
        "Not measured: the paper's split of sort (compute) and Tx time, as our device and \
         host share one CPU and a loopback wire; only the engine's filtering and value \
         read times are counted apart."
            .into(),
    ]
}

/// The median of the rounds' values, 0 without any.
fn median_or_zero(xs: &[f64]) -> f64 {
    cerberus_figures::median(xs.iter().copied()).unwrap_or(0.0)
}
