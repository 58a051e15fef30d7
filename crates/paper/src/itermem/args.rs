//! The command line of `cerberus-paper itermem`.

use clap::Parser;
use std::path::PathBuf;

/// Measures what open iterators hold over a tree of many tables.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "cerberus-paper itermem",
    bin_name = "cerberus-paper itermem",
    version,
    about = "Measures what open iterators hold over a Cerberus tree of many tables"
)]
pub struct ItermemArgs {
    /// Tables to build the tree to (about: the keys are computed from a calibration), or
    /// several comma-separated counts, each on its own database (`100,1000,10000`).
    #[arg(long, default_value = "10000")]
    pub tables: String,

    /// Iterators held open at once, each seeked to a random key and advanced once.
    #[arg(long, default_value_t = 1000)]
    pub iterators: usize,

    /// Options::target_table_bytes: the size of the tables compaction writes.
    #[arg(long, default_value_t = 4096)]
    pub table_bytes: u64,

    /// Bytes of each key (zero-padded decimal).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,

    /// Bytes of each value (at or above the engine's inline threshold, 64, values live only
    /// in the value log and the tables hold their addresses).
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,

    /// ReadOptions::prefetch_degree of the iterators [default: the engine's default].
    #[arg(long)]
    pub prefetch_degree: Option<usize>,

    /// Options::cache_bytes (index and filter blocks) [default: the engine's default].
    #[arg(long)]
    pub cache_bytes: Option<u64>,

    /// Database directory (one subdirectory per table count, reused if it has the keys);
    /// default: a temporary directory deleted at the end.
    #[arg(long)]
    pub db: Option<PathBuf>,

    /// Writes the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,

    /// Seed of the keys the iterators seek to.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}
