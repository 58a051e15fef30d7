//! Command counters and latency histograms per namespace and opcode, and their rendering in
//! the Prometheus text format together with the engine's counters.

use arc_swap::ArcSwap;
use cerberus_engine::storage::IoPurpose;
use cerberus_engine::DbStats;
use cerberus_proto::{Opcode, DEVICE_NSID};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Upper bounds of the latency buckets, in microseconds.
const BUCKETS_US: [u64; 16] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000,
    1_000_000, 5_000_000,
];

/// One series' counters, split into a stripe per CPU: the network threads each record every
/// command, and counters they shared would bounce one cache line between their cores on
/// every command. Rendering sums the stripes.
#[derive(Default)]
struct OpMetrics {
    stripes: [OpStripe; STRIPES],
}

const STRIPES: usize = 8;

#[derive(Default)]
#[repr(align(128))]
struct OpStripe {
    ok: AtomicU64,
    errors: AtomicU64,
    sum_us: AtomicU64,
    /// Cumulative counts are computed at render time; each slot counts its own bucket, the
    /// last one everything above the largest bound.
    buckets: [AtomicU64; BUCKETS_US.len() + 1],
}

impl OpMetrics {
    /// The stripe of the CPU the caller runs on (no system call: the kernel's
    /// restartable-sequence area), else the first.
    fn local(&self) -> &OpStripe {
        // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
        let cpu = unsafe { libc::sched_getcpu() };
        &self.stripes[usize::try_from(cpu).unwrap_or(0) % STRIPES]
    }

    fn sum(&self, f: impl Fn(&OpStripe) -> &AtomicU64) -> u64 {
        self.stripes
            .iter()
            .map(|s| f(s).load(Ordering::Relaxed))
            .sum()
    }
}

/// Label of the namespace dimension: commands that were refused before reaching a namespace
/// (unauthenticated, malformed) are counted under `-`, so a client cannot grow the map by
/// sending random namespace ids.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum NsLabel {
    Ns(u32),
    Device,
    Refused,
}

#[derive(Default)]
pub struct Metrics {
    /// Replaced whole when a series appears or goes (rare): recording looks its series up
    /// without a lock.
    ops: ArcSwap<BTreeMap<(NsLabel, u8), Arc<OpMetrics>>>,
    pub connections_accepted: AtomicU64,
    pub connections_refused: AtomicU64,
    pub connections_open: AtomicU64,
    pub protocol_errors: AtomicU64,
    /// Connections closed for not authenticating in time.
    pub auth_timeouts: AtomicU64,
    /// Connections closed for not finishing a frame in time.
    pub frame_timeouts: AtomicU64,
    /// Connections closed after sitting idle.
    pub idle_timeouts: AtomicU64,
    /// Connections closed for not taking their replies in time.
    pub write_timeouts: AtomicU64,
    /// Unauthenticated connections closed to make room for a newcomer.
    pub evictions: AtomicU64,
}

impl Metrics {
    /// Records one completed command of an authorized namespace (or the device).
    pub fn record(&self, nsid: u32, opcode: u8, ok: bool, latency: Duration) {
        let ns = if nsid == DEVICE_NSID {
            NsLabel::Device
        } else {
            NsLabel::Ns(nsid)
        };
        self.record_label(ns, opcode, ok, latency);
    }

    /// Records a command refused before it reached a namespace.
    pub fn record_refused(&self, opcode: u8) {
        self.record_label(NsLabel::Refused, opcode, false, Duration::ZERO);
    }

    fn record_label(&self, ns: NsLabel, opcode: u8, ok: bool, latency: Duration) {
        // Unknown opcodes share one slot for the same reason as refused namespaces.
        let opcode = if Opcode::from_u8(opcode).is_some() {
            opcode
        } else {
            0
        };
        let key = (ns, opcode);
        let ops = self.ops.load();
        let created;
        let m = match ops.get(&key) {
            Some(m) => m,
            None => {
                let mut made = None;
                self.ops.rcu(|ops| {
                    let mut ops = BTreeMap::clone(ops);
                    made = Some(ops.entry(key).or_default().clone());
                    ops
                });
                created = made.unwrap_or_default();
                &created
            }
        };
        let m = m.local();
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if ok {
            m.ok.fetch_add(1, Ordering::Relaxed);
        } else {
            m.errors.fetch_add(1, Ordering::Relaxed);
        }
        m.sum_us.fetch_add(us, Ordering::Relaxed);
        let i = BUCKETS_US.partition_point(|&b| b < us);
        m.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets a destroyed namespace's series.
    pub fn forget(&self, nsid: u32) {
        self.ops.rcu(|ops| {
            let mut ops = BTreeMap::clone(ops);
            ops.retain(|(ns, _), _| *ns != NsLabel::Ns(nsid));
            ops
        });
    }

    /// The Prometheus text exposition of the device's and the engine's counters.
    pub fn render(&self, db: &DbStats) -> String {
        let mut out = String::new();
        let ops = self.ops.load();
        let label = |ns: NsLabel, op: u8| {
            let ns = match ns {
                NsLabel::Ns(n) => n.to_string(),
                NsLabel::Device => "device".into(),
                NsLabel::Refused => "-".into(),
            };
            let op = Opcode::from_u8(op).map_or("unknown", |o| o.name());
            format!("nsid=\"{ns}\",opcode=\"{op}\"")
        };
        header(
            &mut out,
            "cerberus_commands_total",
            "counter",
            "Commands completed, by namespace, opcode and outcome.",
        );
        for (&(ns, op), m) in ops.iter() {
            let l = label(ns, op);
            let _ = writeln!(
                out,
                "cerberus_commands_total{{{l},outcome=\"ok\"}} {}",
                m.sum(|s| &s.ok)
            );
            let _ = writeln!(
                out,
                "cerberus_commands_total{{{l},outcome=\"error\"}} {}",
                m.sum(|s| &s.errors)
            );
        }
        header(
            &mut out,
            "cerberus_command_latency_seconds",
            "histogram",
            "Time from a command's arrival to its completion.",
        );
        for (&(ns, op), m) in ops.iter() {
            let l = label(ns, op);
            let mut cum = 0;
            for (i, b) in BUCKETS_US.iter().enumerate() {
                cum += m.sum(|s| &s.buckets[i]);
                let _ = writeln!(
                    out,
                    "cerberus_command_latency_seconds_bucket{{{l},le=\"{}\"}} {cum}",
                    *b as f64 / 1e6
                );
            }
            cum += m.sum(|s| &s.buckets[BUCKETS_US.len()]);
            let _ = writeln!(
                out,
                "cerberus_command_latency_seconds_bucket{{{l},le=\"+Inf\"}} {cum}"
            );
            let _ = writeln!(
                out,
                "cerberus_command_latency_seconds_sum{{{l}}} {}",
                m.sum(|s| &s.sum_us) as f64 / 1e6
            );
            let _ = writeln!(out, "cerberus_command_latency_seconds_count{{{l}}} {cum}");
        }
        drop(ops);
        for (name, help, v) in [
            (
                "cerberus_connections_accepted_total",
                "Connections accepted.",
                &self.connections_accepted,
            ),
            (
                "cerberus_connections_refused_total",
                "Connections closed at once: every slot was held by an authenticated client.",
                &self.connections_refused,
            ),
            (
                "cerberus_protocol_errors_total",
                "Frames that could not be decoded.",
                &self.protocol_errors,
            ),
            (
                "cerberus_auth_timeouts_total",
                "Connections closed for not authenticating in time.",
                &self.auth_timeouts,
            ),
            (
                "cerberus_frame_timeouts_total",
                "Connections closed for not finishing a frame in time.",
                &self.frame_timeouts,
            ),
            (
                "cerberus_idle_timeouts_total",
                "Connections closed after sitting idle.",
                &self.idle_timeouts,
            ),
            (
                "cerberus_write_timeouts_total",
                "Connections closed for not taking their replies in time.",
                &self.write_timeouts,
            ),
            (
                "cerberus_evictions_total",
                "Unauthenticated connections closed to make room for a newcomer.",
                &self.evictions,
            ),
        ] {
            header(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {}", v.load(Ordering::Relaxed));
        }
        header(
            &mut out,
            "cerberus_connections_open",
            "gauge",
            "Connections being served.",
        );
        let _ = writeln!(
            out,
            "cerberus_connections_open {}",
            self.connections_open.load(Ordering::Relaxed)
        );
        render_engine(&mut out, db);
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn render_engine(out: &mut String, db: &DbStats) {
    let by_purpose = [
        (
            "cerberus_reads_total",
            "Storage reads, by purpose.",
            &db.reads,
        ),
        (
            "cerberus_read_bytes_total",
            "Bytes read from storage, by purpose.",
            &db.read_bytes,
        ),
        (
            "cerberus_page_reads_total",
            "Pages read (NAND pages on the NAND model, 4 KiB otherwise), by purpose.",
            &db.pages,
        ),
    ];
    for (name, help, values) in by_purpose {
        header(out, name, "counter", help);
        for p in IoPurpose::ALL {
            let _ = writeln!(
                out,
                "{name}{{purpose=\"{}\"}} {}",
                p.name(),
                values[p as usize]
            );
        }
    }
    let counters: [(&str, &str, u64); 14] = [
        ("cerberus_gets_total", "Gets served.", db.gets),
        ("cerberus_puts_total", "Puts applied.", db.puts),
        ("cerberus_deletes_total", "Deletes applied.", db.deletes),
        (
            "cerberus_filter_loads_total",
            "Table filters read from storage.",
            db.filter_loads,
        ),
        (
            "cerberus_index_loads_total",
            "Table indexes read from storage.",
            db.index_loads,
        ),
        ("cerberus_flushes_total", "Memtable flushes.", db.flushes),
        ("cerberus_compactions_total", "Compactions.", db.compactions),
        (
            "cerberus_compaction_read_bytes_total",
            "Bytes compactions read.",
            db.compaction_bytes_read,
        ),
        (
            "cerberus_compaction_written_bytes_total",
            "Bytes compactions wrote.",
            db.compaction_bytes_written,
        ),
        (
            "cerberus_gc_segments_deleted_total",
            "Value-log segments collected.",
            db.gc_segments_deleted,
        ),
        (
            "cerberus_gc_rewritten_bytes_total",
            "Live value-log bytes moved by GC.",
            db.gc_bytes_rewritten,
        ),
        (
            "cerberus_write_stalls_total",
            "Writes that waited for background work.",
            db.write_stalls,
        ),
        (
            "cerberus_write_slowdowns_total",
            "Writes delayed to let background work catch up.",
            db.write_slowdowns,
        ),
        (
            "cerberus_vlog_bytes",
            "Bytes in value-log segments.",
            db.vlog_bytes,
        ),
    ];
    for (name, help, v) in counters {
        let kind = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        header(out, name, kind, help);
        let _ = writeln!(out, "{name} {v}");
    }
    header(
        out,
        "cerberus_level_tables",
        "gauge",
        "Tables per level, all trees.",
    );
    for (i, l) in db.levels.iter().enumerate() {
        let _ = writeln!(out, "cerberus_level_tables{{level=\"L{i}\"}} {}", l.tables);
    }
    // Namespace runs sit between L0 and L1.
    let _ = writeln!(
        out,
        "cerberus_level_tables{{level=\"runs\"}} {}",
        db.runs.tables
    );
    header(
        out,
        "cerberus_level_bytes",
        "gauge",
        "Bytes per level, all trees.",
    );
    for (i, l) in db.levels.iter().enumerate() {
        let _ = writeln!(out, "cerberus_level_bytes{{level=\"L{i}\"}} {}", l.bytes);
    }
    let _ = writeln!(
        out,
        "cerberus_level_bytes{{level=\"runs\"}} {}",
        db.runs.bytes
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_and_labels_are_bounded() {
        let m = Metrics::default();
        m.record(3, Opcode::Store as u8, true, Duration::from_micros(30));
        m.record(3, Opcode::Store as u8, false, Duration::from_millis(2));
        for n in 0..100 {
            m.record_refused(n);
        }
        let text = m.render(&DbStats::default());
        assert!(
            text.contains("cerberus_commands_total{nsid=\"3\",opcode=\"store\",outcome=\"ok\"} 1")
        );
        assert!(text.contains(
            "cerberus_command_latency_seconds_bucket{nsid=\"3\",opcode=\"store\",le=\"0.00005\"} 1"
        ));
        assert!(text.contains(
            "cerberus_command_latency_seconds_bucket{nsid=\"3\",opcode=\"store\",le=\"+Inf\"} 2"
        ));
        // 100 refused opcodes: the known ones plus one "unknown" slot.
        let refused = text
            .lines()
            .filter(|l| l.starts_with("cerberus_commands_total{nsid=\"-\"") && l.contains("error"))
            .count();
        assert!(refused <= Opcode::ALL.len() + 1, "{refused}");
        m.forget(3);
        assert!(!m.render(&DbStats::default()).contains("nsid=\"3\""));
    }
}
