//! The measures every report shows, apart from which engine or phase they come from:
//! latencies (lines and JSON), Cerberus's counters over a phase, values by I/O purpose.

use crate::histogram::Histogram;
use cerberus_engine::storage::{IoPurpose, NandStats};
use cerberus_engine::DbStats;
use serde::Serialize;

pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// `latency us: mean .. p50 .. p99 .. p99.9 .. max ..` (microseconds), under a phase line.
pub(crate) fn latency_line(label: &str, h: &Histogram) -> String {
    format!(
        "{:<12}   {label}: mean {:.2} p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.2}",
        "",
        h.mean() / 1e3,
        h.percentile(50.0) / 1e3,
        h.percentile(99.0) / 1e3,
        h.percentile(99.9) / 1e3,
        h.max() as f64 / 1e3,
    )
}

/// An array indexed by `IoPurpose`, serialized as an object keyed by purpose name in
/// `IoPurpose::ALL` order.
pub struct ByPurpose<T>(pub [T; IoPurpose::COUNT]);

impl<T: Serialize> Serialize for ByPurpose<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(IoPurpose::COUNT))?;
        for p in IoPurpose::ALL {
            m.serialize_entry(p.name(), &self.0[p as usize])?;
        }
        m.end()
    }
}

pub(crate) fn per(a: &[u64; IoPurpose::COUNT], d: f64) -> [f64; IoPurpose::COUNT] {
    let mut out = [0.0; IoPurpose::COUNT];
    for (o, &x) in out.iter_mut().zip(a) {
        *o = x as f64 / d;
    }
    out
}

fn sub_arr<const N: usize>(a: &[u64; N], b: &[u64; N]) -> [u64; N] {
    let mut out = [0; N];
    for i in 0..N {
        out[i] = a[i].saturating_sub(b[i]);
    }
    out
}

pub(crate) fn purposes_line(values: &[f64; IoPurpose::COUNT], digits: usize) -> String {
    IoPurpose::ALL
        .iter()
        .map(|&p| format!("{} {:.*}", p.name(), digits, values[p as usize]))
        .collect::<Vec<_>>()
        .join("  ")
}

#[derive(Serialize)]
pub(crate) struct LatencyDoc {
    samples: u64,
    mean: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

/// The latency figures of the JSON, in microseconds.
pub(crate) fn latency_doc(h: &Histogram) -> LatencyDoc {
    LatencyDoc {
        samples: h.count(),
        mean: h.mean() / 1e3,
        p50: h.percentile(50.0) / 1e3,
        p99: h.percentile(99.0) / 1e3,
        p999: h.percentile(99.9) / 1e3,
        max: h.max() as f64 / 1e3,
    }
}

/// The counters of `after` minus those of `before`; shapes (levels, bytes of the value log)
/// are `after`'s.
pub fn stats_delta(before: &DbStats, after: &DbStats) -> DbStats {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let mut out = after.clone();
    out.gets = d(after.gets, before.gets);
    out.puts = d(after.puts, before.puts);
    out.deletes = d(after.deletes, before.deletes);
    out.gets_memtable = d(after.gets_memtable, before.gets_memtable);
    out.gets_by_level = after
        .gets_by_level
        .iter()
        .enumerate()
        .map(|(i, &a)| d(a, before.gets_by_level.get(i).copied().unwrap_or(0)))
        .collect();
    out.gets_not_found = d(after.gets_not_found, before.gets_not_found);
    out.filter_probes = d(after.filter_probes, before.filter_probes);
    out.filter_negatives = d(after.filter_negatives, before.filter_negatives);
    out.filter_loads = d(after.filter_loads, before.filter_loads);
    out.index_loads = d(after.index_loads, before.index_loads);
    out.reads = sub_arr(&after.reads, &before.reads);
    out.read_bytes = sub_arr(&after.read_bytes, &before.read_bytes);
    out.flushes = d(after.flushes, before.flushes);
    out.compactions = d(after.compactions, before.compactions);
    out.compaction_bytes_read = d(after.compaction_bytes_read, before.compaction_bytes_read);
    out.compaction_bytes_written = d(
        after.compaction_bytes_written,
        before.compaction_bytes_written,
    );
    out.flush_bytes_written = d(after.flush_bytes_written, before.flush_bytes_written);
    out.l0_bytes_written = d(after.l0_bytes_written, before.l0_bytes_written);
    out.run_merge_bytes_written = d(
        after.run_merge_bytes_written,
        before.run_merge_bytes_written,
    );
    out.level_bytes_written = d(after.level_bytes_written, before.level_bytes_written);
    out.consolidations = d(after.consolidations, before.consolidations);
    out.consolidation_bytes_written = d(
        after.consolidation_bytes_written,
        before.consolidation_bytes_written,
    );
    out.write_stalls = d(after.write_stalls, before.write_stalls);
    out.write_slowdowns = d(after.write_slowdowns, before.write_slowdowns);
    out.nand = match (&before.nand, &after.nand) {
        (Some(b), Some(a)) => Some(NandStats {
            page_reads: sub_arr(&a.page_reads, &b.page_reads),
            page_programs: sub_arr(&a.page_programs, &b.page_programs),
            read_requests: sub_arr(&a.read_requests, &b.read_requests),
            read_time_ns: d(a.read_time_ns, b.read_time_ns),
            sync_wait_ns: d(a.sync_wait_ns, b.sync_wait_ns),
        }),
        (None, a) => a.clone(),
        (Some(_), None) => None,
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_subtracts_counters_and_keeps_shapes() {
        let before = DbStats {
            gets: 10,
            gets_by_level: vec![1, 2],
            reads: [1, 2, 3, 4, 5, 6],
            nand: Some(NandStats {
                read_time_ns: 100,
                ..Default::default()
            }),
            ..Default::default()
        };
        let after = DbStats {
            gets: 30,
            gets_by_level: vec![5, 2, 7],
            reads: [2, 2, 5, 4, 5, 9],
            vlog_bytes: 1234,
            nand: Some(NandStats {
                read_time_ns: 350,
                page_reads: [0, 0, 4, 0, 0, 0],
                ..Default::default()
            }),
            ..Default::default()
        };
        let d = stats_delta(&before, &after);
        assert_eq!(d.gets, 20);
        assert_eq!(d.gets_by_level, vec![4, 0, 7]);
        assert_eq!(d.reads, [1, 0, 2, 0, 0, 3]);
        assert_eq!(d.vlog_bytes, 1234);
        let n = d.nand.as_ref().unwrap();
        assert_eq!(n.read_time_ns, 250);
        assert_eq!(n.page_reads[IoPurpose::Data as usize], 4);
    }
}
