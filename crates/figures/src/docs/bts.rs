//! The document of a `cerberus-paper bts` run: its points and their medians over the rounds.

use cerberus_device::{Chunker, Policy};
use serde::{Deserialize, Serialize};

/// The JSON document of a run (`--json`), read back by `plot-bts`; fields in the order the
/// file has always had them.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunDoc {
    /// How the device cut values into chunks for dedup (`--chunking`, `--hash`, `--chunk-bytes`).
    pub chunker: Option<Chunker>,
    /// The device's cores (network threads, `--cores`).
    pub cores: usize,
    /// CPUs of the machine the run was on.
    pub cpus: usize,
    /// Per policy and client thread count, the medians over the rounds.
    pub medians: Vec<Median>,
    /// Puts per point, split among the client threads (`--num`).
    pub num: usize,
    /// Whether core i was pinned to CPU i (`--pin`).
    pub pin: bool,
    /// Every point measured, of every round.
    pub points: Vec<Point>,
    /// Repeats of the whole grid (`--rounds`).
    pub rounds: usize,
    /// Commands between two samples of the cores' load (`--sample-every`).
    pub sample_every: u32,
    /// The BTS load threshold (mean core load, 0-1; `None`: the device's default).
    pub threshold: Option<f64>,
    /// Bytes of each value put (`--value-size`).
    pub value_size: usize,
}

/// One point of the grid: one policy and client thread count in one round, on a fresh device.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    /// The round it was measured in, from 0.
    pub round: usize,
    /// The device's scheduling policy.
    pub policy: Policy,
    /// Client threads putting at once.
    pub threads: usize,
    /// Puts made, all threads together.
    pub puts: u64,
    /// Wall time of the puts, in seconds.
    pub seconds: f64,
    /// `puts` over `seconds`.
    pub puts_per_sec: f64,
    /// Mean put latency, in microseconds.
    pub mean_us: f64,
    /// 99th percentile put latency, in microseconds.
    pub p99_us: f64,
    /// 99.9th percentile put latency, in microseconds.
    pub p999_us: f64,
    /// Mean time a core spent running one command (device side).
    pub service_us: f64,
    /// Values still waiting for dedup when the puts ended.
    pub backlog_at_end: u64,
    /// Seconds the device then took to empty that backlog.
    pub drain_seconds: f64,
    /// Tasks and engine jobs the scheduler sent to a core other than the one that made
    /// them.
    pub migrations: u64,
    /// Per core: client connections when the puts ended.
    pub core_connections: Vec<usize>,
    /// Mean load over the cores (foreground plus background) at the monitor's last sample
    /// before the puts ended.
    pub mean_load: f64,
    /// The same mean of the foreground load alone.
    pub mean_fg_load: f64,
    /// Per core: background tasks run.
    pub core_bg_tasks: Vec<u64>,
    /// Per core: commands run (foreground).
    pub core_fg_commands: Vec<u64>,
    /// Mean time a background task waited for a core, in microseconds.
    pub bg_mean_wait_us: f64,
    /// The device's estimate of the delay background work added per command.
    #[serde(default)]
    pub fg_queueing_us: f64,
}

/// The medians over the rounds of the points of one policy and client thread count: each
/// field but the last two is the median of the [`Point`] field of its name.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Median {
    /// The device's scheduling policy.
    pub policy: Policy,
    /// Client threads putting at once.
    pub threads: usize,
    /// Mean put latency, in microseconds.
    pub mean_us: f64,
    /// 99th percentile put latency, in microseconds.
    pub p99_us: f64,
    /// 99.9th percentile put latency, in microseconds.
    pub p999_us: f64,
    /// Puts per second, all threads together.
    pub puts_per_sec: f64,
    /// Seconds the device took to empty its dedup backlog after the puts.
    pub drain_seconds: f64,
    /// Tasks and engine jobs sent to a core other than the one that made them.
    pub migrations: f64,
    /// Values still waiting for dedup when the puts ended.
    pub backlog_at_end: f64,
    /// Mean time a core ran one command (device side), in microseconds.
    pub service_us: f64,
    /// The rest of the mean latency (`mean_us` less `service_us`): the wait in queues (the
    /// core busy with other commands or a background task), the network and the client.
    pub outside_us: f64,
    /// The device's estimate of the delay background work added per command, in
    /// microseconds.
    pub fg_queueing_us: f64,
    /// For `bts`: the median over the rounds of its mean latency over `off`'s in the same
    /// round (the machine's drift cancels within a round); `None` for the other policies.
    pub over_off: Option<f64>,
    /// The same over `inline`'s.
    pub over_inline: Option<f64>,
}
