//! The `queries` runs the Cerberus paper's query figures share (Fig. 11/12 in `queries.rs`,
//! Fig. 13 in `queries_fig13.rs`): the compared systems, one run's settings and its rounds, a
//! query's response time, and the headlines over rounds.

use super::ctx::{args, median_range, Ctx};
use anyhow::{bail, Context, Result};
use cerberus_figures::docs::paper::Headline;
use cerberus_figures::docs::queries::{EngineDoc, QueriesDoc};

/// The compared systems: the `--index` kind and its legend.
pub const KINDS: [(&str, &str); 3] = [
    ("none", "KVSSD-baseline (no index: host scan)"),
    ("classic", "Cerberus (classic index)"),
    ("vas", "Cerberus-VAS"),
];
pub const NONE: usize = 0;
pub const CLASSIC: usize = 1;
pub const VAS: usize = 2;

/// One `queries` run's settings.
pub struct RunOpts {
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
pub fn run(ctx: &mut Ctx, o: &RunOpts, round: usize) -> Result<Vec<EngineDoc>> {
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
pub fn query_ms(e: &EngineDoc, query: &str) -> Option<f64> {
    let xs: Vec<f64> = e
        .queries
        .iter()
        .filter(|q| q.query == query)
        .map(|q| q.median_us / 1e3)
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// One secondary key's run of a query.
pub fn query_sk<'a>(
    e: &'a EngineDoc,
    query: &str,
    sk: &str,
) -> Option<&'a cerberus_figures::docs::queries::QueryDoc> {
    e.queries.iter().find(|q| q.query == query && q.sk == sk)
}

// The documents' parts, under the names this module and Fig. 13 use.

/// A headline from the rounds' values of ours (an error if no round gave one).
pub fn headline(
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
pub fn with_model(mut h: Headline, rounds: &[f64]) -> Headline {
    let (m, _) = median_range(rounds);
    h.model = m.is_finite().then_some(m);
    h
}

/// Per round, `f` of that round's engines where it gives a value.
pub fn per_round(rounds: &[Vec<EngineDoc>], f: impl Fn(&[EngineDoc]) -> Option<f64>) -> Vec<f64> {
    rounds
        .iter()
        .filter_map(|r| f(r))
        .filter(|v| v.is_finite())
        .collect()
}

/// The runs of glacier and tweets through the device, for Fig. 11/12 and Fig. 13 alike.
pub fn device_opts(ctx: &Ctx) -> [RunOpts; 2] {
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
pub const DEVICE_MIN_QUERY_MS: f64 = 50.0;
