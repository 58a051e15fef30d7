//! Command counters and latency histograms per namespace and opcode: recorded on every
//! command into per-CPU stripes of atomics (no lock, no shared cache line), summed into
//! `prometheus-client`'s encoding at scrape time.

use arc_swap::ArcSwap;
use cerberus_proto::{Opcode, DEVICE_NSID};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;
use std::collections::BTreeMap;
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum NsLabel {
    Ns(u32),
    Device,
    Refused,
}

impl NsLabel {
    fn value(self) -> String {
        match self {
            NsLabel::Ns(n) => n.to_string(),
            NsLabel::Device => "device".into(),
            NsLabel::Refused => "-".into(),
        }
    }
}

/// `cerberus_commands_total` and `cerberus_command_latency_seconds`, by namespace and opcode.
#[derive(Default)]
pub(super) struct CommandSeries {
    /// Replaced whole when a series appears or goes (rare): recording looks its series up
    /// without a lock.
    ops: ArcSwap<BTreeMap<(NsLabel, u8), Arc<OpMetrics>>>,
}

impl std::fmt::Debug for CommandSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandSeries")
            .field("series", &self.ops.load().len())
            .finish()
    }
}

impl CommandSeries {
    /// `live` says whether namespace `nsid` still exists; asked only when its series is
    /// to be made. A namespace's series go with it (`forget`): a command recorded after
    /// (the destroy's own answer, a connection that still holds the namespace's proof)
    /// counts under the device instead of making them again, once per destroy.
    pub(super) fn record(
        &self,
        nsid: u32,
        opcode: u8,
        ok: bool,
        latency: Duration,
        live: impl Fn() -> bool,
    ) {
        match nsid == DEVICE_NSID {
            true => self.record_label(NsLabel::Device, opcode, ok, latency, &|| true),
            false => self.record_label(NsLabel::Ns(nsid), opcode, ok, latency, &live),
        }
    }

    /// The opcode's slot: unknown opcodes share one, for the same reason as refused
    /// namespaces.
    fn slot(opcode: u8) -> u8 {
        match Opcode::from_u8(opcode) {
            Some(_) => opcode,
            None => 0,
        }
    }

    pub(super) fn record_refused(&self, opcode: u8) {
        self.record_label(NsLabel::Refused, opcode, false, Duration::ZERO, &|| true);
    }

    /// Records under `ns`, whose series is made only if `may_make` says (else the command
    /// counts under the device).
    fn record_label(
        &self,
        ns: NsLabel,
        opcode: u8,
        ok: bool,
        latency: Duration,
        may_make: &dyn Fn() -> bool,
    ) {
        let key = (ns, Self::slot(opcode));
        let ops = self.ops.load();
        let created;
        let m = match ops.get(&key) {
            Some(m) => m,
            None if !may_make() => {
                return self.record_label(NsLabel::Device, opcode, ok, latency, &|| true);
            }
            None => {
                let mut made = None;
                self.ops.rcu(|ops| {
                    let mut ops = BTreeMap::clone(ops);
                    made = Some(ops.entry(key).or_default().clone());
                    ops
                });
                // Made while its namespace went: the destroy's `forget` may have come first.
                if let (NsLabel::Ns(n), false) = (ns, may_make()) {
                    self.forget(n);
                }
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

    pub(super) fn forget(&self, nsid: u32) {
        self.ops.rcu(|ops| {
            let mut ops = BTreeMap::clone(ops);
            ops.retain(|(ns, _), _| *ns != NsLabel::Ns(nsid));
            ops
        });
    }
}

impl Collector for CommandSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let ops = self.ops.load();
        let labels = |ns: NsLabel, op: u8| {
            let op = Opcode::from_u8(op).map_or("unknown", |o| o.name());
            [("nsid", ns.value()), ("opcode", op.to_string())]
        };
        let mut family = encoder.encode_descriptor(
            "cerberus_commands",
            "Commands completed, by namespace, opcode and outcome.",
            None,
            MetricType::Counter,
        )?;
        for (&(ns, op), m) in ops.iter() {
            let [nsid, opcode] = labels(ns, op);
            for (outcome, n) in [("ok", m.sum(|s| &s.ok)), ("error", m.sum(|s| &s.errors))] {
                let set = [
                    nsid.clone(),
                    opcode.clone(),
                    ("outcome", outcome.to_string()),
                ];
                ConstCounter::new(n).encode(family.encode_family(&set)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "cerberus_command_latency_seconds",
            "Time from a command's arrival to its completion.",
            None,
            MetricType::Histogram,
        )?;
        for (&(ns, op), m) in ops.iter() {
            // Each bucket's own count: the encoder makes them cumulative.
            let mut buckets: Vec<(f64, u64)> = BUCKETS_US
                .iter()
                .enumerate()
                .map(|(i, &b)| (b as f64 / 1e6, m.sum(|s| &s.buckets[i])))
                .collect();
            buckets.push((f64::INFINITY, m.sum(|s| &s.buckets[BUCKETS_US.len()])));
            let count = buckets.iter().map(|(_, n)| n).sum();
            let sum = m.sum(|s| &s.sum_us) as f64 / 1e6;
            family
                .encode_family(&labels(ns, op))?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        Ok(())
    }
}
