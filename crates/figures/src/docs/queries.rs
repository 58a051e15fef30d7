//! The document of a `cerberus-paper queries` run: each engine's load and query times.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The JSON document of a run (`--json`), read back by `plot-queries`; fields in the
/// order the file has always had them.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct QueriesDoc {
    /// Block cache bytes (`--cache-bytes`; 0: every filter and index block read from
    /// storage).
    pub cache_bytes: u64,
    /// `glacier`, `tweets` or the path of the JSON-lines file loaded (`--dataset`).
    pub dataset: String,
    /// Records loaded.
    pub records: usize,
    /// Runs of each query (`--repeat`); the median is reported.
    pub repeat: usize,
    /// Each engine's load and queries.
    pub runs: Vec<EngineDoc>,
    /// `posix` or `nand` (`--storage`).
    pub storage: String,
}

/// One engine's load and queries.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineDoc {
    /// The engine's name.
    pub engine: String,
    /// Median seconds of its loads.
    pub load_secs: f64,
    /// Seconds of each load (`--load-repeat` of them), in order.
    pub load_secs_each: Vec<f64>,
    /// Its queries, in the order they ran.
    pub queries: Vec<QueryDoc>,
}

/// One query on one engine: the median of its runs.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct QueryDoc {
    /// Bytes of the results the last run returned.
    pub bytes: u64,
    /// Median time of the runs, in microseconds.
    pub median_us: f64,
    /// The query's name.
    pub query: String,
    /// Timed runs the median is of (0 in documents written before it was recorded).
    pub runs: usize,
    /// Records the last run found.
    pub results: usize,
    /// The secondary key it looks for (its value, or the filter when it has none).
    pub sk: String,
    /// The engine's figures of the last run, as JSON.
    pub stats: Value,
}
