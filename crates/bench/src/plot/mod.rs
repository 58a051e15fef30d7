//! `cerberus-bench plot --dir DIR --out DIR`: PNG charts of a multitenant grid, the JSON files
//! that `scripts/repro-multitenant` writes (one per point, named
//! `STORAGE-ENGINE-LAYOUT-tTENANTS-kKEYS-SETTLE.json`), after Figures 8-10 of the Cerberus paper.
//!
//! `cerberus-bench plot-iterators` ([`iterators`]) does the same for the iterator sweep of
//! `scripts/repro-iterators`, with the same drawing.
//!
//! Reading the files (`data`), laying out the charts (`charts`) and finding a font (`font`) is
//! plain code, tested without any feature. Only the drawing (`draw`) needs the
//! cargo feature `plot` (plotters, drawing text with its `ab_glyph` renderer from a TrueType
//! font read at run time, so that the build needs no system library).

pub mod bts;
mod charts;
mod data;
#[cfg(feature = "plot")]
mod draw;
mod font;
pub mod grid_table;
pub mod iterators;
pub mod queries;

use anyhow::{bail, Result};
use charts::{charts, Chart};
use clap::Parser;
use data::read_grid;
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

/// Draws `charts` into `out` (made if missing), printing each file's path.
#[cfg(feature = "plot")]
fn draw_charts(
    font: Option<&std::path::Path>,
    out: &std::path::Path,
    charts: &[Chart],
) -> Result<()> {
    use anyhow::Context;
    use font::find_font;

    let font = find_font(font)?;
    draw::register_font(&font)?;
    std::fs::create_dir_all(out).with_context(|| format!("making {}", out.display()))?;
    for c in charts {
        let path = out.join(&c.file);
        draw::chart(c, &path).with_context(|| format!("drawing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}

#[cfg(not(feature = "plot"))]
fn draw_charts(_: Option<&std::path::Path>, _: &std::path::Path, charts: &[Chart]) -> Result<()> {
    bail!(
        "this cerberus-bench was built without the `plot` feature ({} charts to draw); build it \
         with: cargo build --release -p cerberus-bench --features plot",
        charts.len()
    )
}
