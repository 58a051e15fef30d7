//! The command line of `cerberus-paper queries`.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-paper queries",
    bin_name = "cerberus-paper queries",
    about = "The Cerberus paper's secondary-key queries (Q1-Q7) without an index, with a \
             classic and with a VAS index, and on SQLite"
)]
pub struct QueriesArgs {
    /// `glacier` or `tweets` (generated with the default seed), or a JSON-lines FILE.
    #[arg(long, default_value = "glacier")]
    pub dataset: String,
    /// Records of a generated dataset (default: the paper's count); with --set flights, an
    /// even sample of this many of the file's (the reference answers then do not apply).
    #[arg(long)]
    pub records: Option<u64>,
    /// The field holding each record's key.
    #[arg(long, default_value = "id")]
    pub key_field: String,
    /// Index kinds to run: none, classic, vas (comma-separated).
    #[arg(long, default_value = "none,classic,vas")]
    pub index: String,
    /// posix or nand.
    #[arg(long, default_value = "posix")]
    pub storage: String,
    /// Block cache bytes (0: every filter and index block read from storage, as the paper).
    #[arg(long, default_value_t = 64 << 20)]
    pub cache_bytes: u64,
    /// Runs of each query; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Keep running a query past --repeat, the engines as before, until each has spent this
    /// many ms on it (at most 100 runs each): one run of a sub-millisecond query is mostly
    /// the machine's noise.
    #[arg(long, default_value_t = 0.0)]
    pub min_query_ms: f64,
    /// Also run SQLite with an expression index (needs the `sqlite` feature).
    #[arg(long)]
    pub sqlite: bool,
    /// For a FILE: the attribute to index, and the filter documents to run (repeatable).
    #[arg(long)]
    pub attr: Option<String>,
    #[arg(long = "query")]
    pub queries: Vec<String>,
    /// For a FILE: records each find returns at most.
    #[arg(long)]
    pub limit: Option<u64>,
    /// `local`: run the engine's queries through a device started on a loopback port (the
    /// records and summaries cross the wire; bytes are those received).
    #[arg(long)]
    pub device: Option<String>,
    /// With --device: connections the load puts through at once, each its share of the
    /// records in order (1: one put per round trip, which the round trip dominates).
    #[arg(long, default_value_t = 1)]
    pub load_connections: usize,
    /// Loads of each engine (in turn, engine after engine); the median is reported, the
    /// queries run on the last.
    #[arg(long, default_value_t = 1)]
    pub load_repeat: usize,
    /// Run each query on the engines in turn, repetition by repetition (else each engine's
    /// repetitions back to back, query by query).
    #[arg(long)]
    pub interleave: bool,
    /// Directory for the databases (default: a temporary one).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// `flights`: for a FILE from scripts/dataset-flights, the real-data query set on the
    /// engine (the kind of --index that is listed last of classic, vas) and SQLite, answers
    /// checked (needs the `sqlite` feature).
    #[arg(long)]
    pub set: Option<String>,
    /// With --set: rounds (each loads both sides afresh), and timed runs of each query per
    /// round and side (--repeat is the rounds).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// With --set: query our side right after its load (loaded last of the sides in every
    /// round, its compactions not waited for) instead of once they ended.
    #[arg(long)]
    pub fresh: bool,
    /// With --set flights: the k of the top-K queries, each k its own pair of queries
    /// (the reference answers apply to 50 alone).
    #[arg(long, value_delimiter = ',', default_values_t = [50])]
    pub top_k: Vec<usize>,
    /// With --set flights: time only the queries whose name contains this (the loads and
    /// the mutations run whole; every answer is still checked).
    #[arg(long)]
    pub only: Option<String>,
    /// With --set flights: write the answers (checked on both sides) here as the reference.
    #[arg(long)]
    pub write_answers: Option<PathBuf>,
}
