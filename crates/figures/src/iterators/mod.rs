//! `cerberus-bench plot-iterators --input DIR --out DIR [--markdown PATH]`: the tables and PNG
//! charts of the IterKVSSD sweep that `scripts/repro-iterators` runs (JSON files named
//! `nand-v{V}-l{L}-d{D}-r{R}.json`, `posix-n{N}-v{V}-t{T}-r{R}.json`, `idx-d{D}-{off|on}-r{R}.json`): medians over
//! the repeats, entries/s against the prefetch degree per value size, and the speedup over
//! D = 0 per scan length.

mod charts;
mod data;
mod tables;

use crate::error::{bail, Context, Result};
use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;

/// Draws the tables and PNG charts of an iterator sweep's JSON files (scripts/repro-iterators).
#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench plot-iterators",
    bin_name = "cerberus-bench plot-iterators",
    version,
    about = "Draws the tables and PNG charts of an iterator sweep (scripts/repro-iterators)"
)]
struct Args {
    /// Directory of the sweep's JSON files (the OUT of scripts/repro-iterators).
    #[arg(long)]
    input: PathBuf,

    /// Directory the PNG files go to (made if missing).
    #[arg(long)]
    out: PathBuf,

    /// Also write the markdown tables to this file (they are printed either way).
    #[arg(long)]
    markdown: Option<PathBuf>,

    /// Write the tables only, no charts.
    #[arg(long)]
    no_charts: bool,

    /// TrueType or OpenType font for the text [default: DejaVu Sans, or another sans-serif
    /// font found under /usr/share/fonts].
    #[arg(long, env = "CERBERUS_PLOT_FONT")]
    font: Option<PathBuf>,
}

/// `cerberus-bench plot-iterators ...`; `args` starts with `plot-iterators`.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let (sweep, warnings) = data::read_sweep(&args.input)?;
    for w in &warnings {
        eprintln!("cerberus-bench plot-iterators: warning: {w}");
    }
    if sweep.is_empty() {
        bail!("no sweep JSON files in {}", args.input.display());
    }
    let md = tables::markdown(&sweep);
    print!("{md}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &md).with_context(|| format!("writing {}", path.display()))?;
    }
    let charts = charts::charts(&sweep);
    if args.no_charts || charts.is_empty() {
        return Ok(());
    }
    crate::render::draw_charts(args.font.as_deref(), &args.out, &charts)
}
