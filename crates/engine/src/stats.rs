//! Counters the engine keeps, and the snapshot of them that `Db::stats` returns.

use crate::storage::{IoPurpose, NandStats};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Shape of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LevelStats {
    /// Table files on the level.
    pub tables: usize,
    /// Their total size, in bytes.
    pub bytes: u64,
    /// Of `bytes`, the tables' point indexes (`Options::point_index`).
    pub point_index_bytes: u64,
}

impl LevelStats {
    /// The bytes a level's size target counts: its tables less their point indexes.
    pub fn target_bytes(&self) -> u64 {
        self.bytes.saturating_sub(self.point_index_bytes)
    }
}

/// Where a get of one key would look below the memtables ([`crate::Namespace::get_path`]):
/// the tables whose key range takes in the key, each asked through its filter (a filter
/// load when not cached) until one answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GetPath {
    /// Per level, L0 first: L0's tables holding the key's range, newest first; one or none
    /// on each deeper level.
    pub levels: Vec<usize>,
    /// The namespace's runs (between L0 and L1) holding the key's range.
    pub runs: usize,
}

/// One step of a get's search, in the order a get takes them (`memtable`, `L0`, `runs`,
/// `L1`, ...), with the terms of the Cerberus paper's cost model (Eq. 1): gets answered at
/// this step and the time they spent in it (the value read included: HT), and gets that
/// searched it and went on, with the time they spent there (MP).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StepCost {
    /// The step's name: `memtable`, `L0`, `runs`, `L1`, `L2`, ...
    pub step: String,
    /// Gets answered at this step (found, or a tombstone).
    pub hits: u64,
    /// Time those gets spent in this step, the value read included (HT), in nanoseconds;
    /// 0 unless `Options::time_get_steps`.
    pub hit_nanos: u64,
    /// Gets that searched this step, found nothing and went on.
    pub misses: u64,
    /// Time those gets spent in this step (MP), in nanoseconds; 0 unless
    /// `Options::time_get_steps`.
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
    /// Gets that found nothing: no version of the key, or a tombstone (a deleted key).
    pub gets_not_found: u64,
    /// Point lookups: gets and `contains` checks (row cache hits included).
    pub gets: u64,
    /// Puts (each put of a batch counts).
    pub puts: u64,
    /// Deletes (each delete of a batch counts).
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
    /// Memtables flushed to L0.
    pub flushes: u64,
    /// Compactions run.
    pub compactions: u64,
    /// Table bytes compactions read.
    pub compaction_bytes_read: u64,
    /// Table bytes compactions wrote.
    pub compaction_bytes_written: u64,
    /// Table bytes flushes wrote (memtables into L0). With the terms below and
    /// `consolidation_bytes_written`, the write amplification of the trees term by term;
    /// `compact_range` makes the rest of `compaction_bytes_written`.
    pub flush_bytes_written: u64,
    /// Table bytes L0 compactions wrote: L0 split into namespace runs (per-namespace
    /// layout), or merged into L1 (shared tree, baseline).
    pub l0_bytes_written: u64,
    /// Table bytes a namespace's runs merged into its L1 wrote.
    pub run_merge_bytes_written: u64,
    /// Table bytes compactions of a sorted level into the next wrote.
    pub level_bytes_written: u64,
    /// Consolidations run: idle namespaces' trees merged into one sorted run (counted in
    /// `compactions` too).
    pub consolidations: u64,
    /// Table bytes consolidations wrote (part of `compaction_bytes_written`).
    pub consolidation_bytes_written: u64,
    /// Bytes of all value-log segments.
    pub vlog_bytes: u64,
    /// Value-log segments on storage now.
    pub vlog_segments: usize,
    /// Times a write waited for background work (frozen memtables at their limit, L0 or
    /// runs at their stop trigger).
    pub write_stalls: u64,
    /// Times a write was slowed down by 1 ms (L0 or runs at their slowdown trigger).
    pub write_slowdowns: u64,
    /// Value-log segments deleted by GC.
    pub gc_segments_deleted: u64,
    /// Live bytes GC wrote again to the log head (what it moved out of the segments it
    /// deleted).
    pub gc_bytes_rewritten: u64,
    /// Counters of the NAND timing model, when the storage has one.
    pub nand: Option<NandStats>,
    /// Snapshots open now (iterators hold one each).
    pub snapshots: usize,
    /// The row cache: size, hits and misses (every namespace's), inserts, evictions.
    pub row_cache: crate::row_cache::RowCacheStats,
    /// Bytes of the point-index budget taken now (`Options::point_index_memory_bytes`): the
    /// indexes open table readers keep (tables deleted while an iterator still reads them
    /// included), and reads of one under way.
    pub point_index_memory_bytes: u64,
}

/// A namespace and its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamespaceInfo {
    /// The namespace's id.
    pub nsid: u32,
    /// The name it was created with (unique among live namespaces).
    pub name: String,
}

/// Counters of one namespace (serialized like [`DbStats`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct NamespaceStats {
    /// The namespace's id.
    pub nsid: u32,
    /// Tables and bytes per level of this namespace's tree, L0 first. L0 is shared: its
    /// figures count the L0 tables holding this namespace. Under `Layout::Shared` the deeper
    /// levels are the shared tree's, and count its tables whose key range takes in this
    /// namespace's: the only ones a get of this namespace can consult.
    pub levels: Vec<LevelStats>,
    /// This namespace's runs (split out of L0, not yet merged into its L1).
    pub runs: LevelStats,
    /// Point lookups: gets and `contains` checks.
    pub gets: u64,
    /// Gets answered by the memtables.
    pub gets_memtable: u64,
    /// Gets answered by each level (found or deleted there), L0 first.
    pub gets_by_level: Vec<u64>,
    /// Gets answered by this namespace's runs.
    pub gets_runs: u64,
    /// The get search step by step (cost model terms).
    pub search: Vec<StepCost>,
    /// Table bytes compactions wrote into this namespace's runs and tree (its share of the
    /// write amplification; `Layout::Shared` counts the shared tree under namespace 0).
    pub compaction_bytes_written: u64,
    /// Gets that found nothing: no version of the key, or a tombstone.
    pub gets_not_found: u64,
    /// Its gets the row cache answered (latest-state gets only).
    pub row_cache_hits: u64,
    /// Its latest-state gets the row cache could not answer.
    pub row_cache_misses: u64,
    /// Puts (each put of a batch counts).
    pub puts: u64,
    /// Deletes (each delete of a batch counts).
    pub deletes: u64,
    /// Filter checks made by gets.
    pub filter_probes: u64,
    /// Filter blocks its gets read from storage.
    pub filter_loads: u64,
    /// Index blocks its gets read from storage.
    pub index_loads: u64,
    /// Storage reads by purpose (`IoPurpose as usize`) made by this namespace's gets,
    /// `contains` checks and key listings.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub reads: [u64; IoPurpose::COUNT],
    /// Bytes those reads returned, by purpose.
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
    /// Snapshots of this namespace open now (iterators, queries and index backfills hold one
    /// each): they hold back this namespace's overwritten versions and value-log segments,
    /// and no other namespace's.
    pub snapshots: usize,
    /// Times its tree was consolidated into one sorted run while it was idle.
    pub consolidations: u64,
    /// Table bytes those consolidations wrote (part of `compaction_bytes_written`).
    pub consolidation_bytes_written: u64,
    /// Its space (used, index, pending and garbage bytes) and settings (capacity, shares),
    /// beside the counters in the serialized form.
    #[serde(flatten)]
    pub space: crate::space::NamespaceSpace,
}

/// Iterators of one namespace (key listings, scans) and the storage reads they made.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ListingStats {
    /// Iterators opened (a device List page opens one).
    pub calls: u64,
    /// Entries they yielded.
    pub keys: u64,
    /// Index blocks they read from storage.
    pub index_loads: u64,
    /// Storage reads they made, by purpose (`IoPurpose as usize`).
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub reads: [u64; IoPurpose::COUNT],
    /// Bytes those reads returned, by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub read_bytes: [u64; IoPurpose::COUNT],
    /// Pages those reads touched, by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub pages: [u64; IoPurpose::COUNT],
}

/// Live counters, updated with relaxed atomics on the hot paths. The engine keeps one set per
/// namespace (its gets and writes) and one for background work.
///
/// Each set is split into stripes, one per CPU: a get
/// bumps a dozen counters, and with one shared copy every bump of a thread on one core pulls
/// the cache line from the other core (a contended read-modify-write, 10-20x the cost of an
/// uncontended one). Readers sum the stripes.
pub(crate) struct Counters {
    page_size: u64,
    /// Gets read the clock at each step they take (`Options::time_get_steps`).
    times_steps: bool,
    stripes: Box<[Stripe]>,
}

/// Stripes per set: at least the CPUs of a small machine.
const STRIPES: usize = 8;

/// The stripe of the CPU the caller runs on (a read of the kernel's restartable-sequence
/// area, no system call), so two threads counting at the same moment on two CPUs never share
/// a stripe; where the CPU is unknown, a stripe per thread, taken in turn.
fn stripe_index() -> usize {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu >= 0 {
        return cpu as usize % STRIPES;
    }
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    MINE.with(|m| {
        let i = m.get();
        if i != usize::MAX {
            return i;
        }
        let i = NEXT.fetch_add(1, Relaxed) % STRIPES;
        m.set(i);
        i
    })
}

/// One thread's share of a [`Counters`] set, on cache lines of its own.
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct Stripe {
    pub pages: [AtomicU64; IoPurpose::COUNT],
    pub gets: AtomicU64,
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub gets_memtable: AtomicU64,
    pub gets_by_level: [AtomicU64; 16],
    pub gets_runs: AtomicU64,
    /// Table bytes compactions wrote into this namespace's runs and tree.
    pub tree_bytes_written: AtomicU64,
    /// Consolidations of this namespace's tree, and the bytes they wrote.
    pub consolidations: AtomicU64,
    pub consolidation_bytes_written: AtomicU64,
    pub step_hits: [AtomicU64; MAX_STEPS],
    pub step_hit_nanos: [AtomicU64; MAX_STEPS],
    pub step_misses: [AtomicU64; MAX_STEPS],
    pub step_miss_nanos: [AtomicU64; MAX_STEPS],
    pub gets_not_found: AtomicU64,
    pub row_cache_hits: AtomicU64,
    pub row_cache_misses: AtomicU64,
    pub filter_probes: AtomicU64,
    pub filter_negatives: AtomicU64,
    pub filter_loads: AtomicU64,
    pub index_loads: AtomicU64,
    pub reads: [AtomicU64; IoPurpose::COUNT],
    pub read_bytes: [AtomicU64; IoPurpose::COUNT],
    pub flushes: AtomicU64,
    pub flush_bytes_written: AtomicU64,
    pub l0_bytes_written: AtomicU64,
    pub run_merge_bytes_written: AtomicU64,
    pub level_bytes_written: AtomicU64,
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
            times_steps: false,
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }

    /// The stripe the calling thread counts into.
    #[inline]
    pub fn local(&self) -> &Stripe {
        &self.stripes[stripe_index()]
    }

    /// One counter summed over the stripes.
    pub fn sum_of(&self, f: impl Fn(&Stripe) -> &AtomicU64) -> u64 {
        self.stripes.iter().map(|s| f(s).load(Relaxed)).sum()
    }

    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// These counters, with gets timing each step they take (`Options::time_get_steps`).
    pub fn timing_steps(mut self, on: bool) -> Self {
        self.times_steps = on;
        self
    }

    /// Whether gets counted here time their steps.
    #[inline]
    pub fn times_steps(&self) -> bool {
        self.times_steps
    }

    /// New counters that count as these do (page size, step times).
    pub fn like(&self) -> Self {
        Counters::new(self.page_size).timing_steps(self.times_steps)
    }

    #[inline]
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    /// Counts one read of `bytes` at `offset`, and the pages it touches.
    #[inline]
    pub fn read(&self, purpose: IoPurpose, offset: u64, bytes: usize) {
        let p = purpose as usize;
        let l = self.local();
        l.reads[p].fetch_add(1, Relaxed);
        l.read_bytes[p].fetch_add(bytes as u64, Relaxed);
        if bytes > 0 {
            let first = offset / self.page_size;
            let last = (offset + bytes as u64 - 1) / self.page_size;
            l.pages[p].fetch_add(last - first + 1, Relaxed);
        }
    }

    /// Adds every counter of `other` into `s` (for sums over namespaces).
    pub fn accumulate(&self, s: &mut DbStats, num_levels: usize) {
        let mut one = DbStats::default();
        self.fill(&mut one, num_levels);
        s.add_counts(&one, num_levels);
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
            compaction_bytes_written: self.sum_of(|s| &s.tree_bytes_written),
            gets_not_found: one.gets_not_found,
            row_cache_hits: one.row_cache.hits,
            row_cache_misses: one.row_cache.misses,
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
            snapshots: 0,
            consolidations: self.sum_of(|s| &s.consolidations),
            consolidation_bytes_written: self.sum_of(|s| &s.consolidation_bytes_written),
            space: Default::default(),
        }
    }

    /// These counters read as a namespace's listing counters.
    pub fn listing_stats(&self) -> ListingStats {
        ListingStats {
            calls: self.sum_of(|s| &s.lists),
            keys: self.sum_of(|s| &s.keys_listed),
            index_loads: self.sum_of(|s| &s.index_loads),
            reads: std::array::from_fn(|p| self.sum_of(|s| &s.reads[p])),
            read_bytes: std::array::from_fn(|p| self.sum_of(|s| &s.read_bytes[p])),
            pages: std::array::from_fn(|p| self.sum_of(|s| &s.pages[p])),
        }
    }

    pub fn fill(&self, s: &mut DbStats, num_levels: usize) {
        s.gets = self.sum_of(|t| &t.gets);
        s.puts = self.sum_of(|t| &t.puts);
        s.deletes = self.sum_of(|t| &t.deletes);
        s.gets_memtable = self.sum_of(|t| &t.gets_memtable);
        s.gets_by_level = (0..num_levels)
            .map(|l| self.sum_of(|t| &t.gets_by_level[l]))
            .collect();
        s.gets_runs = self.sum_of(|t| &t.gets_runs);
        s.search = step_names(num_levels)
            .enumerate()
            .map(|(i, step)| StepCost {
                step,
                hits: self.sum_of(|t| &t.step_hits[i]),
                hit_nanos: self.sum_of(|t| &t.step_hit_nanos[i]),
                misses: self.sum_of(|t| &t.step_misses[i]),
                miss_nanos: self.sum_of(|t| &t.step_miss_nanos[i]),
            })
            .collect();
        s.gets_not_found = self.sum_of(|t| &t.gets_not_found);
        s.row_cache.hits = self.sum_of(|t| &t.row_cache_hits);
        s.row_cache.misses = self.sum_of(|t| &t.row_cache_misses);
        s.filter_probes = self.sum_of(|t| &t.filter_probes);
        s.filter_negatives = self.sum_of(|t| &t.filter_negatives);
        s.filter_loads = self.sum_of(|t| &t.filter_loads);
        s.index_loads = self.sum_of(|t| &t.index_loads);
        for p in IoPurpose::ALL {
            s.reads[p as usize] = self.sum_of(|t| &t.reads[p as usize]);
            s.read_bytes[p as usize] = self.sum_of(|t| &t.read_bytes[p as usize]);
            s.pages[p as usize] = self.sum_of(|t| &t.pages[p as usize]);
        }
        s.flushes = self.sum_of(|t| &t.flushes);
        s.compactions = self.sum_of(|t| &t.compactions);
        s.compaction_bytes_read = self.sum_of(|t| &t.compaction_bytes_read);
        s.compaction_bytes_written = self.sum_of(|t| &t.compaction_bytes_written);
        s.flush_bytes_written = self.sum_of(|t| &t.flush_bytes_written);
        s.l0_bytes_written = self.sum_of(|t| &t.l0_bytes_written);
        s.run_merge_bytes_written = self.sum_of(|t| &t.run_merge_bytes_written);
        s.level_bytes_written = self.sum_of(|t| &t.level_bytes_written);
        s.consolidations = self.sum_of(|t| &t.consolidations);
        s.consolidation_bytes_written = self.sum_of(|t| &t.consolidation_bytes_written);
        s.write_stalls = self.sum_of(|t| &t.write_stalls);
        s.write_slowdowns = self.sum_of(|t| &t.write_slowdowns);
        s.gc_segments_deleted = self.sum_of(|t| &t.gc_segments_deleted);
        s.gc_bytes_rewritten = self.sum_of(|t| &t.gc_bytes_rewritten);
    }
}

impl DbStats {
    /// Adds the counters of `one` (as `Counters::accumulate` fills them) into these.
    pub(crate) fn add_counts(&mut self, one: &DbStats, num_levels: usize) {
        let s = self;
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
            s.search = one.search.clone();
        } else {
            for (a, b) in s.search.iter_mut().zip(&one.search) {
                a.hits += b.hits;
                a.hit_nanos += b.hit_nanos;
                a.misses += b.misses;
                a.miss_nanos += b.miss_nanos;
            }
        }
        s.gets_not_found += one.gets_not_found;
        s.row_cache.hits += one.row_cache.hits;
        s.row_cache.misses += one.row_cache.misses;
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
        s.flush_bytes_written += one.flush_bytes_written;
        s.l0_bytes_written += one.l0_bytes_written;
        s.run_merge_bytes_written += one.run_merge_bytes_written;
        s.level_bytes_written += one.level_bytes_written;
        s.consolidations += one.consolidations;
        s.consolidation_bytes_written += one.consolidation_bytes_written;
        s.write_stalls += one.write_stalls;
        s.write_slowdowns += one.write_slowdowns;
        s.gc_segments_deleted += one.gc_segments_deleted;
        s.gc_bytes_rewritten += one.gc_bytes_rewritten;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_counters_sum_every_thread() {
        let c = Counters::new(4096);
        std::thread::scope(|s| {
            for _ in 0..(STRIPES + 3) {
                s.spawn(|| {
                    for _ in 0..1000 {
                        Counters::add(&c.local().gets, 1);
                        c.read(IoPurpose::Value, 4000, 200);
                    }
                });
            }
        });
        let mut d = DbStats::default();
        c.fill(&mut d, 2);
        let n = (STRIPES as u64 + 3) * 1000;
        assert_eq!(d.gets, n);
        assert_eq!(d.reads[IoPurpose::Value as usize], n);
        assert_eq!(d.read_bytes[IoPurpose::Value as usize], 200 * n);
        // 4000..4200 crosses a 4 KiB page boundary.
        assert_eq!(d.pages[IoPurpose::Value as usize], 2 * n);
    }

    #[test]
    fn stats_serialize_with_readable_names() {
        let mut s = DbStats {
            levels: vec![LevelStats {
                tables: 2,
                bytes: 10,
                ..LevelStats::default()
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
