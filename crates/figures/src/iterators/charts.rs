//! The charts of a sweep: per value size, entries/s against the prefetch degree, one line per
//! scan length; per scan length, the speedup over D = 0, one line per value size.

use super::data::{NandPoint, SeekRun, Sweep};
use super::tables::{med, size_name, speedup};
use crate::charts::{Chart, Legend, Series, PALETTE};
use std::collections::BTreeSet;

const ABOUT: &str = "seekrandom, NAND model (4 ch x 8 ways, 16 KiB pages, tR 60 us), no cache";

pub fn charts(sweep: &Sweep) -> Vec<Chart> {
    let values: BTreeSet<u64> = sweep.nand.keys().map(|p| p.value_size).collect();
    let lengths: BTreeSet<u64> = sweep.nand.keys().map(|p| p.scan_length).collect();
    let degrees: Vec<u64> = sweep
        .nand
        .keys()
        .map(|p| p.prefetch_degree)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let categories: Vec<String> = degrees.iter().map(ToString::to_string).collect();
    let mut out = Vec::new();
    for &v in &values {
        let series = lengths
            .iter()
            .enumerate()
            .map(|(i, &l)| Series {
                ranges: Vec::new(),
                name: format!("scan length {l}"),
                color: PALETTE[i % PALETTE.len()],
                values: degrees
                    .iter()
                    .map(|&d| {
                        let p = NandPoint {
                            value_size: v,
                            scan_length: l,
                            prefetch_degree: d,
                        };
                        sweep
                            .nand
                            .get(&p)
                            .and_then(|r| med(r, SeekRun::entries_per_sec))
                    })
                    .collect(),
            })
            .filter(|s| s.values.iter().any(Option::is_some))
            .collect();
        out.push(Chart {
            file: format!("iterators-v{v}-entries.png"),
            title: format!("Values of {}: {ABOUT}", size_name(v)),
            x_desc: "prefetch degree D".into(),
            y_desc: "entries/s (median of the runs)".into(),
            categories: categories.clone(),
            series,
            percent: false,
            legend: Legend::UpperLeft,
            bars: false,
        });
    }
    for &l in &lengths {
        let series = values
            .iter()
            .enumerate()
            .map(|(i, &v)| Series {
                ranges: Vec::new(),
                name: format!("values of {}", size_name(v)),
                color: PALETTE[(i + 4) % PALETTE.len()],
                values: degrees
                    .iter()
                    .map(|&d| {
                        speedup(
                            sweep,
                            &NandPoint {
                                value_size: v,
                                scan_length: l,
                                prefetch_degree: d,
                            },
                        )
                    })
                    .collect(),
            })
            .filter(|s| s.values.iter().any(Option::is_some))
            .collect();
        out.push(Chart {
            file: format!("iterators-l{l}-speedup.png"),
            title: format!("Scan length {l}: entries/s over D = 0's; {ABOUT}"),
            x_desc: "prefetch degree D".into(),
            y_desc: "speedup over D = 0".into(),
            categories: categories.clone(),
            series,
            percent: false,
            legend: Legend::UpperLeft,
            bars: false,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::data::seek_run;
    use super::super::data::tests::seek_doc;
    use super::*;

    #[test]
    fn a_chart_per_value_size_and_per_scan_length() {
        let mut s = Sweep::default();
        for v in [128, 4096] {
            for l in [128, 2048] {
                for (d, ops) in [(0, 10.0), (2, 20.0), (8, 40.0)] {
                    let r = seek_run(&seek_doc("cerberus", v, l, Some(d), true, ops))
                        .unwrap()
                        .unwrap();
                    let p = NandPoint {
                        value_size: v,
                        scan_length: l,
                        prefetch_degree: d,
                    };
                    s.nand.entry(p).or_default().push(r);
                }
            }
        }
        let c = charts(&s);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].file, "iterators-v128-entries.png");
        assert_eq!(c[0].categories, ["0", "2", "8"]);
        assert_eq!(c[0].series.len(), 2);
        assert_eq!(c[0].series[0].values[2], Some(40.0 * 128.0));
        assert_eq!(c[3].file, "iterators-l2048-speedup.png");
        assert_eq!(c[3].series[1].values, [Some(1.0), Some(2.0), Some(4.0)]);
    }
}
