//! Counters the engine keeps, and the snapshot of them that `Db::stats` returns.

use crate::storage::{IoPurpose, NandStats};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Shape of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    pub tables: usize,
    pub bytes: u64,
}

/// A snapshot of the engine's counters.
#[derive(Clone, Debug, Default)]
pub struct DbStats {
    /// Per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// Gets answered by the memtables.
    pub gets_memtable: u64,
    /// Gets answered by each level (found or deleted there), L0 first.
    pub gets_by_level: Vec<u64>,
    /// Gets that found nothing.
    pub gets_not_found: u64,
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    /// Filter checks made by gets.
    pub filter_probes: u64,
    /// Filter checks that said "absent".
    pub filter_negatives: u64,
    /// Filter blocks read from storage (cache misses or no cache).
    pub filter_loads: u64,
    /// Index blocks read from storage.
    pub index_loads: u64,
    /// Reads issued to storage, by purpose (`IoPurpose as usize`).
    pub reads: [u64; IoPurpose::COUNT],
    /// Bytes read from storage, by purpose.
    pub read_bytes: [u64; IoPurpose::COUNT],
    pub flushes: u64,
    pub compactions: u64,
    pub compaction_bytes_read: u64,
    pub compaction_bytes_written: u64,
    /// Bytes of all value-log segments.
    pub vlog_bytes: u64,
    pub vlog_segments: usize,
    /// Times a write waited for background work (stall) or was slowed down.
    pub write_stalls: u64,
    pub write_slowdowns: u64,
    /// Counters of the NAND timing model, when the storage has one.
    pub nand: Option<NandStats>,
}

/// Live counters, updated with relaxed atomics on the hot paths.
#[derive(Default)]
pub(crate) struct Counters {
    pub gets: AtomicU64,
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub gets_memtable: AtomicU64,
    pub gets_by_level: [AtomicU64; 16],
    pub gets_not_found: AtomicU64,
    pub filter_probes: AtomicU64,
    pub filter_negatives: AtomicU64,
    pub filter_loads: AtomicU64,
    pub index_loads: AtomicU64,
    pub reads: [AtomicU64; IoPurpose::COUNT],
    pub read_bytes: [AtomicU64; IoPurpose::COUNT],
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub write_stalls: AtomicU64,
    pub write_slowdowns: AtomicU64,
}

impl Counters {
    #[inline]
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    #[inline]
    pub fn read(&self, purpose: IoPurpose, bytes: usize) {
        self.reads[purpose as usize].fetch_add(1, Relaxed);
        self.read_bytes[purpose as usize].fetch_add(bytes as u64, Relaxed);
    }

    pub fn fill(&self, s: &mut DbStats, num_levels: usize) {
        let g = |c: &AtomicU64| c.load(Relaxed);
        s.gets = g(&self.gets);
        s.puts = g(&self.puts);
        s.deletes = g(&self.deletes);
        s.gets_memtable = g(&self.gets_memtable);
        s.gets_by_level = self.gets_by_level[..num_levels].iter().map(g).collect();
        s.gets_not_found = g(&self.gets_not_found);
        s.filter_probes = g(&self.filter_probes);
        s.filter_negatives = g(&self.filter_negatives);
        s.filter_loads = g(&self.filter_loads);
        s.index_loads = g(&self.index_loads);
        for p in IoPurpose::ALL {
            s.reads[p as usize] = g(&self.reads[p as usize]);
            s.read_bytes[p as usize] = g(&self.read_bytes[p as usize]);
        }
        s.flushes = g(&self.flushes);
        s.compactions = g(&self.compactions);
        s.compaction_bytes_read = g(&self.compaction_bytes_read);
        s.compaction_bytes_written = g(&self.compaction_bytes_written);
        s.write_stalls = g(&self.write_stalls);
        s.write_slowdowns = g(&self.write_slowdowns);
    }
}
