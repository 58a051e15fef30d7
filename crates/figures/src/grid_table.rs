//! `cerberus-bench grid-table --dir DIR`: the markdown table of a multitenant grid (the JSON
//! files `scripts/repro-multitenant` writes), one table per storage, engine, keys per tenant
//! and settle mode, a row per tenant count and the layouts side by side.

use super::data::{read_grid, Point};
use crate::error::Result;
use crate::table::{median, thousands, Table};
use clap::Parser;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::PathBuf;

/// Prints the markdown table of a multitenant grid's JSON files (scripts/repro-multitenant).
#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench grid-table",
    bin_name = "cerberus-bench grid-table"
)]
struct Args {
    /// Directory of the grid's JSON files (the OUT of scripts/repro-multitenant).
    #[arg(long)]
    dir: PathBuf,
}

const INTRO: &str = "# Multi-tenant grid (Cerberus paper, sections 5.2-5.3)\n\n\
    Made by `scripts/repro-multitenant` from the JSON files beside this one. Ops/s are means \
    over the tenants of each tenant's ops/s; ratios are per_namespace over the other layout \
    (above 1: per_namespace is faster). Per-get figures are means over the tenants. Cells with \
    several values follow the layouts' order in the heading. ALKA: the cost model's (the \
    paper's Eq. 1) time per get / the measured mean get latency, in us, per layout. A point \
    run several times (`--repeat N`) shows the median of its runs, then their range \
    (min-max); its ratios are the medians of the ratios within each round.\n";
const STORAGES: [(&str, &str); 3] = [
    ("nand0", "NAND model, no cache"),
    ("nandbf", "NAND model, 1 GiB cache (every filter cached)"),
    ("posix", "real files, no cache"),
];
const LAYOUTS: [(&str, &str); 3] = [
    ("per_namespace", "p-ns"),
    ("shared", "shared"),
    ("baseline", "base"),
];
const PER_NAMESPACE: &str = "per_namespace";

/// `cerberus-bench grid-table ...`; `args` starts with `grid-table`.
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let (points, warnings) = read_grid(&args.dir)?;
    for w in &warnings {
        eprintln!("cerberus-bench grid-table: warning: {w}");
    }
    print!("{}", markdown(&points));
    Ok(())
}

fn short(layout: &str) -> &str {
    LAYOUTS
        .iter()
        .find(|(l, _)| *l == layout)
        .map_or(layout, |(_, s)| s)
}

fn fixed(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |x| format!("{x:.digits$}"))
}

fn grouped(x: Option<f64>) -> String {
    x.map_or("-".into(), thousands)
}

/// Percent of the gets answered below L1 (L2 and deeper).
fn below_l1(p: &Point) -> Option<f64> {
    let total: u64 = p.gets_by_step.iter().map(|(_, n)| n).sum();
    let deep: u64 = p
        .gets_by_step
        .iter()
        .filter(|(s, _)| s.strip_prefix('L').and_then(|n| n.parse::<u32>().ok()) >= Some(2))
        .map(|(_, n)| n)
        .sum();
    (total > 0).then(|| 100.0 * deep as f64 / total as f64)
}

pub(crate) type Figure = fn(&Point) -> Option<f64>;

/// A figure: its value, and the range (min, max) of the runs it is the median of.
pub(crate) type Stat = (Option<f64>, Option<(f64, f64)>);

/// A figure of a point: the median over its runs with their range, or its one value.
pub(crate) fn stat(p: Option<&Point>, f: Figure) -> Stat {
    match p {
        Some(p) if p.runs.len() > 1 => spread(p.runs.iter().filter_map(f)),
        p => (p.and_then(f), None),
    }
}

/// The ratio of a figure of `a` to that of `b`: with runs, the median and range of the
/// ratios within each round (run i of both), as this machine drifts between rounds.
fn ratio(a: Option<&Point>, b: Option<&Point>, f: Figure) -> Stat {
    let one = |a, b| match (f(a), f(b)) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    };
    match (a, b) {
        (Some(a), Some(b)) if a.runs.len() > 1 && b.runs.len() > 1 => {
            spread(a.runs.iter().zip(&b.runs).filter_map(|(a, b)| one(a, b)))
        }
        (Some(a), Some(b)) => (one(a, b), None),
        _ => (None, None),
    }
}

fn spread(xs: impl Iterator<Item = f64>) -> Stat {
    let xs: Vec<f64> = xs.collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (
        median(xs.iter().copied()),
        (xs.len() > 1).then_some((lo, hi)),
    )
}

/// `value` or, with a range, `value (min-max)`.
fn show(s: Stat, fmt: impl Fn(Option<f64>) -> String) -> String {
    match s {
        (x, Some((lo, hi))) => format!("{} ({}-{})", fmt(x), fmt(Some(lo)), fmt(Some(hi))),
        (x, None) => fmt(x),
    }
}

fn measured_get_us(p: &Point) -> Option<f64> {
    p.summary.mean_measured_get_us.or(p.measured_get_us)
}

/// The columns shown when any point of the table has them: heading, figure, digits (`None`:
/// MiB with thousands).
const OPTIONAL: [(&str, Figure, Option<usize>); 6] = [
    (
        "filter loads/get",
        |p| p.summary.mean_filter_loads_per_get,
        Some(2),
    ),
    ("pages/get", |p| p.summary.mean_page_reads_per_get, Some(2)),
    ("% gets below L1", below_l1, Some(1)),
    (
        "compaction bytes / put key byte",
        |p| p.summary.compaction_bytes_written_per_put_key_byte,
        Some(2),
    ),
    (
        "table bytes / put key byte (flush+L0+runs+levels+consolidation)",
        |p| p.summary.write_terms.map(|w| w.total),
        Some(2),
    ),
    (
        "peak RSS MiB",
        |p| Some(p.summary.peak_rss_bytes? as f64 / 1048576.0),
        None,
    ),
];

/// The whole document: the introduction, then a table per group.
pub fn markdown(points: &[Point]) -> String {
    let mut groups: BTreeMap<_, BTreeMap<(String, usize), &Point>> = BTreeMap::new();
    for p in points {
        let n = &p.name;
        let rank = STORAGES.iter().position(|(s, _)| *s == n.storage);
        let key = (
            rank.unwrap_or(STORAGES.len()),
            n.storage.clone(),
            n.engine.clone(),
        );
        let key = (
            key,
            n.keys,
            n.settle != super::data::SETTLED,
            n.settle.clone(),
        );
        groups
            .entry(key)
            .or_default()
            .insert((n.layout.clone(), n.tenants), p);
    }
    let mut out = INTRO.to_string();
    for (((_, storage, engine), keys, _, settle), here) in groups {
        let about = STORAGES
            .iter()
            .find(|(s, _)| *s == storage)
            .map_or(&*storage, |(_, d)| d);
        out += &format!(
            "\n## {storage} ({about}), {engine}, {} keys per tenant, {settle}\n\n",
            thousands(keys as f64)
        );
        if engine == "rocksdb" {
            out += "RocksDB layouts: per_namespace = a column family per tenant, shared = \
                    tenant prefix, baseline = tenant suffix.\n\n";
        }
        if engine == "fjall" {
            out += "fjall layouts: per_namespace = a partition per tenant, shared = tenant \
                    prefix, baseline = tenant suffix.\n\n";
        }
        out += group_table(&here).render();
    }
    out
}

/// One group's table: a row per tenant count.
fn group_table(here: &BTreeMap<(String, usize), &Point>) -> Table {
    let present: BTreeSet<&str> = here.keys().map(|(l, _)| l.as_str()).collect();
    let mut layouts: Vec<&str> = LAYOUTS
        .iter()
        .map(|(l, _)| *l)
        .filter(|l| present.contains(l))
        .collect();
    layouts.extend(
        present
            .iter()
            .filter(|l| !LAYOUTS.iter().any(|(k, _)| k == *l)),
    );
    let tenants: BTreeSet<usize> = here.keys().map(|(_, t)| *t).collect();
    let at = |l: &str, n: usize| here.get(&(l.to_string(), n)).copied();
    let others: Vec<&str> = match layouts.contains(&PER_NAMESPACE) {
        true => layouts
            .iter()
            .copied()
            .filter(|l| *l != PER_NAMESPACE)
            .collect(),
        false => Vec::new(),
    };
    let shorts: Vec<&str> = layouts.iter().map(|l| short(l)).collect();
    let mut head = vec!["tenants".to_string()];
    let mut rows: Vec<Vec<String>> = tenants.iter().map(|n| vec![n.to_string()]).collect();
    let mut column = |title: String, cell: &dyn Fn(usize) -> String| {
        head.push(title);
        for (row, &n) in rows.iter_mut().zip(&tenants) {
            row.push(cell(n));
        }
    };
    let ops: [(&str, Figure); 2] = [
        ("put/s", |p| Some(p.summary.mean_put_ops_per_sec)),
        ("get/s", |p| Some(p.summary.mean_get_ops_per_sec)),
    ];
    for (what, f) in ops {
        for l in &layouts {
            column(format!("{what} {}", short(l)), &|n| {
                show(stat(at(l, n), f), grouped)
            });
        }
        for o in &others {
            column(format!("{what} p-ns/{}", short(o)), &|n| {
                let times = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}x"));
                show(ratio(at(PER_NAMESPACE, n), at(o, n), f), times)
            });
        }
    }
    let any = |f: Figure| {
        here.values()
            .any(|p| f(p).is_some() || p.runs.iter().any(|r| f(r).is_some()))
    };
    for (title, f, digits) in OPTIONAL.into_iter().filter(|(_, f, _)| any(*f)) {
        let fmt = |x| digits.map_or_else(|| grouped(x), |d| fixed(x, d));
        column(format!("{title} {}", shorts.join(" / ")), &|n| {
            layouts
                .iter()
                .map(|l| show(stat(at(l, n), f), fmt))
                .collect::<Vec<_>>()
                .join(" / ")
        });
    }
    if any(|p| p.summary.mean_alka_us) {
        column(
            format!("ALKA / measured get us ({})", shorts.join("; ")),
            &|n| {
                let alka = |l: &str| {
                    let p = at(l, n);
                    let one = |x| fixed(x, 1);
                    format!(
                        "{} / {}",
                        show(stat(p, |p| p.summary.mean_alka_us), one),
                        show(stat(p, measured_get_us), one)
                    )
                };
                layouts
                    .iter()
                    .map(|l| alka(l))
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        );
    }
    let mut t = Table::new(&head);
    for row in rows {
        t.row(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::charts;
    use crate::data::tests::doc;

    #[test]
    fn repeated_points_show_medians_and_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        let stem = |l: &str| format!("posix-cerberus-{l}-t4-k1000-settled");
        // per_namespace run three times, shared three times: round i of both is a pair.
        for (r, (pns, shared)) in [(100.0, 50.0), (300.0, 100.0), (200.0, 200.0)]
            .into_iter()
            .enumerate()
        {
            let r = r + 1;
            write(
                &format!("{}.r{r}.json", stem("per_namespace")),
                doc("per_namespace", 4, pns, pns, Some(1.0)),
            );
            write(
                &format!("{}.r{r}.json", stem("shared")),
                doc("shared", 4, shared, 10.0, Some(2.0)),
            );
        }
        // The median document is left out: the runs are read instead.
        write(
            &format!("{}.json", stem("shared")),
            doc("shared", 4, 1e9, 1e9, None),
        );
        write(
            &format!("{}.json", stem("baseline")),
            doc("baseline", 4, 7.0, 8.0, Some(3.0)),
        );
        let (points, warnings) = read_grid(dir.path()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(points.len(), 3);
        let pns = points
            .iter()
            .find(|p| p.name.layout == "per_namespace")
            .unwrap();
        assert_eq!(pns.runs.len(), 3);
        assert_eq!(pns.summary.mean_put_ops_per_sec, 200.0);

        let md = markdown(&points);
        // put/s: medians (min-max); baseline ran once.
        assert!(
            md.contains("| 4 | 200 (100-300) | 100 (50-200) | 7 |"),
            "{md}"
        );
        // Ratios within each round: 2, 3, 1.
        assert!(md.contains("| 2.00x (1.00x-3.00x) |"), "{md}");
        assert!(
            md.contains("| 1.00 (1.00-1.00) / 2.00 (2.00-2.00) / 3.00 |"),
            "{md}"
        );

        let charts = charts(&points, 4);
        let put = charts
            .iter()
            .find(|c| c.file.ends_with("fig8a-put-ops.png"))
            .unwrap();
        assert_eq!(put.series[0].values, [Some(200.0)]);
        assert_eq!(put.series[0].ranges, [Some((100.0, 300.0))]);
        assert_eq!(put.series[2].ranges, [None]);
    }
}
