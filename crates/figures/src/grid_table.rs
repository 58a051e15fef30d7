//! `cerberus-bench grid-table --dir DIR`: the markdown table of a multitenant grid (the JSON
//! files `scripts/repro-multitenant` writes), one table per storage, engine, keys per tenant
//! and settle mode, a row per tenant count and the layouts side by side.

use super::data::{read_grid, Point};
use crate::error::Result;
use crate::table::{thousands, Table};
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
    paper's Eq. 1) time per get / the measured mean get latency, in us, per layout.\n";
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

type Figure = fn(&Point) -> Option<f64>;

/// The columns shown when any point of the table has them: heading, figure, digits (`None`:
/// MiB with thousands).
const OPTIONAL: [(&str, Figure, Option<usize>); 5] = [
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
                grouped(at(l, n).and_then(f))
            });
        }
        for o in &others {
            column(format!("{what} p-ns/{}", short(o)), &|n| match (
                at(PER_NAMESPACE, n).and_then(f),
                at(o, n).and_then(f),
            ) {
                (Some(a), Some(b)) if b != 0.0 => format!("{:.2}x", a / b),
                _ => "-".into(),
            });
        }
    }
    let any = |f: Figure| here.values().any(|p| f(p).is_some());
    for (title, f, digits) in OPTIONAL.into_iter().filter(|(_, f, _)| any(*f)) {
        let fmt = |x| digits.map_or_else(|| grouped(x), |d| fixed(x, d));
        column(format!("{title} {}", shorts.join(" / ")), &|n| {
            layouts
                .iter()
                .map(|l| fmt(at(l, n).and_then(f)))
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
                    let measured =
                        p.and_then(|p| p.summary.mean_measured_get_us.or(p.measured_get_us));
                    format!(
                        "{} / {}",
                        fixed(p.and_then(|p| p.summary.mean_alka_us), 1),
                        fixed(measured, 1)
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
