//! What a read needs, swapped as one: the memtables and the version they sit on, and the
//! stall conditions their shape sets for writes.

use crate::error::Result;
use crate::iter::SnapshotScan;
use crate::key::{Nsid, SeqNo};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::stats::Counters;
use crate::version::{Namespaces, Version};
use crate::vlog::LogSync;
use std::collections::HashMap;
use std::sync::Arc;

/// A memtable that takes no more writes, with what its flush needs from the value log.
pub(super) struct Frozen {
    pub(super) mem: Arc<Memtable>,
    /// Value-log position just past its last record: replay starts there once it is flushed.
    pub(super) log_end: (u64, u64),
    /// The segment holding its newest records, synced before the flush is recorded (the
    /// table will point at them).
    pub(super) log_sync: LogSync,
}

/// Memtables plus the version they sit on: what a read needs, swapped as one.
pub(super) struct SuperVersion {
    pub(super) mem: Arc<Memtable>,
    /// Frozen memtables waiting for flush, newest first.
    pub(super) imm: Vec<Arc<Frozen>>,
    pub(super) version: Arc<Version>,
    /// Live bytes per namespace (records and index entries) as the tables of `version` hold
    /// them: swapped with the memtables, so a capacity check never counts a flushed
    /// memtable twice (or not at all).
    pub(super) used: Arc<HashMap<Nsid, u64>>,
}

impl SuperVersion {
    /// A scan of namespace (or index) `ns` over these memtables and tables, at seqno `seq`.
    pub(super) fn scan(
        &self,
        ns: Nsid,
        seq: SeqNo,
        counters: &Arc<Counters>,
        config: &crate::table::IterConfig,
    ) -> Result<SnapshotScan> {
        let mems: Vec<Arc<Memtable>> = std::iter::once(&self.mem)
            .chain(self.imm.iter().map(|f| &f.mem))
            .cloned()
            .collect();
        SnapshotScan::new(&mems, self.version.clone(), ns, seq, counters, config)
    }

    // The stall conditions, written once: `write_pressure` reports them, `make_room` acts
    // on them.

    /// L0 or the runs are so deep that writes wait for compaction (when it runs on its own).
    pub(super) fn tree_stops_writes(&self, o: &Options) -> bool {
        let v = &self.version;
        v.levels[0].len() >= o.l0_stop_trigger || v.max_runs >= o.run_stop_trigger
    }

    /// L0 or the runs are deep enough that writes slow down (when compaction runs on its own).
    pub(super) fn tree_slows_writes(&self, o: &Options) -> bool {
        let v = &self.version;
        v.levels[0].len() >= o.l0_slowdown_trigger || v.max_runs >= o.run_slowdown_trigger
    }

    /// The memtable is full (its bytes or its entries): the next write freezes it.
    pub(super) fn memtable_full(&self, o: &Options) -> bool {
        self.mem.approximate_bytes() >= o.memtable_bytes
            || (o.memtable_max_entries > 0 && self.mem.len() >= o.memtable_max_entries)
    }

    /// As many frozen memtables as may wait for flush: no more can be frozen.
    pub(super) fn frozen_at_limit(&self, o: &Options) -> bool {
        self.imm.len() >= o.max_immutable_memtables
    }
}

/// Live bytes (records and index entries) of each live namespace in `registry`: what a
/// super version carries for the write path's capacity checks (read without the manifest's
/// lock).
pub(super) fn used_of(registry: &Namespaces) -> HashMap<Nsid, u64> {
    registry
        .live
        .keys()
        .map(|&id| {
            let (records, index) = registry.usage_of(id);
            (id, records.saturating_add(index))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::db::Db;
    use crate::options::Options;
    use crate::storage::MemStorage;
    use std::sync::Arc;

    /// Flushes after `puts` small puts into a memtable of a large byte budget bounded at
    /// `max_entries` entries.
    fn flushes(max_entries: usize, puts: u32) -> u64 {
        let opts = Options {
            memtable_bytes: 64 << 20,
            memtable_max_entries: max_entries,
            ..Options::default()
        };
        let db = Db::builder(opts)
            .open_storage(Arc::new(MemStorage::new()))
            .unwrap();
        let ns = db.create_namespace("t").unwrap();
        for i in 0..puts {
            ns.put(format!("k{i:05}").as_bytes(), b"v").unwrap();
        }
        db.wait_for_compactions().unwrap();
        db.stats().flushes
    }

    #[test]
    fn a_memtable_of_small_entries_freezes_at_its_entry_bound() {
        // 1,000 entries of a few bytes each, far from 64 MiB: frozen at 300, 600 and 900,
        // then the wait's own flush; unbounded, only that one.
        let n = flushes(300, 1000);
        assert!(n >= 4, "{n} flushes");
        assert_eq!(flushes(0, 1000), 1);
    }
}
