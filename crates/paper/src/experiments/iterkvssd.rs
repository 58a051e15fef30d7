//! IterKVSSD's figures (Lee et al., "Iterator Interface Extended LSM-tree-based KVSSD for
//! Range Queries", the slides): value prefetch over its degree (seekrandom on the NAND model
//! without cache, over value sizes and scan lengths), index prefetch and the next-latency
//! tail, and what an open iterator holds in memory over a tree of many tables. The runs are
//! those of `scripts/repro-iterators` (parts `nand` and `index`) and `cerberus-paper
//! itermem`, at a scale that fits an experiment.

use super::ctx::{median_range, Ctx};
use super::experiment::Experiment;
use super::iterkvssd_runs::{fill, seek, NAND};
use super::parts::{doc, fig, headline, join, ours, paper, ratios, words};
use anyhow::{bail, Context, Result};
use cerberus_figures::docs::paper::{ExperimentDoc, FigureDoc, Headline};
use serde_json::Value;

pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "iterkvssd-prefetch",
            reproduces: "IterKVSSD value prefetch: seekrandom entries/s over the prefetch degree",
            run: prefetch,
        },
        Experiment {
            name: "iterkvssd-index",
            reproduces: "IterKVSSD index prefetch: next-latency p99/p99.9, off and on",
            run: super::iterkvssd_index::index,
        },
        Experiment {
            name: "iterkvssd-memory",
            reproduces: "IterKVSSD versioning: memory an open iterator holds over many tables",
            run: memory,
        },
    ]
}

/// The slides' conclusion: "up to 7.2x better I/O throughput" (value prefetch, degrees 0-8).
const PAPER_VALUE_PREFETCH: f64 = 7.2;
/// The slides' versioning cost: a 44 B summary entry per table, ~65,000 tables, ~2.7 MB
/// per iterator that would copy it.
const PAPER_SUMMARY_ENTRY: f64 = 44.0;
const PAPER_SUMMARY_BYTES: f64 = 2.7e6;

fn size(v: u64) -> String {
    if v >= 1024 {
        format!("{} KiB", v / 1024)
    } else {
        format!("{v} B")
    }
}

fn prefetch(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    let values: Vec<u64> = ctx.scale(vec![128, 4096], vec![128, 4096, 16384, 131072]);
    let lengths: Vec<u64> = ctx.scale(vec![128, 1024], vec![128, 2048]);
    let degrees: Vec<u64> = ctx.scale(vec![0, 2, 8], vec![0, 1, 2, 4, 8]);
    let min_seeks: u64 = ctx.scale(3, 10);
    let sweep = Sweep {
        values,
        lengths,
        degrees,
        min_seeks,
        quick: ctx.quick,
    };
    let runs = run_prefetch(ctx, &sweep)?;
    let headlines = prefetch_headlines(&runs, &sweep)?;
    let figures = prefetch_figures(&runs, &sweep);
    doc(
        ctx,
        "IterKVSSD (slides), Evaluation - Value Prefetch and Conclusion",
        "seekrandom throughput over the value prefetch degree, per value size and scan length, \
         on the NAND model without cache.",
        figures,
        headlines,
        prefetch_differences(&sweep),
    )
}

/// The value prefetch experiment's value sizes, scan lengths, degrees and least seeks a run.
struct Sweep {
    values: Vec<u64>,
    lengths: Vec<u64>,
    degrees: Vec<u64>,
    min_seeks: u64,
    quick: bool,
}

/// runs[v][l][d]: entries/s of each round.
type Runs = Vec<Vec<Vec<Vec<f64>>>>;

impl Sweep {
    /// As scripts/repro-iterators: several times the longest scan of distinct keys, at most
    /// 512 MiB of values.
    fn keys(&self, v: u64) -> u64 {
        if self.quick {
            4_000
        } else {
            (512 * 1024 * 1024 / v).clamp(16_384, 200_000)
        }
    }

    /// Entries per run, about equal across scan lengths.
    fn entries(&self, v: u64) -> u64 {
        match v {
            _ if self.quick => 2_048,
            0..=4096 => 32_768,
            4097..=16384 => 24_576,
            _ => 16_384,
        }
    }
}

/// Fills a database per value size and runs the rounds of seekrandom over it.
fn run_prefetch(ctx: &mut Ctx, sweep: &Sweep) -> Result<Runs> {
    let Sweep {
        values,
        lengths,
        degrees,
        min_seeks,
        ..
    } = sweep;
    let (keys, entries) = (|v| sweep.keys(v), |v| sweep.entries(v));
    let mut runs = vec![vec![vec![Vec::new(); degrees.len()]; lengths.len()]; values.len()];
    for (vi, &v) in values.iter().enumerate() {
        let common = words(&format!("{NAND} --num {} --value-size {v}", keys(v)));
        let db = fill(ctx, &common)?;
        let dbs = db.display().to_string();
        for round in 0..ctx.rounds {
            for (li, &l) in lengths.iter().enumerate() {
                let seeks = entries(v).div_ceil(l).max(*min_seeks);
                // Each round starts with the next degree: none always runs first.
                for k in 0..degrees.len() {
                    let di = (k + round) % degrees.len();
                    let d = degrees[di];
                    let mut a = words(&format!(
                        "seekrandom --seeks {seeks} --scan-length {l} --prefetch-degree {d} --db"
                    ));
                    a.push(dbs.clone());
                    a.extend(common.iter().cloned());
                    let doc = ctx.run_json(&a)?;
                    runs[vi][li][di].push(seek(&doc)?.entries_per_sec);
                }
            }
        }
        // The next value size's database may be large: this one goes now.
        let _ = std::fs::remove_dir_all(&db);
    }
    Ok(runs)
}

/// Speedup over D = 0 per round, per degree, at one value size and scan length.
fn speedup(runs: &Runs, vi: usize, li: usize) -> Vec<Vec<f64>> {
    let base = &runs[vi][li][0];
    (0..runs[vi][li].len())
        .map(|di| ratios(&runs[vi][li][di], base))
        .collect()
}

/// The entries/s figure and the speedup figure at the longest scan.
fn prefetch_figures(runs: &Runs, sweep: &Sweep) -> Vec<FigureDoc> {
    let Sweep {
        values,
        lengths,
        degrees,
        ..
    } = sweep;
    let categories: Vec<String> = degrees.iter().map(u64::to_string).collect();
    let mut entries_series = Vec::new();
    for (vi, &v) in values.iter().enumerate() {
        for (li, &l) in lengths.iter().enumerate() {
            entries_series.push(ours(format!("{} values, scan {l}", size(v)), &runs[vi][li]));
        }
    }
    let long = lengths.len() - 1;
    let mut gain_series = Vec::new();
    for (vi, &v) in values.iter().enumerate() {
        gain_series.push(ours(
            format!("{} values, scan {}", size(v), lengths[long]),
            &speedup(runs, vi, long),
        ));
    }
    // The slides give the best gain only ("up to"), not at which point or degree: drawn at
    // the largest degree, where a monotone curve has it.
    let mut at_last = vec![None; degrees.len()];
    at_last[degrees.len() - 1] = Some(PAPER_VALUE_PREFETCH);
    gain_series.push(paper("slides: up to 7.2x (best point of D 0-8)", at_last));
    vec![
        fig(
            "iterkvssd-prefetch-entries.png",
            "IterKVSSD value prefetch: scan throughput over the degree (NAND model)".into(),
            "value prefetch degree D",
            "entries/s (median of the runs)",
            &categories,
            entries_series,
        ),
        fig(
            "iterkvssd-prefetch-speedup.png",
            format!(
                "IterKVSSD value prefetch: speedup over D = 0, scan length {}",
                lengths[long]
            ),
            "value prefetch degree D",
            "entries/s over D = 0's",
            &categories,
            gain_series,
        ),
    ]
}

/// The best speedup over D = 0 of every point run.
fn prefetch_headlines(runs: &Runs, sweep: &Sweep) -> Result<Vec<Headline>> {
    let Sweep {
        values,
        lengths,
        degrees,
        ..
    } = sweep;
    // The best point: the largest median speedup over every value size, scan length, degree.
    // (median, range, value size, scan length, degree)
    type Best = (f64, (f64, f64), u64, u64, u64);
    let mut best: Option<Best> = None;
    for (vi, &v) in values.iter().enumerate() {
        for (li, &l) in lengths.iter().enumerate() {
            for (di, xs) in speedup(runs, vi, li).iter().enumerate().skip(1) {
                let (m, r) = median_range(xs);
                if m.is_finite() && best.is_none_or(|b| m > b.0) {
                    best = Some((m, r, v, l, degrees[di]));
                }
            }
        }
    }
    let (g, gr, bv, bl, bd) = best.context("no speedup over D = 0 was measured")?;
    Ok(vec![headline(
        format!(
            "scan throughput, best prefetch degree over D = 0 (best point: {} values, scan \
             length {bl}, D = {bd})",
            size(bv)
        ),
        PAPER_VALUE_PREFETCH,
        (g, gr),
        format!(
            "seekrandom --storage nand --cache-bytes 0 --value-size {bv} --scan-length {bl} \
             --prefetch-degree 0|{bd}"
        ),
        "Both devices hide a value's flash read behind the nexts before it, so the gain \
              is bounded by the reads in flight (D + 1) for small values and by the flash \
              channels' bandwidth for large ones. The NAND model has 4 channels x 8 ways, tR \
              60 us and 800 MB/s per channel, and its nexts cost ~1-2 us of this VM's CPU; \
              the slides' Cosmos+ board differs in all of these and also spends time on the \
              NVMe command and the DMA of each entry, which prefetch overlaps too. The slides \
              give only the best gain, not at which point; ours is the best median over the \
              points run, so it leans high by the spread of the runs.",
    )])
}

/// How this setup differs from the slides'.
fn prefetch_differences(sweep: &Sweep) -> Vec<String> {
    let Sweep {
        values,
        lengths,
        degrees,
        min_seeks,
        quick,
    } = sweep;
    let (keys, entries) = (|v| sweep.keys(v), |v| sweep.entries(v));
    vec![
        format!(
            "Keys of 16 B (the slides: 3M pairs of 4 B keys): {} ({}), written by \
             fillrandom (~63 % distinct), then flushed and compacted.",
            join(values, |&v| format!("{} at {}", keys(v), size(v))),
            if *quick {
                "the smoke scale"
            } else {
                "as scripts/repro-iterators: 512 MiB of values at most"
            }
        ),
        format!(
            "Value sizes {} (the slides: 128 B, 4 KB, 16 KB, 128 KB); scan lengths {} (the \
             slides: 128-2048); degrees {} (the slides: 0-8).",
            join(values, |&v| size(v)),
            join(lengths, u64::to_string),
            join(degrees, u64::to_string)
        ),
        format!(
            "Seeks per run: about {} entries' worth, at least {min_seeks} seeks.",
            join(values, |&v| format!("{} at {}", entries(v), size(v)))
        ),
        "Device: the engine embedded in the bench on the NAND timing model (4 channels x 8 \
         ways, 16 KiB pages, tR 60 us, no cache), not OpenSSD Cosmos+ behind an extended \
         NVMe protocol; index prefetch on (the engine's default) in every run."
            .into(),
    ]
}

/// One itermem run's figures at one table count.
struct Mem {
    tables: f64,
    state: f64,
    buffers: f64,
    heap: f64,
}

fn mems(doc: &Value) -> Result<Vec<Mem>> {
    let runs = doc
        .get("runs")
        .and_then(Value::as_array)
        .context("an itermem document without runs")?;
    let num = |v: &Value, path: &[&str]| -> Result<f64> {
        let mut at = v;
        for p in path {
            at = at
                .get(*p)
                .with_context(|| format!("an itermem run without {p}"))?;
        }
        at.as_f64()
            .with_context(|| format!("{} is not a number", path.join(".")))
    };
    runs.iter()
        .map(|r| {
            Ok(Mem {
                tables: num(r, &["tables"])?,
                state: num(r, &["state_bytes", "mean"])?,
                buffers: num(r, &["buffers_bytes", "mean"])?,
                heap: num(r, &["heap_per_iterator_bytes"])?,
            })
        })
        .collect()
}

fn memory(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    let tables: Vec<usize> = ctx.scale(vec![30, 300], vec![100, 1000, 10000]);
    let iterators: usize = ctx.scale(100, 1000);
    let table_bytes: u64 = ctx.scale(1024, 4096);
    let list = join(&tables, usize::to_string).replace(' ', "");
    // per[t]: the rounds' figures at table count t.
    let mut per: Vec<Vec<Mem>> = (0..tables.len()).map(|_| Vec::new()).collect();
    for round in 0..ctx.rounds {
        let a = words(&format!(
            "itermem --tables {list} --iterators {iterators} --table-bytes {table_bytes} \
             --seed {}",
            42 + round
        ));
        let got = mems(&ctx.run_json(&a)?)?;
        if got.len() != tables.len() {
            bail!(
                "itermem measured {} table counts of {}",
                got.len(),
                tables.len()
            );
        }
        for (t, m) in got.into_iter().enumerate() {
            per[t].push(m);
        }
    }
    let col = |f: &dyn Fn(&Mem) -> f64| -> Vec<Vec<f64>> {
        per.iter().map(|ms| ms.iter().map(f).collect()).collect()
    };
    let built: Vec<f64> = col(&|m| m.tables)
        .iter()
        .map(|xs| median_range(xs).0)
        .collect();
    let categories: Vec<String> = built.iter().map(|t| format!("{t:.0}")).collect();
    let summary: Vec<Option<f64>> = built
        .iter()
        .map(|t| Some(t * PAPER_SUMMARY_ENTRY).filter(|v| v.is_finite()))
        .collect();
    let heap = col(&|m| m.heap);
    let figures = vec![
        fig(
            "iterkvssd-memory-iterator.png",
            "IterKVSSD versioning: bytes an open iterator holds over the tables".into(),
            "tables in the tree",
            "bytes per iterator (median of the runs)",
            &categories,
            vec![
                ours("state (Iter::memory)", &col(&|m| m.state)),
                ours("buffers: data blocks held", &col(&|m| m.buffers)),
                ours("heap allocated per iterator", &heap),
            ],
        ),
        fig(
            "iterkvssd-memory-summary.png",
            "IterKVSSD versioning: an iterator against a copied table summary".into(),
            "tables in the tree",
            "bytes per iterator",
            &categories,
            vec![
                ours("ours: heap allocated per iterator", &heap),
                paper("slides: a summary per iterator, 44 B x tables", summary),
            ],
        ),
    ];
    let last = tables.len() - 1;
    let (h, hr) = median_range(&heap[last]);
    let headlines = vec![headline(
        format!(
            "bytes an open iterator holds at {:.0} tables (slides: 2.7 MB to copy the summary \
             of ~65,000 tables per iterator)",
            built[last]
        ),
        PAPER_SUMMARY_BYTES,
        (h, hr),
        format!("itermem --tables {list} --iterators {iterators} --table-bytes {table_bytes}"),
        "The slides' 2.7 MB is the cost IterKVSSD avoids (a versioned summary copied per \
              iterator, 44 B x ~65,000 tables); they give no figure for their pooled design. \
              Ours is the heap an iterator allocates (net of frees, over tables already \
              open): the data blocks it holds (the figure's buffers) come from the block \
              cache and are not its own allocation. Each level source of an \
              iterator holds an Arc of the tree's version (shared by every iterator of that \
              version) and a range of indices into one level, copying no table list, so it \
              does not grow with the tables. Ours over the paper's is the \
              share of the copy's cost an iterator pays, at fewer tables than theirs.",
    )];
    doc(
        ctx,
        "IterKVSSD (slides), Memory Efficient Versioning Data Structure",
        "What an open iterator holds (state, data blocks, heap) over trees of more and \
                more tables, against a table summary copied per iterator.",
        figures,
        headlines,
        vec![
            format!(
                "Tables: {list} asked (built: {}), of {table_bytes} B each, 16 B keys and \
                 100 B values in the value log; the slides: ~65,000 tables.",
                join(&built, |t| format!("{t:.0}"))
            ),
            format!(
                "{iterators} iterators open at once, each seeked to a random key and \
                 advanced once, measured while {iterators} others stay open."
            ),
            "On files (posix) in this process's memory, not a device's DRAM; the summary \
             series is the slides' 44 B entry times our table counts."
                .into(),
        ],
    )
}
