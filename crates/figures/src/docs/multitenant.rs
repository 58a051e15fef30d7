//! The summary a multitenant run writes in its document, which the grid's charts and table
//! read back.

use serde::{Deserialize, Serialize};

/// Means over the tenants, the engine-wide NAND read time per get, compaction bytes and
/// memory.
/// Read back by the plots and the grid table: the fields they do not need default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryDoc {
    /// Tenants of the run.
    #[serde(default)]
    pub tenants: usize,
    /// Mean over the tenants of each one's puts per second.
    pub mean_put_ops_per_sec: f64,
    /// Mean over the tenants of each one's gets per second.
    pub mean_get_ops_per_sec: f64,
    /// Mean over the tenants of the filter loads per get; null when the engine keeps no
    /// namespace counters (RocksDB).
    pub mean_filter_loads_per_get: Option<f64>,
    /// Mean over the tenants of the pages read per get (null as above).
    pub mean_page_reads_per_get: Option<f64>,
    /// All tenants together: puts over the put phase's wall time.
    #[serde(default)]
    pub put_ops_per_sec: f64,
    /// All tenants together: gets over the get phase's wall time.
    #[serde(default)]
    pub get_ops_per_sec: f64,
    /// Gets that found no value, all tenants together.
    #[serde(default)]
    pub get_misses: u64,
    /// Modeled NAND read time of the get phase over its gets (`--storage nand`; else null).
    pub nand_read_time_us_per_get: Option<f64>,
    /// Cost model: the mean over the tenants of ALKA, in microseconds (null without search
    /// counters).
    pub mean_alka_us: Option<f64>,
    /// Cost model: the mean over the tenants of the measured mean get latency, in
    /// microseconds.
    pub mean_measured_get_us: Option<f64>,
    /// Cost model: ALKA over measured, both summed over the tenants that have both (the
    /// ratio of the means when all do).
    pub alka_ratio: Option<f64>,
    /// Table bytes all compactions wrote over the run (both phases and the settle step
    /// between them; Cerberus only).
    pub compaction_bytes_written: Option<u64>,
    /// `compaction_bytes_written` over the user key bytes put (put ops x key size): keys
    /// and values are apart, so the trees hold keys and value addresses.
    pub compaction_bytes_written_per_put_key_byte: Option<f64>,
    /// The trees' write amplification term by term: table bytes each kind of work wrote
    /// over the user key bytes put (Cerberus only; older documents lack it).
    #[serde(default)]
    pub write_terms: Option<WriteTerms>,
    /// The process's resident memory at the end of the get phase, in bytes.
    pub rss_bytes: Option<u64>,
    /// The peak of the process's resident memory over the engine's run, in bytes.
    pub peak_rss_bytes: Option<u64>,
}

/// Table bytes written per user key byte put, by the work that wrote them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteTerms {
    /// Memtables into L0.
    pub flush: f64,
    /// L0 compactions: the split into namespace runs (per-namespace layout) or the merge
    /// into L1 (shared tree, baseline).
    pub l0: f64,
    /// A namespace's runs merged into its L1.
    pub run_merge: f64,
    /// A sorted level into the next.
    pub levels: f64,
    /// Idle namespaces' trees merged into one sorted run.
    pub consolidation: f64,
    /// All of them.
    pub total: f64,
}
