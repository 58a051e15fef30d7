//! The markdown tables of a sweep: medians over its repeats.

use super::data::{EngineRun, NandPoint, SeekRun, Sweep};
use crate::table::{median, thousands, Table};
use std::collections::BTreeSet;

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or("-".into(), f)
}

fn us(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// `131072` -> `128 KiB`.
pub fn size_name(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

/// The median of `f` over `runs`.
pub fn med(runs: &[SeekRun], f: impl Fn(&SeekRun) -> f64) -> Option<f64> {
    median(runs.iter().map(f))
}

fn med_opt(runs: &[SeekRun], f: impl Fn(&SeekRun) -> Option<f64>) -> Option<f64> {
    median(runs.iter().filter_map(f))
}

/// Median entries/s of a NAND point, and its ratio to D = 0 at the same value size and scan
/// length.
pub fn speedup(sweep: &Sweep, p: &NandPoint) -> Option<f64> {
    let base = NandPoint {
        prefetch_degree: 0,
        ..*p
    };
    let at = med(sweep.nand.get(p)?, SeekRun::entries_per_sec)?;
    let zero = med(sweep.nand.get(&base)?, SeekRun::entries_per_sec)?;
    (zero > 0.0).then(|| at / zero)
}

/// The NAND sweep: one table per value size, a row per scan length and prefetch degree.
pub fn nand_table(sweep: &Sweep) -> String {
    let mut out = String::new();
    let values: BTreeSet<u64> = sweep.nand.keys().map(|p| p.value_size).collect();
    for v in values {
        let points: Vec<(&NandPoint, &Vec<SeekRun>)> = sweep
            .nand
            .iter()
            .filter(|(p, _)| p.value_size == v)
            .collect();
        let nums: BTreeSet<u64> = points
            .iter()
            .flat_map(|(_, r)| r.iter().map(|r| r.num))
            .collect();
        let nums: Vec<String> = nums.iter().map(|&n| thousands(n as f64)).collect();
        out += &format!(
            "\n#### Values of {} (--num {})\n\n",
            size_name(v),
            nums.join(", ")
        );
        let mut t = Table::aligned(
            [
                "scan length",
                "D",
                "runs",
                "seeks",
                "entries/seek",
                "ops/s",
                "entries/s",
                "MB/s",
                "next p50 us",
                "next p99 us",
                "speedup vs D=0",
            ]
            .map(|h| (h, true)),
        );
        for (p, runs) in points {
            t.row([
                p.scan_length.to_string(),
                p.prefetch_degree.to_string(),
                runs.len().to_string(),
                opt(med(runs, |r| r.seeks as f64), thousands),
                opt(med(runs, SeekRun::entries_per_seek), |x| format!("{x:.0}")),
                opt(med(runs, |r| r.ops_per_sec), |x| format!("{x:.1}")),
                opt(med(runs, SeekRun::entries_per_sec), thousands),
                opt(med(runs, |r| r.mb_per_sec), |x| format!("{x:.1}")),
                opt(med_opt(runs, |r| r.next_p50_us), us),
                opt(med_opt(runs, |r| r.next_p99_us), us),
                opt(speedup(sweep, p), |x| format!("{x:.2}x")),
            ]);
        }
        out += t.render();
    }
    out
}

/// Median ops/s of `phase` of `engine` over the posix runs, with each run's figure.
fn posix_ops(runs: &[Vec<EngineRun>], engine: &str, phase: &str) -> (Option<f64>, Vec<f64>) {
    let each: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.iter().find(|e| e.engine == engine))
        .filter_map(|e| e.ops_per_sec.get(phase).copied())
        .collect();
    (median(each.iter().copied()), each)
}

/// The posix comparison, one row per point and engine: median ops/s of each phase, and the
/// first engine's ratios over each other engine in the same runs.
pub fn posix_table(sweep: &Sweep) -> String {
    if sweep.posix.is_empty() {
        return String::new();
    }
    let mut t = Table::aligned([
        ("keys", true),
        ("value", true),
        ("threads", true),
        ("engine", false),
        ("runs", true),
        ("fillrandom ops/s", true),
        ("seekrandom ops/s", true),
        ("seekrandom MB/s", true),
        ("seekrandom ops/s of each run", false),
        ("fill ratio", true),
        ("seek ratio", true),
    ]);
    for (point, runs) in &sweep.posix {
        let mut engines: Vec<String> = Vec::new();
        for e in runs.iter().flatten() {
            if !engines.contains(&e.engine) {
                engines.push(e.engine.clone());
            }
        }
        let ratio = |first: &str, other: &str, phase: &str| {
            let (a, _) = posix_ops(runs, first, phase);
            let (b, _) = posix_ops(runs, other, phase);
            match (a, b) {
                (Some(a), Some(b)) if b > 0.0 => format!("{first} / {other}: **{:.2}**", a / b),
                _ => "-".into(),
            }
        };
        for (i, e) in engines.iter().enumerate() {
            let (fill, _) = posix_ops(runs, e, "fillrandom");
            let (seek, each) = posix_ops(runs, e, "seekrandom");
            let mb = median(
                runs.iter()
                    .filter_map(|r| r.iter().find(|x| &x.engine == e))
                    .filter_map(|x| x.seek.as_ref().map(|s| s.mb_per_sec)),
            );
            let each: Vec<String> = each.iter().map(|&x| thousands(x)).collect();
            let (fill_ratio, seek_ratio) = match (i, engines.first()) {
                (1.., Some(first)) => {
                    (ratio(first, e, "fillrandom"), ratio(first, e, "seekrandom"))
                }
                _ => (String::new(), String::new()),
            };
            t.row([
                thousands(point.num as f64),
                size_name(point.value_size),
                point.threads.to_string(),
                e.clone(),
                each.len().to_string(),
                opt(fill, thousands),
                opt(seek, thousands),
                opt(mb, |x| format!("{x:.1}")),
                each.join(", "),
                fill_ratio,
                seek_ratio,
            ]);
        }
    }
    format!("\n{}", t.render())
}

/// Index prefetch off against on at each value prefetch degree: next-latency percentiles
/// (medians over the runs) and the p99.9 ratio.
pub fn index_table(sweep: &Sweep) -> String {
    if sweep.index.is_empty() {
        return String::new();
    }
    let mut t = Table::aligned([
        ("D", true),
        ("index prefetch", false),
        ("runs", true),
        ("entries/seek", true),
        ("ops/s", true),
        ("entries/s", true),
        ("next p50 us", true),
        ("next p99 us", true),
        ("next p99.9 us", true),
        ("p99.9 of each run", false),
        ("p99.9 off / on", true),
    ]);
    let p999 = |d: u64, on: bool| {
        sweep
            .index
            .get(&(d, on))
            .and_then(|r| med_opt(r, |r| r.next_p999_us))
    };
    for (&(d, on), runs) in &sweep.index {
        let each: Vec<String> = runs.iter().filter_map(|r| r.next_p999_us).map(us).collect();
        let ratio = match (on, p999(d, false), p999(d, true)) {
            (true, Some(off), Some(on)) if on > 0.0 => format!("**{:.2}**", off / on),
            _ => String::new(),
        };
        t.row([
            d.to_string(),
            (if on { "on" } else { "off" }).to_string(),
            runs.len().to_string(),
            opt(med(runs, SeekRun::entries_per_seek), thousands),
            opt(med(runs, |r| r.ops_per_sec), |x| format!("{x:.2}")),
            opt(med(runs, SeekRun::entries_per_sec), thousands),
            opt(med_opt(runs, |r| r.next_p50_us), us),
            opt(med_opt(runs, |r| r.next_p99_us), us),
            opt(med_opt(runs, |r| r.next_p999_us), us),
            each.join(", "),
            ratio,
        ]);
    }
    format!("\n{}", t.render())
}

/// All tables, with headings.
pub fn markdown(sweep: &Sweep) -> String {
    let mut out = String::new();
    if !sweep.nand.is_empty() {
        out += "### NAND model, no cache: seekrandom by value size, scan length and prefetch degree D\n\n\
                Medians over the runs of each point. entries/s and MB/s: entries (keys and \
                values) returned per second; speedup: entries/s over D = 0's.\n";
        out += &nand_table(sweep);
    }
    if !sweep.posix.is_empty() {
        out += "\n### Files (posix): fillrandom then seekrandom, Cerberus and RocksDB\n\n\
                Medians over the runs.\n";
        out += &posix_table(sweep);
    }
    if !sweep.index.is_empty() {
        out += "\n### NAND model: index prefetch off and on, by value prefetch degree D\n\nMedians over the runs.\n";
        out += &index_table(sweep);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::data::tests::seek_doc;
    use super::super::data::{engine_runs, seek_run, PosixPoint};
    use super::*;

    #[test]
    fn numbers_are_named() {
        assert_eq!(thousands(1234567.8), "1,234,568");
        assert_eq!(thousands(12.0), "12");
        assert_eq!(thousands(-1234.0), "-1,234");
        assert_eq!(size_name(131072), "128 KiB");
        assert_eq!(size_name(128), "128 B");
    }

    #[test]
    fn tables_have_medians_and_ratios() {
        let mut s = Sweep::default();
        for (d, ops) in [(0, 10.0), (0, 30.0), (0, 20.0), (4, 50.0)] {
            let r = seek_run(&seek_doc("cerberus", 4096, 128, Some(d), true, ops))
                .unwrap()
                .unwrap();
            let p = NandPoint {
                value_size: 4096,
                scan_length: 128,
                prefetch_degree: d,
            };
            s.nand.entry(p).or_default().push(r);
        }
        let t = nand_table(&s);
        assert!(t.contains("Values of 4 KiB"), "{t}");
        // D=0: median 20 ops/s, 2,560 entries/s; D=4: 50 ops/s, 2.5x.
        assert!(
            t.contains("| 128 | 0 | 3 | 10 | 128 | 20.0 | 2,560 |"),
            "{t}"
        );
        assert!(t.contains("| 2.50x |"), "{t}");
        for (on, ops) in [(false, 1.0), (true, 2.0)] {
            let r = seek_run(&seek_doc("cerberus", 256, 9, Some(8), on, ops))
                .unwrap()
                .unwrap();
            s.index.entry((8, on)).or_default().push(r);
        }
        let t = index_table(&s);
        assert!(t.contains("| **2.00** |"), "{t}");
        let doc = serde_json::json!([
            seek_doc("cerberus", 1024, 100, Some(0), true, 6.0),
            seek_doc("rocksdb", 1024, 100, None, true, 3.0)
        ]);
        let point = PosixPoint {
            num: 1000,
            value_size: 1024,
            threads: 1,
        };
        s.posix.insert(point, vec![engine_runs(&doc).unwrap()]);
        let t = posix_table(&s);
        assert!(t.contains("| - | cerberus / rocksdb: **2.00** |"), "{t}");
        let all = markdown(&s);
        assert!(all.contains("### NAND model, no cache") && all.contains("### Files (posix)"));
    }
}
