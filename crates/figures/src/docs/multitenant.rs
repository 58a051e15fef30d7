//! The summary a multitenant run writes in its document, which the grid's charts and table
//! read back.

use serde::{Deserialize, Serialize};

/// Means over the tenants, the engine-wide NAND read time per get, compaction bytes and
/// memory.
/// Read back by the plots and the grid table: the fields they do not need default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryDoc {
    #[serde(default)]
    pub tenants: usize,
    pub mean_put_ops_per_sec: f64,
    pub mean_get_ops_per_sec: f64,
    /// Null when the engine keeps no namespace counters (RocksDB).
    pub mean_filter_loads_per_get: Option<f64>,
    pub mean_page_reads_per_get: Option<f64>,
    /// All tenants together: ops over the phase's wall time.
    #[serde(default)]
    pub put_ops_per_sec: f64,
    #[serde(default)]
    pub get_ops_per_sec: f64,
    #[serde(default)]
    pub get_misses: u64,
    /// Modeled NAND read time of the get phase over its gets (`--storage nand`; else null).
    pub nand_read_time_us_per_get: Option<f64>,
    /// Cost model: the mean over tenants of ALKA (null without search counters) and of the
    /// measured mean get latency, and ALKA over measured (summed over the tenants that have
    /// both: the ratio of the means when all do).
    pub mean_alka_us: Option<f64>,
    pub mean_measured_get_us: Option<f64>,
    pub alka_ratio: Option<f64>,
    /// Table bytes all compactions wrote over the run (both phases and the settle step
    /// between them; Cerberus only). The engine does not count the bytes flushes write, so
    /// there is no write amplification proper: instead these bytes over the user key bytes
    /// put (put ops x key size).
    pub compaction_bytes_written: Option<u64>,
    pub compaction_bytes_written_per_put_key_byte: Option<f64>,
    /// The process's resident memory at the end of the get phase, and its peak over the
    /// engine's run.
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}
