//! The document of a `cerberus-bench noisy` run: per storage and layout, the victim tenant's
//! gets in each phase (alone, beside the writing neighbours, after settling).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The JSON document of a run (`--json`), read back by `plot-noisy`; the same leading fields
/// as a multitenant document (`engine`, `workload`, `config`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoisyDoc {
    /// `cerberus` (embedded) or `device` (through a device started in the process).
    pub engine: String,
    /// Always `noisy`.
    pub workload: String,
    /// What every run of the document shared.
    pub config: NoisyConfig,
    /// A run per storage and layout, each on a fresh database.
    pub runs: Vec<NoisyRun>,
}

/// The settings of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoisyConfig {
    /// Neighbour tenants, one writing thread each.
    pub neighbours: usize,
    /// Keys the victim loads before the phases (its data).
    pub victim_keys: u64,
    /// Each neighbour puts this many times the victim's keys in the noisy phase.
    pub write_factor: u64,
    /// Gets the victim makes in the alone and settled phases (in the noisy phase it gets
    /// until the neighbours are done).
    pub victim_gets: u64,
    /// Bytes of each key.
    pub key_size: usize,
    /// Bytes of each value.
    pub value_size: usize,
    /// `--profile` (null: the engine's own sizes).
    pub profile: Option<String>,
    /// Cache bytes of the engine.
    pub cache_bytes: u64,
    /// Seed of the key and value generators.
    pub seed: u64,
    /// Puts each neighbour sends together (pipelined on the device), 1 at a time before.
    #[serde(default = "one")]
    pub neighbour_batch: u64,
    /// The device: operations per second reserved for the victim (0: none).
    #[serde(default)]
    pub victim_reservation_ops: u64,
    /// The device: its network threads (null: the embedded engine).
    #[serde(default)]
    pub network_threads: Option<usize>,
    /// The device: its network threads' nice value (0: the process's).
    #[serde(default)]
    pub network_nice: i32,
    /// The device: its lanes' (background work's) nice value (0: the process's).
    #[serde(default)]
    pub background_nice: i32,
    /// The victim's client thread's nice value (0: the process's).
    #[serde(default)]
    pub victim_nice: i32,
    /// The device: frames a connection handles before the others of its network thread get
    /// a turn (0: until its socket is empty; null: not recorded).
    #[serde(default)]
    pub frames_per_turn: Option<usize>,
}

fn one() -> u64 {
    1
}

impl NoisyRun {
    /// Its name in the charts and the table: the layout, then the device's shares and the
    /// neighbours' priority when the run has them.
    pub fn label(&self) -> String {
        let mut label = self.layout.clone();
        if let Some(on) = self.shares {
            label += if on { ", shares on" } else { ", shares off" };
        }
        if self.neighbours_niced {
            label += ", niced";
        }
        label
    }

    /// Whether it is one of several runs of its layout (shares or priority set).
    pub fn is_variant(&self) -> bool {
        self.shares.is_some() || self.neighbours_niced
    }
}

/// One storage and layout (and on the device, shares on or off, neighbours niced or not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoisyRun {
    /// `nand` or `posix`.
    pub storage: String,
    /// `per_namespace`, `shared` or `baseline`.
    pub layout: String,
    /// Baseline layout: the victim shares its namespace, and so its counters, with the
    /// neighbours (their puts; the gets are the victim's alone).
    pub counters_shared_by_tenants: bool,
    /// The device: whether its I/O shares were on (null: the embedded engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shares: Option<bool>,
    /// Whether the neighbours' client threads ran at nice 19 (below the device's and the
    /// victim's threads on the same CPUs, as remote clients would not compete for them).
    #[serde(default)]
    pub neighbours_niced: bool,
    /// `alone`, `noisy`, `settled`, in that order.
    pub phases: Vec<NoisyPhase>,
}

/// One phase of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoisyPhase {
    /// `alone`, `noisy` or `settled`.
    pub name: String,
    /// Wall time of the victim's gets, seconds.
    pub seconds: f64,
    /// Gets the victim made.
    pub victim_gets: u64,
    /// `victim_gets` over `seconds`.
    pub victim_gets_per_sec: f64,
    /// Latency of the victim's gets, microseconds.
    pub victim_latency_us: LatencyUs,
    /// Gets that did not find a key the victim had written (should be 0).
    pub victim_misses: u64,
    /// Filter loads per victim get, from its namespace counters (null without them: the
    /// device).
    pub filter_loads_per_get: Option<f64>,
    /// Pages read per victim get, from its namespace counters (null without them).
    pub page_reads_per_get: Option<f64>,
    /// Puts of all neighbours in the phase (0 outside the noisy phase).
    pub neighbour_puts: u64,
    /// All neighbours' puts over their wall time (0 outside the noisy phase).
    pub neighbour_puts_per_sec: f64,
    /// The device: `shares_served` of the victim's namespace stats at the end of the phase
    /// (cumulative since the namespace was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim_shares_served: Option<serde_json::Value>,
    /// The process's threads in the phase, grouped by name without the trailing `-N`
    /// (Linux schedstat): where the cores went and who waited for one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub threads: BTreeMap<String, ThreadTimes>,
}

/// A group of threads' scheduling in a phase, from `/proc/self/task/*/schedstat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadTimes {
    /// Threads in the group.
    pub threads: u64,
    /// Time on a core, milliseconds.
    pub cpu_ms: f64,
    /// Time runnable but waiting for a core, milliseconds.
    pub wait_ms: f64,
    /// Times the group was put on a core.
    pub slices: u64,
}

/// Latency figures, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyUs {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}
