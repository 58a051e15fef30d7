//! The document of a `cerberus-bench bts` run: its points and their medians over the rounds.

use cerberus_device::{Chunker, Policy};
use serde::{Deserialize, Serialize};

/// The JSON document of a run (`--json`), read back by `plot-bts`; fields in the order the
/// file has always had them.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunDoc {
    pub chunker: Option<Chunker>,
    pub cores: usize,
    pub cpus: usize,
    pub medians: Vec<Median>,
    pub num: usize,
    pub pin: bool,
    pub points: Vec<Point>,
    pub rounds: usize,
    pub sample_every: u32,
    pub threshold: Option<f64>,
    pub value_size: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    pub round: usize,
    pub policy: Policy,
    pub threads: usize,
    pub puts: u64,
    pub seconds: f64,
    pub puts_per_sec: f64,
    pub mean_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Mean time a core spent running one command (device side).
    pub service_us: f64,
    pub backlog_at_end: u64,
    pub drain_seconds: f64,
    pub migrations: u64,
    /// Per core: connections at the end of the puts, background tasks run, foreground load.
    pub core_connections: Vec<usize>,
    /// Mean load over the cores (foreground plus background, and foreground alone) at the
    /// monitor's last sample before the puts ended.
    pub mean_load: f64,
    pub mean_fg_load: f64,
    pub core_bg_tasks: Vec<u64>,
    pub core_fg_commands: Vec<u64>,
    pub bg_mean_wait_us: f64,
    /// The device's estimate of the delay background work added per command.
    #[serde(default)]
    pub fg_queueing_us: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Median {
    pub policy: Policy,
    pub threads: usize,
    pub mean_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub puts_per_sec: f64,
    pub drain_seconds: f64,
    pub migrations: f64,
    pub backlog_at_end: f64,
    /// Mean time a core ran one command, and the rest of the mean latency: the wait in
    /// queues (the core busy with other commands or a background task), the network and the
    /// client.
    pub service_us: f64,
    pub outside_us: f64,
    pub fg_queueing_us: f64,
    /// For `bts`: the median over the rounds of its mean latency over `off`'s and over
    /// `inline`'s in the same round (the machine's drift cancels within a round).
    pub over_off: Option<f64>,
    pub over_inline: Option<f64>,
}
