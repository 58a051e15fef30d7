//! What the scheduler reports: per core, and for the policy.

use super::{Policy, Scheduler};
use serde::Serialize;
use std::sync::atomic::Ordering::Relaxed;

/// One core's figures (a network thread and its lane): counts and times since the device
/// started, and the state now (connections, queue, load at the last sample).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CoreStats {
    /// The core's index, from 0.
    pub core: usize,
    /// Connections it serves now.
    pub connections: usize,
    /// Share of wall time (0-1) spent running commands at the last sample.
    pub fg_load: f64,
    /// Share of wall time (0-1) spent running commands and background tasks at the last
    /// sample: what the `bts` policy compares with `load_threshold`.
    pub load: f64,
    /// Ran a command in the last sample's window.
    pub active: bool,
    /// Commands run.
    pub fg_commands: u64,
    /// Time running commands (sampled: one command in a few is timed, then scaled).
    pub fg_busy_ns: u64,
    /// Mean time per command: the device's service time.
    pub fg_mean_ns: f64,
    /// Background tasks run.
    pub bg_tasks: u64,
    /// Time running background tasks.
    pub bg_busy_ns: u64,
    /// Mean time a background task waited in the queue before it ran.
    pub bg_mean_wait_ns: f64,
    /// Background tasks queued and not yet run.
    pub bg_queued: usize,
    /// Background time while the core served connections (their commands waited meanwhile).
    pub bg_in_the_way_ns: u64,
    /// Tasks and engine jobs made here and sent to another core.
    pub migrated_out: u64,
    /// Tasks and engine jobs made on another core and run here.
    pub migrated_in: u64,
    /// Memtable flushes run on this core's lane.
    pub flushes: u64,
    /// Compactions run on this core's lane.
    pub compactions: u64,
    /// Value-log collections run on this core's lane.
    pub gcs: u64,
    /// Index backfills run on this core's lane.
    pub backfills: u64,
    /// Time this core's lane spent running engine jobs.
    pub lane_busy_ns: u64,
}

/// The scheduler's settings and counters ([`DeviceHandle::scheduler_stats`]).
///
/// [`DeviceHandle::scheduler_stats`]: crate::DeviceHandle::scheduler_stats
#[derive(Clone, Debug, Serialize)]
pub struct SchedulerStats {
    /// The policy in force.
    pub policy: Policy,
    /// Commands between two load samples (from the settings).
    pub sample_every: u32,
    /// The `bts` policy's load threshold (from the settings).
    pub load_threshold: f64,
    /// Load samples taken since the device started.
    pub samples: u64,
    /// Tasks and engine jobs sent to a core other than the one that made them.
    pub migrations: u64,
    /// The policy's cost to the foreground: background time spent on cores serving
    /// connections, per command run (an estimate of the queueing delay background work adds
    /// to a command; the client's own view: its latency minus the service time).
    pub fg_queueing_ns_per_command: f64,
    /// Each core's counters, in core order.
    pub cores: Vec<CoreStats>,
}

fn per(total: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        total as f64 / n as f64
    }
}

impl Scheduler {
    /// A counter summed over core `core`'s lanes.
    fn lane_sum(
        &self,
        core: usize,
        f: impl Fn(&super::lane_pool::LaneCounters) -> &std::sync::atomic::AtomicU64,
    ) -> u64 {
        let n = self.cores.len();
        self.lanes
            .counters
            .iter()
            .enumerate()
            .filter(|(l, _)| l % n == core)
            .map(|(_, c)| f(c).load(Relaxed))
            .sum()
    }

    pub fn stats(&self) -> SchedulerStats {
        let cores: Vec<CoreStats> = self
            .cores
            .iter()
            .enumerate()
            .map(|(i, core)| {
                let c = &core.c;
                let (fg_n, fg_ns) = (c.fg_commands.load(Relaxed), c.fg_busy_ns.load(Relaxed));
                let bg_n = c.bg_tasks.load(Relaxed);
                CoreStats {
                    core: i,
                    connections: c.connections.load(Relaxed),
                    fg_load: f64::from_bits(c.fg_load.load(Relaxed)),
                    load: f64::from_bits(c.load.load(Relaxed)),
                    active: c.active.load(Relaxed),
                    fg_commands: fg_n,
                    fg_busy_ns: fg_ns,
                    fg_mean_ns: per(fg_ns, fg_n),
                    bg_tasks: bg_n,
                    bg_busy_ns: c.bg_busy_ns.load(Relaxed),
                    bg_mean_wait_ns: per(c.bg_wait_ns.load(Relaxed), bg_n),
                    bg_queued: core.queue.lock().len(),
                    bg_in_the_way_ns: c.bg_in_the_way_ns.load(Relaxed),
                    migrated_out: c.migrated_out.load(Relaxed),
                    migrated_in: c.migrated_in.load(Relaxed),
                    flushes: self.lane_sum(i, |l| &l.flushes),
                    compactions: self.lane_sum(i, |l| &l.compactions),
                    gcs: self.lane_sum(i, |l| &l.gcs),
                    backfills: self.lane_sum(i, |l| &l.backfills),
                    lane_busy_ns: self.lane_sum(i, |l| &l.busy_ns),
                }
            })
            .collect();
        SchedulerStats {
            policy: self.config.policy,
            sample_every: self.config.sample_every,
            load_threshold: self.config.load_threshold,
            samples: self.samples.load(Relaxed),
            migrations: cores.iter().map(|c| c.migrated_out).sum(),
            fg_queueing_ns_per_command: per(
                cores.iter().map(|c| c.bg_in_the_way_ns).sum(),
                cores.iter().map(|c| c.fg_commands).sum(),
            ),
            cores,
        }
    }
}
