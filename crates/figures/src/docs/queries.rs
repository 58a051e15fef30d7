//! The document of a `cerberus-bench queries` run: each engine's load and query times.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The JSON document of a run (`--json`), read back by `plot-queries`; fields in the
/// order the file has always had them.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct QueriesDoc {
    pub cache_bytes: u64,
    pub dataset: String,
    pub records: usize,
    pub repeat: usize,
    pub runs: Vec<EngineDoc>,
    pub storage: String,
}

/// One engine's load and queries.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineDoc {
    pub engine: String,
    pub load_secs: f64,
    pub load_secs_each: Vec<f64>,
    pub queries: Vec<QueryDoc>,
}

/// One query on one engine: the median of its runs.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct QueryDoc {
    pub bytes: u64,
    pub median_us: f64,
    pub query: String,
    pub results: usize,
    pub sk: String,
    pub stats: Value,
}
