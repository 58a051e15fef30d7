//! What a seekrandom phase does and what it measured (the phase's types, apart from its
//! runner, so that the bench's configuration and outcomes can hold them).

use crate::histogram::Histogram;

/// What a seekrandom phase does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanConfig {
    /// Seeks of the phase, over all threads.
    pub seeks: u64,
    /// Entries read per seek, the one found by the seek included.
    pub scan_length: usize,
    pub keys_only: bool,
    /// Cerberus's `ReadOptions::prefetch_degree`.
    pub prefetch_degree: usize,
    /// Cerberus's `ReadOptions::index_prefetch`.
    pub index_prefetch: bool,
    /// RocksDB's `ReadOptions::readahead_size` (0: its own).
    pub readahead_bytes: usize,
}

/// What a seekrandom phase measured beyond ops, bytes and their latency.
#[derive(Clone, Debug)]
pub struct ScanOutcome {
    pub config: ScanConfig,
    /// Entries returned over all seeks.
    pub entries: u64,
    /// From before the cursor is made to after the first entry is read (or the end found).
    pub seek_latency: Histogram,
    /// Each entry read after the first.
    pub next_latency: Histogram,
}

impl ScanOutcome {
    pub fn entries_per_seek(&self, seeks: u64) -> f64 {
        if seeks > 0 {
            self.entries as f64 / seeks as f64
        } else {
            0.0
        }
    }
}
