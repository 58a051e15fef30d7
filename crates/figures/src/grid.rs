//! `cerberus-bench plot --dir DIR --out DIR`: PNG charts of a multitenant grid, the JSON files
//! that `scripts/repro-multitenant` writes (one per point, named
//! `STORAGE-ENGINE-LAYOUT-tTENANTS-kKEYS-SETTLE.json`), after Figures 8-10 of the Cerberus paper.

use crate::charts::{charts, Chart};
use crate::data::read_grid;
use crate::error::{bail, Result};
use crate::render::draw_charts;
use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;

/// Draws PNG charts of a multitenant grid's JSON files (scripts/repro-multitenant).
#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench plot",
    bin_name = "cerberus-bench plot",
    version,
    about = "Draws PNG charts of a multitenant grid's JSON files (scripts/repro-multitenant)"
)]
struct PlotArgs {
    /// Directory of the grid's JSON files (the OUT of scripts/repro-multitenant).
    #[arg(long)]
    dir: PathBuf,

    /// Directory the PNG files go to (made if missing).
    #[arg(long)]
    out: PathBuf,

    /// Tenant count of the chart comparing the layouts by where gets were answered (Fig. 9).
    #[arg(long, default_value_t = 8)]
    cdf_tenants: usize,

    /// TrueType or OpenType font for the text [default: DejaVu Sans, or another sans-serif
    /// font found under /usr/share/fonts].
    #[arg(long, env = "CERBERUS_PLOT_FONT")]
    font: Option<PathBuf>,
}

/// `cerberus-bench plot ...`; `args` starts with `plot` (taken as the program name).
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = PlotArgs::parse_from(args);
    let (points, warnings) = read_grid(&args.dir)?;
    for w in &warnings {
        eprintln!("cerberus-bench plot: warning: {w}");
    }
    let charts = charts(&points, args.cdf_tenants);
    if charts.is_empty() {
        bail!("nothing to plot in {}", args.dir.display());
    }
    draw_all(&args, &charts)
}

fn draw_all(args: &PlotArgs, charts: &[Chart]) -> Result<()> {
    draw_charts(args.font.as_deref(), &args.out, charts)
}
