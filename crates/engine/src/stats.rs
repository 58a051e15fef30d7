//! Counters the engine keeps, and the snapshot of them that `Db::stats` returns.

use crate::storage::{IoPurpose, NandStats};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Shape of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LevelStats {
    pub tables: usize,
    pub bytes: u64,
}

/// One step of a get's search, in the order a get takes them (`memtable`, `L0`, `runs`,
/// `L1`, ...), with the terms of the Cerberus paper's cost model (Eq. 1): gets answered at
/// this step and the time they spent in it (the value read included: HT), and gets that
/// searched it and went on, with the time they spent there (MP).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StepCost {
    pub step: String,
    pub hits: u64,
    pub hit_nanos: u64,
    pub misses: u64,
    pub miss_nanos: u64,
}

/// Names of the search steps for a tree of `num_levels` levels.
pub fn step_names(num_levels: usize) -> impl Iterator<Item = String> {
    ["memtable".to_string(), "L0".into(), "runs".into()]
        .into_iter()
        .chain((1..num_levels).map(|l| format!("L{l}")))
}

/// Step index of level `l` (1 and deeper) in [`StepCost`] order.
pub const fn level_step(l: usize) -> usize {
    if l == 0 {
        STEP_L0
    } else {
        l + 2
    }
}
/// The level of a step from [`level_step`] (`STEP_L0` and deeper).
pub const fn step_level(step: usize) -> usize {
    if step == STEP_L0 {
        0
    } else {
        step - 2
    }
}
pub const STEP_MEMTABLE: usize = 0;
pub const STEP_L0: usize = 1;
pub const STEP_RUNS: usize = 2;
const MAX_STEPS: usize = 19;

/// A snapshot of the engine's counters. Serialized with the field names; counters by
/// purpose become maps keyed by purpose name (`"filter"`, `"index"`, ...).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DbStats {
    /// Per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// Namespace runs: what L0 compactions split out of L0, per namespace, waiting to be
    /// merged into that namespace's L1.
    pub runs: LevelStats,
    /// Gets answered by the memtables.
    pub gets_memtable: u64,
    /// Gets answered by each level (found or deleted there), L0 first.
    pub gets_by_level: Vec<u64>,
    /// Gets answered by namespace runs.
    pub gets_runs: u64,
    /// The get search step by step (cost model terms).
    pub search: Vec<StepCost>,
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
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub reads: [u64; IoPurpose::COUNT],
    /// Bytes read from storage, by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub read_bytes: [u64; IoPurpose::COUNT],
    /// Pages those reads touched (the NAND page size, or 4 KiB on other storage), by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub pages: [u64; IoPurpose::COUNT],
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
    /// Value-log segments deleted by GC, and the live bytes it wrote again.
    pub gc_segments_deleted: u64,
    pub gc_bytes_rewritten: u64,
    /// Counters of the NAND timing model, when the storage has one.
    pub nand: Option<NandStats>,
    /// Snapshots open now (iterators hold one each).
    pub snapshots: usize,
}

/// A namespace and its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamespaceInfo {
    pub nsid: u32,
    pub name: String,
}

/// Counters of one namespace (serialized like [`DbStats`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct NamespaceStats {
    pub nsid: u32,
    /// Tables and bytes per level of this namespace's tree, L0 first. L0 is shared: its
    /// figures count the L0 tables holding this namespace. Under `Layout::Shared` the deeper
    /// levels are the shared tree's.
    pub levels: Vec<LevelStats>,
    /// This namespace's runs (split out of L0, not yet merged into its L1).
    pub runs: LevelStats,
    /// Point lookups: gets and `contains` checks.
    pub gets: u64,
    pub gets_memtable: u64,
    pub gets_by_level: Vec<u64>,
    pub gets_runs: u64,
    /// The get search step by step (cost model terms).
    pub search: Vec<StepCost>,
    /// Table bytes compactions wrote into this namespace's runs and tree (its share of the
    /// write amplification; `Layout::Shared` counts the shared tree under namespace 0).
    pub compaction_bytes_written: u64,
    pub gets_not_found: u64,
    pub puts: u64,
    pub deletes: u64,
    pub filter_probes: u64,
    pub filter_loads: u64,
    pub index_loads: u64,
    /// Storage reads by purpose (`IoPurpose as usize`) made by this namespace's gets,
    /// `contains` checks and key listings.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub reads: [u64; IoPurpose::COUNT],
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub read_bytes: [u64; IoPurpose::COUNT],
    /// Pages those reads touched (the NAND page size, or 4 KiB on other storage).
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub pages: [u64; IoPurpose::COUNT],
    /// Iterators of this namespace (key listings and scans), with their own storage reads
    /// (the figures above are the point lookups' alone, so per-get averages stay per get).
    pub listings: ListingStats,
    /// Entries this namespace holds in memtables and tables: every live key once the
    /// tree is compacted, more while overwritten versions and tombstones wait for
    /// compaction (as RocksDB's `estimate-num-keys`).
    pub keys_estimate: u64,
}

/// Iterators of one namespace (key listings, scans) and the storage reads they made.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ListingStats {
    /// Iterators opened (a device List page opens one).
    pub calls: u64,
    /// Entries they yielded.
    pub keys: u64,
    pub index_loads: u64,
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub reads: [u64; IoPurpose::COUNT],
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub read_bytes: [u64; IoPurpose::COUNT],
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub pages: [u64; IoPurpose::COUNT],
}

/// Live counters, updated with relaxed atomics on the hot paths. The engine keeps one set per
/// namespace (its gets and writes) and one for background work.
pub(crate) struct Counters {
    page_size: u64,
    pub pages: [AtomicU64; IoPurpose::COUNT],
    pub gets: AtomicU64,
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub gets_memtable: AtomicU64,
    pub gets_by_level: [AtomicU64; 16],
    pub gets_runs: AtomicU64,
    /// Table bytes compactions wrote into this namespace's runs and tree.
    pub tree_bytes_written: AtomicU64,
    pub step_hits: [AtomicU64; MAX_STEPS],
    pub step_hit_nanos: [AtomicU64; MAX_STEPS],
    pub step_misses: [AtomicU64; MAX_STEPS],
    pub step_miss_nanos: [AtomicU64; MAX_STEPS],
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
    pub gc_segments_deleted: AtomicU64,
    pub gc_bytes_rewritten: AtomicU64,
    /// Key listings and the keys they returned (a namespace's listing counters only).
    pub lists: AtomicU64,
    pub keys_listed: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters::new(4096)
    }
}

impl Counters {
    /// Counters that count pages of `page_size` bytes.
    pub fn new(page_size: u64) -> Self {
        Counters {
            page_size: page_size.max(1),
            pages: Default::default(),
            gets: Default::default(),
            puts: Default::default(),
            deletes: Default::default(),
            gets_memtable: Default::default(),
            gets_by_level: Default::default(),
            gets_runs: Default::default(),
            tree_bytes_written: Default::default(),
            step_hits: Default::default(),
            step_hit_nanos: Default::default(),
            step_misses: Default::default(),
            step_miss_nanos: Default::default(),
            gets_not_found: Default::default(),
            filter_probes: Default::default(),
            filter_negatives: Default::default(),
            filter_loads: Default::default(),
            index_loads: Default::default(),
            reads: Default::default(),
            read_bytes: Default::default(),
            flushes: Default::default(),
            compactions: Default::default(),
            compaction_bytes_read: Default::default(),
            compaction_bytes_written: Default::default(),
            write_stalls: Default::default(),
            write_slowdowns: Default::default(),
            gc_segments_deleted: Default::default(),
            gc_bytes_rewritten: Default::default(),
            lists: Default::default(),
            keys_listed: Default::default(),
        }
    }

    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    #[inline]
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    /// Counts one read of `bytes` at `offset`, and the pages it touches.
    #[inline]
    pub fn read(&self, purpose: IoPurpose, offset: u64, bytes: usize) {
        let p = purpose as usize;
        self.reads[p].fetch_add(1, Relaxed);
        self.read_bytes[p].fetch_add(bytes as u64, Relaxed);
        if bytes > 0 {
            let first = offset / self.page_size;
            let last = (offset + bytes as u64 - 1) / self.page_size;
            self.pages[p].fetch_add(last - first + 1, Relaxed);
        }
    }

    /// Adds every counter of `other` into `s` (for sums over namespaces).
    pub fn accumulate(&self, s: &mut DbStats, num_levels: usize) {
        let mut one = DbStats::default();
        self.fill(&mut one, num_levels);
        s.gets += one.gets;
        s.puts += one.puts;
        s.deletes += one.deletes;
        s.gets_memtable += one.gets_memtable;
        s.gets_by_level.resize(num_levels, 0);
        for (a, b) in s.gets_by_level.iter_mut().zip(&one.gets_by_level) {
            *a += b;
        }
        s.gets_runs += one.gets_runs;
        if s.search.is_empty() {
            s.search = one.search;
        } else {
            for (a, b) in s.search.iter_mut().zip(&one.search) {
                a.hits += b.hits;
                a.hit_nanos += b.hit_nanos;
                a.misses += b.misses;
                a.miss_nanos += b.miss_nanos;
            }
        }
        s.gets_not_found += one.gets_not_found;
        s.filter_probes += one.filter_probes;
        s.filter_negatives += one.filter_negatives;
        s.filter_loads += one.filter_loads;
        s.index_loads += one.index_loads;
        for p in 0..IoPurpose::COUNT {
            s.reads[p] += one.reads[p];
            s.read_bytes[p] += one.read_bytes[p];
            s.pages[p] += one.pages[p];
        }
        s.flushes += one.flushes;
        s.compactions += one.compactions;
        s.compaction_bytes_read += one.compaction_bytes_read;
        s.compaction_bytes_written += one.compaction_bytes_written;
        s.write_stalls += one.write_stalls;
        s.write_slowdowns += one.write_slowdowns;
        s.gc_segments_deleted += one.gc_segments_deleted;
        s.gc_bytes_rewritten += one.gc_bytes_rewritten;
    }

    pub fn namespace_stats(&self, nsid: u32, num_levels: usize) -> NamespaceStats {
        let mut one = DbStats::default();
        self.fill(&mut one, num_levels);
        NamespaceStats {
            nsid,
            levels: Vec::new(),
            runs: LevelStats::default(),
            gets: one.gets,
            gets_memtable: one.gets_memtable,
            gets_by_level: one.gets_by_level,
            gets_runs: one.gets_runs,
            search: one.search,
            compaction_bytes_written: self.tree_bytes_written.load(Relaxed),
            gets_not_found: one.gets_not_found,
            puts: one.puts,
            deletes: one.deletes,
            filter_probes: one.filter_probes,
            filter_loads: one.filter_loads,
            index_loads: one.index_loads,
            reads: one.reads,
            read_bytes: one.read_bytes,
            pages: one.pages,
            listings: ListingStats::default(),
            keys_estimate: 0,
        }
    }

    /// These counters read as a namespace's listing counters.
    pub fn listing_stats(&self) -> ListingStats {
        let g = |c: &AtomicU64| c.load(Relaxed);
        let all = |a: &[AtomicU64; IoPurpose::COUNT]| std::array::from_fn(|p| g(&a[p]));
        ListingStats {
            calls: g(&self.lists),
            keys: g(&self.keys_listed),
            index_loads: g(&self.index_loads),
            reads: all(&self.reads),
            read_bytes: all(&self.read_bytes),
            pages: all(&self.pages),
        }
    }

    pub fn fill(&self, s: &mut DbStats, num_levels: usize) {
        let g = |c: &AtomicU64| c.load(Relaxed);
        s.gets = g(&self.gets);
        s.puts = g(&self.puts);
        s.deletes = g(&self.deletes);
        s.gets_memtable = g(&self.gets_memtable);
        s.gets_by_level = self.gets_by_level[..num_levels].iter().map(g).collect();
        s.gets_runs = g(&self.gets_runs);
        s.search = step_names(num_levels)
            .enumerate()
            .map(|(i, step)| StepCost {
                step,
                hits: g(&self.step_hits[i]),
                hit_nanos: g(&self.step_hit_nanos[i]),
                misses: g(&self.step_misses[i]),
                miss_nanos: g(&self.step_miss_nanos[i]),
            })
            .collect();
        s.gets_not_found = g(&self.gets_not_found);
        s.filter_probes = g(&self.filter_probes);
        s.filter_negatives = g(&self.filter_negatives);
        s.filter_loads = g(&self.filter_loads);
        s.index_loads = g(&self.index_loads);
        for p in IoPurpose::ALL {
            s.reads[p as usize] = g(&self.reads[p as usize]);
            s.read_bytes[p as usize] = g(&self.read_bytes[p as usize]);
            s.pages[p as usize] = g(&self.pages[p as usize]);
        }
        s.flushes = g(&self.flushes);
        s.compactions = g(&self.compactions);
        s.compaction_bytes_read = g(&self.compaction_bytes_read);
        s.compaction_bytes_written = g(&self.compaction_bytes_written);
        s.write_stalls = g(&self.write_stalls);
        s.write_slowdowns = g(&self.write_slowdowns);
        s.gc_segments_deleted = g(&self.gc_segments_deleted);
        s.gc_bytes_rewritten = g(&self.gc_bytes_rewritten);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_serialize_with_readable_names() {
        let mut s = DbStats {
            levels: vec![LevelStats {
                tables: 2,
                bytes: 10,
            }],
            gets: 7,
            ..DbStats::default()
        };
        s.reads[IoPurpose::Data as usize] = 3;
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["gets"], 7);
        assert_eq!(v["levels"][0]["tables"], 2);
        assert_eq!(v["reads"]["data"], 3);
        assert_eq!(v["reads"]["filter"], 0);
        assert!(v["nand"].is_null());
        let n = serde_json::to_value(NamespaceStats::default()).unwrap();
        assert_eq!(n["pages"]["value"], 0);
        assert_eq!(n["listings"]["pages"]["data"], 0);
        assert_eq!(n["keys_estimate"], 0);
        let i = serde_json::to_value(NamespaceInfo {
            nsid: 3,
            name: "t".into(),
        })
        .unwrap();
        assert_eq!(i, serde_json::json!({"nsid": 3, "name": "t"}));
    }
}
