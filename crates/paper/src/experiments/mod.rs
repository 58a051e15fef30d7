//! `cerberus-paper [--quick] --out DIR`: the experiments of the papers' figures in one
//! run. Each experiment runs the bench's commands (`multitenant`, `seekrandom`, `reclaim`,
//! ...) and this program's (`queries`, `itermem`, `bts`) as child processes of this same
//! binary, a fresh process per run, each
//! point `--rounds` times with the compared systems alternated within a round (this VM's
//! speed drifts by the minute); then writes `DIR/NAME.json` (`ExperimentDoc`), draws its
//! figures into `DIR/*.png`, and writes `DIR/paper-results.md` from every experiment
//! document in `DIR` (`--doc FILE`: also there, its PNGs copied beside it).
//!
//! `--quick` is the smoke scale a test runs (one run a point unless `--rounds`); the full
//! scale is the one `docs/paper-results.md` reports.

mod bts;
mod cerberus;
mod ctx;
mod destroy;
mod experiment;
mod iterkvssd;
mod iterkvssd_index;
mod iterkvssd_runs;
mod parts;
#[cfg(feature = "rocksdb")]
mod peers;
mod queries;
mod queries_fig13;
mod queries_model;
mod queries_runs;

use anyhow::{bail, Context, Result};
use cerberus_figures::docs::paper::ExperimentDoc;
use clap::Parser;
use ctx::Ctx;
use experiment::Experiment;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-paper",
    after_help = "Other commands (each with its own --help): `cerberus-paper queries` (the \
                  paper's secondary-key queries, and SQLite), `cerberus-paper plot-queries` \
                  (their charts), `cerberus-paper bts` (the scheduling policies with dedup as \
                  the background task), `cerberus-paper plot-bts` (its charts), \
                  `cerberus-paper itermem` (what open iterators hold over many tables)."
)]
struct Args {
    /// The smoke scale (minutes, one run a point unless --rounds).
    #[arg(long)]
    quick: bool,
    /// Where the experiments' JSON, PNG, logs and report go.
    #[arg(long)]
    out: PathBuf,
    /// Runs of each point (default: 3, or 1 with --quick).
    #[arg(long)]
    rounds: Option<usize>,
    /// Only these experiments (comma-separated names; see --list).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Prints the experiments' names and what they reproduce, and exits.
    #[arg(long)]
    list: bool,
    /// Writes the report and draws the figures again from the documents already in --out,
    /// running nothing.
    #[arg(long)]
    report_only: bool,
    /// Also writes the report to this file, the PNGs copied to `plots/paper/` beside it.
    #[arg(long)]
    doc: Option<PathBuf>,
    /// The font of the figures' text (default: the best found under /usr/share/fonts).
    #[arg(long)]
    font: Option<PathBuf>,
}

/// Every experiment, in the report's order.
fn experiments() -> Vec<Experiment> {
    let mut all = Vec::new();
    all.extend(cerberus::experiments());
    all.extend(destroy::experiments());
    all.extend(queries::experiments());
    all.extend(iterkvssd::experiments());
    all.extend(bts::experiments());
    #[cfg(feature = "rocksdb")]
    all.extend(peers::experiments());
    all
}

pub fn main(args: Vec<OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let all = experiments();
    if args.list {
        for e in &all {
            println!("{:<24} {}", e.name, e.reproduces);
        }
        return Ok(());
    }
    for name in &args.only {
        if !all.iter().any(|e| e.name == name) {
            bail!("no experiment {name} (see --list)");
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("making {}", args.out.display()))?;
    if !args.report_only {
        let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 3 });
        if rounds == 0 {
            bail!("--rounds must be at least 1");
        }
        let exe = std::env::current_exe().context("finding this program")?;
        let mut documents = ctx::Documents::default();
        for e in all
            .iter()
            .filter(|e| args.only.is_empty() || args.only.iter().any(|o| o == e.name))
        {
            eprintln!("paper: {} ({})", e.name, e.reproduces);
            let began = Instant::now();
            let mut ctx = Ctx::new(
                exe.clone(),
                &args.out,
                e.name,
                args.quick,
                rounds,
                documents,
            )?;
            let mut doc = (e.run)(&mut ctx).with_context(|| format!("experiment {}", e.name))?;
            doc.name = e.name.to_string();
            doc.scale = if args.quick { "quick" } else { "full" }.into();
            doc.rounds = rounds;
            doc.seconds = began.elapsed().as_secs_f64();
            doc.commands = ctx.commands();
            let path = args.out.join(format!("{}.json", e.name));
            std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
                .with_context(|| format!("writing {}", path.display()))?;
            cerberus_figures::paper::draw(args.font.as_deref(), &args.out, &doc)?;
            ctx.clean();
            documents = ctx.documents.for_next();
        }
    }
    let docs = read_docs(&args.out)?;
    if args.report_only {
        // The figures drawn again from the documents alone, as the report is written.
        for doc in &docs {
            cerberus_figures::paper::draw(args.font.as_deref(), &args.out, doc)?;
        }
    }
    let report = cerberus_figures::paper::report(&docs, ".");
    let path = args.out.join("paper-results.md");
    std::fs::write(&path, report).with_context(|| format!("writing {}", path.display()))?;
    println!("{}", path.display());
    if let Some(doc) = &args.doc {
        write_doc(doc, &args.out, &docs)?;
    }
    Ok(())
}

/// The experiment documents in `dir`, in the experiments' order (then others by name).
fn read_docs(dir: &Path) -> Result<Vec<ExperimentDoc>> {
    let order: Vec<&str> = experiments().iter().map(|e| e.name).collect();
    let mut docs = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let doc: ExperimentDoc = serde_json::from_str(&text)
            .with_context(|| format!("{} is not an experiment document", path.display()))?;
        docs.push(doc);
    }
    docs.sort_by_key(|d| {
        let at = order.iter().position(|n| *n == d.name);
        (at.unwrap_or(usize::MAX), d.name.clone())
    });
    Ok(docs)
}

/// The report at `doc`, its figures copied from `out` into `plots/paper/` beside it.
fn write_doc(doc: &Path, out: &Path, docs: &[ExperimentDoc]) -> Result<()> {
    let dir = doc.parent().unwrap_or(Path::new("."));
    let plots = dir.join("plots").join("paper");
    std::fs::create_dir_all(&plots).with_context(|| format!("making {}", plots.display()))?;
    for f in docs.iter().flat_map(|d| &d.figures) {
        let (from, to) = (out.join(&f.file), plots.join(&f.file));
        std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
    }
    let report = cerberus_figures::paper::report(docs, "plots/paper");
    std::fs::write(doc, report).with_context(|| format!("writing {}", doc.display()))?;
    println!("{}", doc.display());
    Ok(())
}
