//! Laying out the charts of a grid: which charts, their axes and their series (a line per
//! layout or per tenant count), and the labels of their numbers.

use super::data::{step_order, Point};
use crate::grid_table::{stat, Figure};
use crate::table::thousands;
use std::collections::{BTreeMap, BTreeSet};

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
    /// Per category, the range (min, max) of the runs the value is the median of, drawn as
    /// an error bar; empty (or `None`) when there is one run.
    pub ranges: Vec<Option<(f64, f64)>>,
}

/// A chart over equally spaced categories (tenant counts, or search steps): lines, or
/// grouped bars.
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
    /// A bar per series in each category (as the papers draw their comparisons), not lines.
    pub bars: bool,
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
pub(crate) fn layout_order(layout: &str) -> (u8, &str) {
    match layout {
        "per_namespace" => (0, ""),
        "shared" => (1, ""),
        "baseline" => (2, ""),
        other => (3, other),
    }
}

pub(crate) fn layout_color(layout: &str, i: usize) -> [u8; 3] {
    match layout {
        "per_namespace" => [31, 119, 180],
        "shared" => [214, 39, 40],
        "baseline" => [255, 127, 14],
        _ => PALETTE[(i + 3) % PALETTE.len()],
    }
}

/// Distinct colors for lines that are not layouts (tenant counts).
pub const PALETTE: [[u8; 3]; 8] = [
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
            thousands(g.keys as f64),
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
        // With repeated runs, the median of the runs and their range.
        let by_tenants = |figure: Figure| -> Vec<Series> {
            layouts
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let stats = tenants.iter().map(|&t| stat(find(l, t).copied(), figure));
                    let (values, ranges) = stats.unzip();
                    Series {
                        name: l.to_string(),
                        color: layout_color(l, i),
                        values,
                        ranges,
                    }
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
            bars: false,
        };
        let series = by_tenants(|p| p.summary.mean_filter_loads_per_get);
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
            by_tenants(|p| Some(p.summary.mean_get_ops_per_sec)),
        ));
        out.push(vs_tenants(
            "fig8a-put-ops",
            "Puts",
            "put ops/s per tenant",
            Legend::UpperRight,
            by_tenants(|p| Some(p.summary.mean_put_ops_per_sec)),
        ));

        out.extend(fig9_charts(
            &ps,
            &layouts,
            &tenants,
            &prefix,
            &about,
            cdf_tenants,
        ));
    }
    out
}

/// Fig. 9: where gets were answered, at `cdf_tenants` tenants a line per layout, and per layout
/// a line per tenant count.
fn fig9_charts(
    ps: &[&Point],
    layouts: &[&str],
    tenants: &[usize],
    prefix: &str,
    about: &str,
    cdf_tenants: usize,
) -> Vec<Chart> {
    let find = |layout: &str, t: usize| {
        ps.iter()
            .find(|p| p.name.layout == layout && p.name.tenants == t)
    };
    let mut out = Vec::new();
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
    for l in layouts {
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
                ranges: Vec::new(),
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
        bars: false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::read_grid;
    use crate::data::tests::doc;

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
        assert_eq!(thousands(7.0), "7");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(200_000.0), "200,000");
        assert_eq!(thousands(1_000_000.0), "1,000,000");
    }
}
