//! The parts the experiments' documents are made of: a series of ours (medians and
//! ranges of the rounds) or of the paper, per-round ratios, a figure, a headline, the
//! document itself (its headlines checked), and command-line words.

use super::ctx::{median_range, Ctx};
use anyhow::Result;
use cerberus_figures::docs::paper::{ExperimentDoc, FigureDoc, Headline, SeriesDoc};

/// A series of ours: per category the median of the rounds and their range.
pub(super) fn ours(name: impl Into<String>, per: &[Vec<f64>]) -> SeriesDoc {
    let (values, ranges) = per
        .iter()
        .map(|xs| {
            let (m, r) = median_range(xs);
            (m.is_finite().then_some(m), m.is_finite().then_some(r))
        })
        .unzip();
    SeriesDoc {
        name: name.into(),
        paper: false,
        values,
        ranges,
    }
}

pub(super) fn paper(name: impl Into<String>, values: Vec<Option<f64>>) -> SeriesDoc {
    SeriesDoc {
        name: name.into(),
        paper: true,
        values,
        ranges: Vec::new(),
    }
}

/// Per round, `a[r] / b[r]` (the two ran side by side).
pub(super) fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(x, y)| x / y)
        .filter(|r| r.is_finite())
        .collect()
}

/// Command-line words (none with spaces).
pub(super) fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

pub(super) fn fig(
    file: &str,
    title: String,
    x: &str,
    y: &str,
    cats: &[String],
    series: Vec<SeriesDoc>,
) -> FigureDoc {
    FigureDoc {
        file: file.into(),
        title,
        x_desc: x.into(),
        y_desc: y.into(),
        categories: cats.to_vec(),
        series,
        bars: false,
    }
}

/// A headline of ours (median and range) against the slides' value.
pub(super) fn headline(
    claim: String,
    paper: f64,
    ours: (f64, (f64, f64)),
    command: String,
    why: &str,
) -> Headline {
    Headline {
        claim,
        paper,
        ours: ours.0,
        ours_range: ours.1,
        model: None,
        command,
        why: why.into(),
        floor: false,
    }
}

/// A headline against a peer's bar (not a paper figure): it holds when ours reaches `bar`.
#[cfg(feature = "rocksdb")]
pub(super) fn bar(claim: String, bar: f64, ours: (f64, (f64, f64)), command: String) -> Headline {
    Headline {
        floor: true,
        ..headline(claim, bar, ours, command, "")
    }
}

/// The experiment's document (`paper` fills in its name, scale, time and commands).
pub(super) fn doc(
    ctx: &Ctx,
    source: &str,
    title: &str,
    figures: Vec<FigureDoc>,
    headlines: Vec<Headline>,
    mut differences: Vec<String>,
) -> Result<ExperimentDoc> {
    super::experiment::check_headlines(&headlines)?;
    if ctx.quick {
        differences.push(
            "The smoke scale (what the CI test runs, often a debug build): a check that the \
             experiment runs, not a result."
                .into(),
        );
    }
    Ok(ExperimentDoc {
        name: String::new(),
        source: source.into(),
        title: title.into(),
        scale: String::new(),
        rounds: ctx.rounds,
        seconds: 0.0,
        commands: Vec::new(),
        figures,
        headlines,
        differences,
    })
}

pub(super) fn join<T>(xs: &[T], f: impl Fn(&T) -> String) -> String {
    xs.iter().map(f).collect::<Vec<_>>().join(", ")
}
