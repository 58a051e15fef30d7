//! `cerberus-bench plot --dir DIR --out DIR`: PNG charts of a multitenant grid, the JSON files
//! that `scripts/repro-multitenant` writes (one per point, named
//! `STORAGE-ENGINE-LAYOUT-tTENANTS-kKEYS-SETTLE.json`), after Figures 8-10 of the Cerberus paper.
//!
//! Reading the files and laying out the charts is plain code, tested without any feature. Only
//! the drawing needs the cargo feature `plot` (plotters, drawing text with its `ab_glyph`
//! renderer from a TrueType font read at run time, so that the build needs no system library).

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

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

#[cfg(feature = "plot")]
fn draw_all(args: &PlotArgs, charts: &[Chart]) -> Result<()> {
    let font = find_font(args.font.as_deref())?;
    draw::register_font(&font)?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("making {}", args.out.display()))?;
    for c in charts {
        let path = args.out.join(&c.file);
        draw::chart(c, &path).with_context(|| format!("drawing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}

#[cfg(not(feature = "plot"))]
fn draw_all(_: &PlotArgs, charts: &[Chart]) -> Result<()> {
    bail!(
        "this cerberus-bench was built without the `plot` feature ({} charts to draw); build it \
         with: cargo build --release -p cerberus-bench --features plot",
        charts.len()
    )
}

/// Where a point sits in the grid: its file name's parts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PointName {
    /// `nand0` (NAND model, no cache), `nandbf` (NAND model, every filter cached), `posix`.
    pub storage: String,
    pub engine: String,
    pub layout: String,
    pub tenants: usize,
    /// Keys per tenant.
    pub keys: u64,
    /// `settled` or `no-settle`.
    pub settle: String,
}

pub const SETTLED: &str = "settled";
pub const NO_SETTLE: &str = "no-settle";

impl PointName {
    /// The file name the grid script gives this point, without `.json`.
    pub fn stem(&self) -> String {
        format!(
            "{}-{}-{}-t{}-k{}-{}",
            self.storage, self.engine, self.layout, self.tenants, self.keys, self.settle
        )
    }

    /// Parses [`PointName::stem`]'s form; `None` for any other name.
    pub fn parse(stem: &str) -> Option<PointName> {
        let (rest, settle) = match stem.strip_suffix(&format!("-{NO_SETTLE}")) {
            Some(rest) => (rest, NO_SETTLE),
            None => (stem.strip_suffix(&format!("-{SETTLED}"))?, SETTLED),
        };
        let parts: Vec<&str> = rest.split('-').collect();
        let [storage, engine, layout, t, k] = parts[..] else {
            return None;
        };
        if [storage, engine, layout].iter().any(|s| s.is_empty()) {
            return None;
        }
        Some(PointName {
            storage: storage.into(),
            engine: engine.into(),
            layout: layout.into(),
            tenants: t.strip_prefix('t')?.parse().ok()?,
            keys: k.strip_prefix('k')?.parse().ok()?,
            settle: settle.into(),
        })
    }

    /// The point's place from the document's own `config`, for a file not named by the script.
    fn from_config(doc: &Value) -> Option<PointName> {
        let c = doc.get("config")?;
        let cache = c.get("cache_bytes").and_then(Value::as_u64).unwrap_or(0);
        let storage = match c.get("storage")?.as_str()? {
            "nand" if cache == 0 => "nand0",
            "nand" => "nandbf",
            other => other,
        };
        let settle = match c.get("settle").and_then(Value::as_bool) {
            Some(false) => NO_SETTLE,
            _ => SETTLED,
        };
        Some(PointName {
            storage: storage.into(),
            engine: doc.get("engine")?.as_str()?.into(),
            layout: c.get("layout")?.as_str()?.into(),
            tenants: usize::try_from(c.get("tenants")?.as_u64()?).ok()?,
            keys: c.get("num_per_tenant")?.as_u64()?,
            settle: settle.into(),
        })
    }
}

/// One run of the grid: the figures the charts use.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub name: PointName,
    /// Means over the tenants of each tenant's ops/s.
    pub put_ops_per_tenant: f64,
    pub get_ops_per_tenant: f64,
    /// Means over the tenants; `None` when the engine counts none (RocksDB).
    pub filter_loads_per_get: Option<f64>,
    pub page_reads_per_get: Option<f64>,
    /// Gets of all tenants by where they were answered, in search order (see [`step_order`]);
    /// empty when the engine counts none.
    pub gets_by_step: Vec<(String, u64)>,
}

/// Sort key of a get's search step: `memtable`, `L0`, `runs` (namespace runs split out of L0),
/// `L1`, `L2`, ..., then any other name.
pub fn step_order(step: &str) -> (u8, u32, String) {
    match step {
        "memtable" => (0, 0, String::new()),
        "L0" => (1, 0, String::new()),
        "runs" => (2, 0, String::new()),
        _ => match step.strip_prefix('L').and_then(|n| n.parse::<u32>().ok()) {
            Some(n) => (3, n, String::new()),
            None => (4, 0, step.to_string()),
        },
    }
}

/// The point of one multitenant document; `name` is the file's, if it follows the grid's form.
pub fn point_from_doc(name: Option<PointName>, doc: &Value) -> Result<Point> {
    if let Some(w) = doc.get("workload").and_then(Value::as_str) {
        if w != "multitenant" {
            bail!("workload {w}, not multitenant");
        }
    }
    let mut name = match name {
        Some(n) => n,
        None => PointName::from_config(doc)
            .ok_or_else(|| anyhow!("neither a grid file name nor a multitenant config"))?,
    };
    if let Some(e) = doc.get("engine").and_then(Value::as_str) {
        // A file with several engines: each document says its own.
        name.engine = e.to_string();
    }
    let summary = doc
        .get("summary")
        .filter(|s| s.is_object())
        .ok_or_else(|| anyhow!("no summary"))?;
    let number = |key: &str| summary.get(key).and_then(Value::as_f64);
    let mut steps: BTreeMap<(u8, u32, String), (String, u64)> = BTreeMap::new();
    let tenants = doc.get("tenants").and_then(Value::as_array);
    for t in tenants.into_iter().flatten() {
        let Some(by) = t.get("gets_by_level").and_then(Value::as_object) else {
            continue;
        };
        for (step, n) in by {
            let n = n
                .as_u64()
                .ok_or_else(|| anyhow!("gets_by_level.{step} is not a count"))?;
            steps
                .entry(step_order(step))
                .or_insert_with(|| (step.clone(), 0))
                .1 += n;
        }
    }
    Ok(Point {
        name,
        put_ops_per_tenant: number("mean_put_ops_per_sec")
            .ok_or_else(|| anyhow!("no summary.mean_put_ops_per_sec"))?,
        get_ops_per_tenant: number("mean_get_ops_per_sec")
            .ok_or_else(|| anyhow!("no summary.mean_get_ops_per_sec"))?,
        filter_loads_per_get: number("mean_filter_loads_per_get"),
        page_reads_per_get: number("mean_page_reads_per_get"),
        gets_by_step: steps.into_values().collect(),
    })
}

/// The points of one file: one document, or an array of them (one per engine).
pub fn points_from_text(stem: &str, text: &str) -> Result<Vec<Point>> {
    let v: Value = serde_json::from_str(text).context("not JSON")?;
    let name = PointName::parse(stem);
    match &v {
        Value::Array(docs) => docs
            .iter()
            .map(|d| point_from_doc(name.clone(), d))
            .collect(),
        doc => Ok(vec![point_from_doc(name, doc)?]),
    }
}

/// Every multitenant point of the `*.json` files in `dir` (not its subdirectories), and a
/// warning for each file that is not one, or that repeats a point.
pub fn read_grid(dir: &Path) -> Result<(Vec<Point>, Vec<String>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    files.sort();
    let mut points: Vec<Point> = Vec::new();
    let mut warnings = Vec::new();
    for f in files {
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let read = std::fs::read_to_string(&f)
            .map_err(anyhow::Error::from)
            .and_then(|text| points_from_text(stem, &text));
        match read {
            Ok(ps) => {
                for p in ps {
                    if points.iter().any(|q| q.name == p.name) {
                        warnings.push(format!(
                            "{}: {} is already in another file; left out",
                            f.display(),
                            p.name.stem()
                        ));
                    } else {
                        points.push(p);
                    }
                }
            }
            Err(e) => warnings.push(format!("{}: skipped: {e:#}", f.display())),
        }
    }
    if points.is_empty() {
        bail!("no multitenant JSON files in {}", dir.display());
    }
    Ok((points, warnings))
}

/// Where a chart's legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legend {
    UpperLeft,
    UpperRight,
    LowerRight,
}

/// One line of a chart: a value per category of the x axis (`None`: no point there).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub color: [u8; 3],
    pub values: Vec<Option<f64>>,
}

/// A line chart over equally spaced categories (tenant counts, or search steps).
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The PNG's file name.
    pub file: String,
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    /// The y axis is a percentage (0 to 100).
    pub percent: bool,
    pub legend: Legend,
}

/// Charts of one storage, engine, keys-per-tenant and settle mode.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    storage: String,
    engine: String,
    keys: u64,
    settle: String,
}

/// Layouts in the order of the paper's comparison; others after them, by name.
fn layout_order(layout: &str) -> (u8, &str) {
    match layout {
        "per_namespace" => (0, ""),
        "shared" => (1, ""),
        "baseline" => (2, ""),
        other => (3, other),
    }
}

fn layout_color(layout: &str, i: usize) -> [u8; 3] {
    match layout {
        "per_namespace" => [31, 119, 180],
        "shared" => [214, 39, 40],
        "baseline" => [255, 127, 14],
        _ => PALETTE[(i + 3) % PALETTE.len()],
    }
}

/// Distinct colors for lines that are not layouts (tenant counts).
const PALETTE: [[u8; 3]; 8] = [
    [31, 119, 180],
    [44, 160, 44],
    [148, 103, 189],
    [214, 39, 40],
    [255, 127, 14],
    [23, 190, 207],
    [140, 86, 75],
    [127, 127, 127],
];

fn storage_desc(storage: &str) -> &str {
    match storage {
        "nand0" => "NAND model, no cache",
        "nandbf" => "NAND model, filters cached",
        "posix" => "files, no cache",
        other => other,
    }
}

/// `200000` -> `200,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut groups = Vec::new();
    let mut end = digits.len();
    while end > 3 {
        groups.push(&digits[end - 3..end]);
        end -= 3;
    }
    groups.push(&digits[..end]);
    groups.reverse();
    groups.join(",")
}

/// The charts of a grid: per storage, engine, keys per tenant and settle mode, filter loads
/// per get (Fig. 10a), get and put ops/s per tenant (Fig. 8c, 8a) against the tenants, one
/// line per layout; where gets were answered as a CDF over the search steps, at `cdf_tenants`
/// tenants one line per layout, and per layout one line per tenant count (Fig. 9).
pub fn charts(points: &[Point], cdf_tenants: usize) -> Vec<Chart> {
    let mut groups: BTreeMap<GroupKey, Vec<&Point>> = BTreeMap::new();
    for p in points {
        let n = &p.name;
        groups
            .entry(GroupKey {
                storage: n.storage.clone(),
                engine: n.engine.clone(),
                keys: n.keys,
                settle: n.settle.clone(),
            })
            .or_default()
            .push(p);
    }
    let mut out = Vec::new();
    for (g, ps) in groups {
        let prefix = format!("{}-{}-k{}-{}", g.storage, g.engine, g.keys, g.settle);
        let about = format!(
            "{} ({}), {}, {} keys/tenant, {}",
            g.storage,
            storage_desc(&g.storage),
            g.engine,
            thousands(g.keys),
            g.settle
        );
        let tenants: Vec<usize> = ps
            .iter()
            .map(|p| p.name.tenants)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut layouts: Vec<&str> = ps
            .iter()
            .map(|p| p.name.layout.as_str())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        layouts.sort_by_key(|l| layout_order(l));
        let find = |layout: &str, t: usize| {
            ps.iter()
                .find(|p| p.name.layout == layout && p.name.tenants == t)
        };
        let by_tenants = |figure: &dyn Fn(&Point) -> Option<f64>| -> Vec<Series> {
            layouts
                .iter()
                .enumerate()
                .map(|(i, l)| Series {
                    name: l.to_string(),
                    color: layout_color(l, i),
                    values: tenants
                        .iter()
                        .map(|&t| find(l, t).and_then(|p| figure(p)))
                        .collect(),
                })
                .filter(|s| s.values.iter().any(Option::is_some))
                .collect()
        };
        let tenant_axis: Vec<String> = tenants.iter().map(ToString::to_string).collect();
        let vs_tenants = |file: &str, what: &str, y: &str, legend, series: Vec<Series>| Chart {
            file: format!("{prefix}-{file}.png"),
            title: format!("{what}: {about}"),
            x_desc: "tenants".into(),
            y_desc: y.into(),
            categories: tenant_axis.clone(),
            series,
            percent: false,
            legend,
        };
        let series = by_tenants(&|p| p.filter_loads_per_get);
        if !series.is_empty() {
            out.push(vs_tenants(
                "fig10a-filter-loads",
                "Filter loads per get",
                "filter loads per get (mean over tenants)",
                Legend::UpperLeft,
                series,
            ));
        }
        out.push(vs_tenants(
            "fig8c-get-ops",
            "Gets",
            "get ops/s per tenant",
            Legend::UpperRight,
            by_tenants(&|p| Some(p.get_ops_per_tenant)),
        ));
        out.push(vs_tenants(
            "fig8a-put-ops",
            "Puts",
            "put ops/s per tenant",
            Legend::UpperRight,
            by_tenants(&|p| Some(p.put_ops_per_tenant)),
        ));

        // Fig. 9 at `cdf_tenants` tenants: a line per layout.
        let at: Vec<(usize, &Point)> = layouts
            .iter()
            .enumerate()
            .filter_map(|(i, l)| find(l, cdf_tenants).map(|p| (i, *p)))
            .filter(|(_, p)| p.gets_by_step.iter().any(|(_, n)| *n > 0))
            .collect();
        if !at.is_empty() {
            let series = at
                .iter()
                .map(|&(i, p)| (p.name.layout.clone(), layout_color(&p.name.layout, i), p))
                .collect();
            out.push(cdf_chart(
                format!("{prefix}-fig9-cdf-t{cdf_tenants}.png"),
                format!("Where gets were answered, {cdf_tenants} tenants: {about}"),
                series,
            ));
        }
        // Fig. 9 (a), (b): per layout, a line per tenant count.
        for l in &layouts {
            let series: Vec<(String, [u8; 3], &Point)> = tenants
                .iter()
                .filter_map(|&t| find(l, t))
                .filter(|p| p.gets_by_step.iter().any(|(_, n)| *n > 0))
                .enumerate()
                .map(|(i, p)| {
                    let n = p.name.tenants;
                    let label = format!("{n} tenant{}", if n == 1 { "" } else { "s" });
                    (label, PALETTE[i % PALETTE.len()], *p)
                })
                .collect();
            if !series.is_empty() {
                out.push(cdf_chart(
                    format!("{prefix}-fig9-cdf-{l}.png"),
                    format!("Where gets were answered, {l}: {about}"),
                    series,
                ));
            }
        }
    }
    out
}

/// A CDF of gets over the search steps, one line per `(label, color, point)`: the steps run from
/// the memtable to the deepest that answered a get in any of the points.
fn cdf_chart(file: String, title: String, lines: Vec<(String, [u8; 3], &Point)>) -> Chart {
    let mut steps: BTreeMap<(u8, u32, String), String> = BTreeMap::new();
    for step in ["memtable", "L0", "L1"] {
        steps.insert(step_order(step), step.into());
    }
    for (_, _, p) in &lines {
        for (step, n) in &p.gets_by_step {
            if *n > 0 || step == "runs" {
                steps.insert(step_order(step), step.clone());
            }
        }
    }
    // Up to the deepest step that answered a get.
    let deepest = lines
        .iter()
        .flat_map(|(_, _, p)| &p.gets_by_step)
        .filter(|(_, n)| *n > 0)
        .map(|(s, _)| step_order(s))
        .max();
    let steps: Vec<String> = steps
        .into_iter()
        .filter(|(k, _)| deepest.as_ref().is_some_and(|d| k <= d || k.0 < 3))
        .map(|(_, s)| s)
        .collect();
    let series = lines
        .into_iter()
        .map(|(name, color, p)| {
            let total: u64 = p.gets_by_step.iter().map(|(_, n)| n).sum();
            let mut cum = 0;
            let values = steps
                .iter()
                .map(|s| {
                    cum += p
                        .gets_by_step
                        .iter()
                        .filter(|(q, _)| q == s)
                        .map(|(_, n)| n)
                        .sum::<u64>();
                    Some(100.0 * cum as f64 / total as f64)
                })
                .collect();
            Series {
                name,
                color,
                values,
            }
        })
        .collect();
    Chart {
        file,
        title,
        x_desc: "answered at or above (search order)".into(),
        y_desc: "gets (cumulative %)".into(),
        categories: steps,
        series,
        percent: true,
        legend: Legend::LowerRight,
    }
}

/// The font for the charts' text: `explicit`, or the best sans-serif font under the usual
/// font directories.
#[cfg_attr(not(feature = "plot"), allow(dead_code))] // drawing only
pub fn find_font(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        bail!("font file {} not found", p.display());
    }
    let mut roots = vec![
        PathBuf::from("/usr/share/fonts"),
        PathBuf::from("/usr/local/share/fonts"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(Path::new(&home).join(".local/share/fonts"));
        roots.push(Path::new(&home).join(".fonts"));
    }
    find_font_under(&roots).ok_or_else(|| {
        anyhow!(
            "no TrueType or OpenType font found under /usr/share/fonts to draw the text with: \
             install one (Debian: apt-get install fonts-dejavu-core; scripts/repro-multitenant \
             does) or give one with --font FILE"
        )
    })
}

/// The best font file under `roots`: DejaVu Sans, Liberation Sans, then any plain (not bold,
/// italic, mono, ...) sans-serif font, then any plain font, then any font.
#[cfg_attr(not(feature = "plot"), allow(dead_code))] // drawing only
pub fn find_font_under(roots: &[PathBuf]) -> Option<PathBuf> {
    fn walk(dir: &Path, depth: u32, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if depth < 8 {
                    walk(&p, depth + 1, found);
                }
            } else if p
                .extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("ttf") || x.eq_ignore_ascii_case("otf"))
            {
                found.push(p);
            }
        }
    }
    let mut found = Vec::new();
    for r in roots {
        walk(r, 0, &mut found);
    }
    found.sort();
    let rank = |p: &PathBuf| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let styled = [
            "bold",
            "italic",
            "oblique",
            "mono",
            "condensed",
            "light",
            "thin",
            "black",
            "semi",
            "medium",
        ]
        .iter()
        .any(|s| name.contains(s));
        match name.as_str() {
            "dejavusans.ttf" => 0,
            "liberationsans-regular.ttf" => 1,
            _ if name.contains("sans") && !name.contains("serif") && !styled => 2,
            _ if !styled => 3,
            _ => 4,
        }
    };
    found.into_iter().min_by_key(rank)
}

/// Tick labels of a y axis that reaches `max`: `12k`, `1.5M`, `0.25`.
#[cfg_attr(not(feature = "plot"), allow(dead_code))] // drawing only
pub fn format_y(v: f64, max: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if v == 0.0 {
        "0".into()
    } else if max >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if max >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if max >= 100.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.2}"))
    }
}

#[cfg(feature = "plot")]
mod draw {
    use super::{format_y, Chart, Legend};
    use anyhow::{anyhow, Context, Result};
    use plotters::coord::combinators::BindKeyPoints;
    use plotters::prelude::*;
    use std::path::Path;

    const FONT: &str = "sans-serif";
    const SIZE: (u32, u32) = (1200, 720);

    /// Reads the font file and gives it to plotters for every family the charts may ask for.
    pub fn register_font(path: &Path) -> Result<()> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        // plotters keeps fonts for the whole run.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        for family in ["sans-serif", "serif", "monospace"] {
            plotters::style::register_font(family, FontStyle::Normal, bytes)
                .map_err(|_| anyhow!("{} is not a TrueType or OpenType font", path.display()))?;
        }
        Ok(())
    }

    fn rgb(c: [u8; 3]) -> RGBColor {
        RGBColor(c[0], c[1], c[2])
    }

    pub fn chart(c: &Chart, path: &Path) -> Result<()> {
        let root = BitMapBackend::new(path, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let n = c.categories.len().max(1);
        let y_max = if c.percent {
            104.0
        } else {
            let max = c
                .series
                .iter()
                .flat_map(|s| s.values.iter().flatten())
                .fold(0.0f64, |m, &v| m.max(v));
            if max > 0.0 {
                max * 1.15
            } else {
                1.0
            }
        };
        // Category i sits at 2i + 1 on an axis from 0 to 2n: half a step of margin each side.
        let n = i32::try_from(n).context("too many categories")?;
        let x = (0..2 * n).with_key_points((0..n).map(|i| 2 * i + 1).collect());
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, (FONT, 20))
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(x, 0.0..y_max)?;
        let label = |x: &i32| match usize::try_from((x - 1) / 2) {
            Ok(i) if x % 2 == 1 => c.categories.get(i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let y_label = |y: &f64| {
            if c.percent {
                format!("{y:.0}%")
            } else {
                format_y(*y, y_max)
            }
        };
        chart
            .configure_mesh()
            .x_desc(c.x_desc.as_str())
            .y_desc(c.y_desc.as_str())
            .x_label_formatter(&label)
            .y_label_formatter(&y_label)
            .y_labels(8)
            .label_style((FONT, 17))
            .axis_desc_style((FONT, 19))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(BLACK.mix(0.04))
            .draw()?;
        for (i, s) in c.series.iter().enumerate() {
            let color = rgb(s.color);
            // Lines drawn first are wider and their markers larger, so that a line drawn over
            // another with the same values leaves it visible on both sides.
            let rest = u32::try_from(c.series.len() - 1 - i).unwrap_or(0).min(3);
            let width = 2 + 2 * rest;
            let marker = 4 + 2 * rest as i32;
            let points: Vec<(i32, f64)> = (1..)
                .step_by(2)
                .zip(&s.values)
                .filter_map(|(x, v)| v.map(|v| (x, v)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(width)))?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(width))
                });
            chart.draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, marker, color.filled())),
            )?;
        }
        let position = match c.legend {
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
        };
        chart
            .configure_series_labels()
            .position(position)
            .margin(12)
            .label_font((FONT, 17))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.5))
            .draw()?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A multitenant document as the bench writes it, cut down to what the charts read.
    fn doc(layout: &str, tenants: usize, put: f64, get: f64, loads: Option<f64>) -> String {
        let tenant = |i: usize| {
            format!(
                r#"{{"name":"tenant-{i}","nsid":{},"put_ops_per_sec":{put},"get_ops_per_sec":{get},
                   "gets_by_level":{{"memtable":10,"L0":20,"L1":50,"L2":20,"L3":0}}}}"#,
                i + 1
            )
        };
        let ts: Vec<String> = (0..tenants).map(tenant).collect();
        let loads = loads.map_or("null".into(), |l| l.to_string());
        format!(
            r#"{{"engine":"cerberus","workload":"multitenant",
                "config":{{"tenants":{tenants},"num_per_tenant":1000,"layout":"{layout}",
                           "storage":"nand","cache_bytes":0}},
                "tenants":[{}],
                "summary":{{"tenants":{tenants},"mean_put_ops_per_sec":{put},
                            "mean_get_ops_per_sec":{get},"mean_filter_loads_per_get":{loads},
                            "mean_page_reads_per_get":4.5,"nand_read_time_us_per_get":null}}}}"#,
            ts.join(",")
        )
    }

    #[test]
    fn names_round_trip() {
        let n = PointName::parse("nand0-cerberus-per_namespace-t8-k200000-settled").unwrap();
        assert_eq!(n.storage, "nand0");
        assert_eq!(n.engine, "cerberus");
        assert_eq!(n.layout, "per_namespace");
        assert_eq!((n.tenants, n.keys), (8, 200_000));
        assert_eq!(n.settle, SETTLED);
        assert_eq!(n.stem(), "nand0-cerberus-per_namespace-t8-k200000-settled");
        let n = PointName::parse("posix-rocksdb-baseline-t16-k1000000-no-settle").unwrap();
        assert_eq!(
            (n.layout.as_str(), n.settle.as_str()),
            ("baseline", NO_SETTLE)
        );
        assert_eq!(PointName::parse(&n.stem()), Some(n));
        for bad in [
            "nand-cerberus-shared-4",
            "nand0-cerberus-shared-t4-k10-later",
            "nand0-cerberus-shared-4-k10-settled",
            "nand0-cerberus-t4-k10-settled",
            "nand0-cerberus--t4-k10-settled",
            "x-nand0-cerberus-shared-t4-k10-settled",
        ] {
            assert_eq!(PointName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_document_becomes_a_point() {
        let text = doc("shared", 2, 1500.0, 3000.0, Some(1.25));
        let ps = points_from_text("nandbf-cerberus-shared-t2-k1000-no-settle", &text).unwrap();
        assert_eq!(ps.len(), 1);
        let p = &ps[0];
        assert_eq!(
            p.name.storage, "nandbf",
            "the file name wins over the config"
        );
        assert_eq!(p.name.settle, NO_SETTLE);
        assert_eq!(p.put_ops_per_tenant, 1500.0);
        assert_eq!(p.get_ops_per_tenant, 3000.0);
        assert_eq!(p.filter_loads_per_get, Some(1.25));
        assert_eq!(p.page_reads_per_get, Some(4.5));
        let steps: Vec<(&str, u64)> = p.gets_by_step.iter().map(|(s, n)| (&**s, *n)).collect();
        assert_eq!(
            steps,
            [
                ("memtable", 20),
                ("L0", 40),
                ("L1", 100),
                ("L2", 40),
                ("L3", 0)
            ]
        );

        // Any other name: the config says where it sits.
        let p = &points_from_text("my-run", &text).unwrap()[0];
        assert_eq!(p.name.stem(), "nand0-cerberus-shared-t2-k1000-settled");

        // RocksDB: no namespace counters.
        let text = r#"[{"engine":"rocksdb","workload":"multitenant",
            "tenants":[{"name":"tenant-0","gets_by_level":null}],
            "summary":{"mean_put_ops_per_sec":10,"mean_get_ops_per_sec":20,
                       "mean_filter_loads_per_get":null,"mean_page_reads_per_get":null}}]"#;
        let p = &points_from_text("posix-rocksdb-per_namespace-t1-k50-settled", text).unwrap()[0];
        assert_eq!(p.name.engine, "rocksdb");
        assert_eq!(p.filter_loads_per_get, None);
        assert!(p.gets_by_step.is_empty());

        assert!(points_from_text("x", "{").is_err());
        assert!(points_from_text("x", r#"{"workload":"fillrandom","summary":{}}"#).is_err());
        assert!(points_from_text(
            "posix-cerberus-shared-t1-k5-settled",
            r#"{"summary":{"mean_get_ops_per_sec":1}}"#
        )
        .is_err());
    }

    #[test]
    fn search_steps_sort_in_search_order() {
        let mut steps = vec!["L10", "L2", "runs", "other", "L0", "memtable", "L1"];
        steps.sort_by_key(|s| step_order(s));
        assert_eq!(
            steps,
            ["memtable", "L0", "runs", "L1", "L2", "L10", "other"]
        );
        let text = r#"{"workload":"multitenant","tenants":[
              {"gets_by_level":{"L1":3,"runs":2,"memtable":1,"L0":0}},
              {"gets_by_level":{"L1":1,"L2":4}}],
            "summary":{"mean_put_ops_per_sec":1,"mean_get_ops_per_sec":1}}"#;
        let p = &points_from_text("posix-cerberus-per_namespace-t2-k5-settled", text).unwrap()[0];
        let steps: Vec<(&str, u64)> = p.gets_by_step.iter().map(|(s, n)| (&**s, *n)).collect();
        assert_eq!(
            steps,
            [
                ("memtable", 1),
                ("L0", 0),
                ("runs", 2),
                ("L1", 4),
                ("L2", 4)
            ]
        );
    }

    #[test]
    fn grid_files_make_charts_per_group() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        write(
            "nand0-cerberus-per_namespace-t1-k1000-settled.json",
            doc("per_namespace", 1, 100.0, 50.0, Some(1.0)),
        );
        write(
            "nand0-cerberus-per_namespace-t8-k1000-settled.json",
            doc("per_namespace", 8, 20.0, 40.0, Some(1.0)),
        );
        write(
            "nand0-cerberus-shared-t8-k1000-settled.json",
            doc("shared", 8, 19.0, 20.0, Some(2.5)),
        );
        write(
            "nand0-cerberus-baseline-t1-k1000-settled.json",
            doc("baseline", 1, 90.0, 45.0, Some(1.1)),
        );
        write(
            "posix-cerberus-shared-t4-k1000-settled.json",
            doc("shared", 4, 1.0, 2.0, None),
        );
        write("table.json", "{\"not\": \"a run\"}".into());
        std::fs::write(dir.path().join("notes.md"), "ignored").unwrap();

        let (points, warnings) = read_grid(dir.path()).unwrap();
        assert_eq!(points.len(), 5);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("table.json"), "{warnings:?}");

        let charts = charts(&points, 8);
        let files: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "nand0-cerberus-k1000-settled-fig10a-filter-loads.png",
                "nand0-cerberus-k1000-settled-fig8c-get-ops.png",
                "nand0-cerberus-k1000-settled-fig8a-put-ops.png",
                "nand0-cerberus-k1000-settled-fig9-cdf-t8.png",
                "nand0-cerberus-k1000-settled-fig9-cdf-per_namespace.png",
                "nand0-cerberus-k1000-settled-fig9-cdf-shared.png",
                "nand0-cerberus-k1000-settled-fig9-cdf-baseline.png",
                // No filter loads counted: no Fig. 10a.
                "posix-cerberus-k1000-settled-fig8c-get-ops.png",
                "posix-cerberus-k1000-settled-fig8a-put-ops.png",
                "posix-cerberus-k1000-settled-fig9-cdf-shared.png",
            ]
        );
        let loads = &charts[0];
        assert_eq!(loads.categories, ["1", "8"]);
        assert!(
            loads
                .title
                .contains("nand0 (NAND model, no cache), cerberus, 1,000 keys/tenant, settled"),
            "{}",
            loads.title
        );
        let names: Vec<&str> = loads.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["per_namespace", "shared", "baseline"]);
        assert_eq!(loads.series[0].values, [Some(1.0), Some(1.0)]);
        assert_eq!(loads.series[1].values, [None, Some(2.5)]);
        assert_eq!(loads.series[2].values, [Some(1.1), None]);
        assert_eq!(charts[1].series[1].values, [None, Some(20.0)]);
        assert_eq!(charts[2].series[0].values, [Some(100.0), Some(20.0)]);

        let cdf = &charts[3];
        assert!(cdf.percent);
        // Up to the deepest step that answered a get (L3 answered none).
        assert_eq!(cdf.categories, ["memtable", "L0", "L1", "L2"]);
        let names: Vec<&str> = cdf.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["per_namespace", "shared"]);
        assert_eq!(
            cdf.series[0].values,
            [Some(10.0), Some(30.0), Some(80.0), Some(100.0)]
        );
        let per_tenants = &charts[4];
        let names: Vec<&str> = per_tenants.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["1 tenant", "8 tenants"]);
    }

    #[test]
    fn an_empty_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_grid(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no multitenant JSON"), "{err}");
    }

    #[test]
    fn fonts_are_found_by_preference() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        assert_eq!(find_font_under(std::slice::from_ref(&root)), None);
        let put = |rel: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
            p
        };
        let bold = put("a/NotoSans-Bold.ttf");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(bold));
        let serif = put("b/NotoSerif-Regular.otf");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(serif));
        let sans = put("c/d/NotoSans-Regular.TTF");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(sans));
        let dejavu = put("truetype/dejavu/DejaVuSans.ttf");
        put("truetype/dejavu/DejaVuSans-Bold.ttf");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(dejavu));
        assert!(find_font(Some(&root.join("missing.ttf"))).is_err());
    }

    #[test]
    fn y_labels_read_short() {
        assert_eq!(format_y(12_500.0, 40_000.0), "12.5k");
        assert_eq!(format_y(20_000.0, 40_000.0), "20k");
        assert_eq!(format_y(1_500_000.0, 2e6), "1.5M");
        assert_eq!(format_y(250.0, 900.0), "250");
        assert_eq!(format_y(1.25, 3.0), "1.25");
        assert_eq!(format_y(2.0, 3.0), "2");
        assert_eq!(format_y(0.0, 40_000.0), "0");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(200_000), "200,000");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
