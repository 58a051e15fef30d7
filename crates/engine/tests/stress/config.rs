//! Configurations the stress test runs under (storage, options) and its coverage counters.

use cerberus_engine::storage::NandConfig;
use cerberus_engine::{Layout, Options};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// Coverage: how often each public call ran.

static COVERAGE: OnceLock<Mutex<BTreeMap<&'static str, u64>>> = OnceLock::new();

pub fn cov(call: &'static str) {
    *COVERAGE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(call)
        .or_default() += 1;
}

/// Adds `n` to a coverage line that counts things rather than calls.
pub fn cov_add(what: &'static str, n: u64) {
    *COVERAGE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(what)
        .or_default() += n;
}

/// Segments a database deleted through GC while open, counted when it is closed or crashed:
/// with those `gc_value_log` deleted, the background's share (its gate must still open).
pub fn count_gc(db: &cerberus_engine::Db) {
    cov_add("GC: segments deleted", db.stats().gc_segments_deleted);
}

pub const GC_BY_CALL: &str = "GC: of those, by gc_value_log";

pub fn coverage() -> BTreeMap<&'static str, u64> {
    COVERAGE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .clone()
}

pub static OPS_RUN: AtomicU64 = AtomicU64::new(0);

// ---------------------------------------------------------------------------------------
// Configurations.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageSpec {
    Mem,
    Posix,
    /// `StorageKind::Nand` over real files, through `Db::builder(..).storage(..).open(..)`.
    Nand,
    /// The NAND model over memory, through `Db::builder(..).open_storage(..)`.
    NandMem,
    /// In-memory storage that can crash and fail calls; writes are synced (`Options::sync`)
    /// so a crash must keep exactly what was acknowledged.
    Fault,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub name: &'static str,
    pub storage: StorageSpec,
    pub opts: Options,
    /// Background work through `Options::background_runner` and `Db::run_background_job`
    /// on a runner thread of the test's own.
    pub runner: bool,
}

pub(crate) fn fast_nand() -> NandConfig {
    NandConfig {
        page_size: 4096,
        channels: 2,
        ways: 2,
        t_read: Duration::from_micros(1),
        t_prog: Duration::from_micros(2),
        channel_bytes_per_sec: 0,
    }
}

pub fn base_options() -> Options {
    let mut o = Options::default();
    o.memtable_bytes = 24 << 10;
    o.max_immutable_memtables = 2;
    o.block_size = 512;
    o.cache_bytes = 64 << 10;
    o.inline_value_threshold = 64;
    o.vlog_segment_bytes = 48 << 10;
    // Several early write-backs a segment (posix configurations): rolls race them.
    o.log_writeback_bytes = 8 << 10;
    // Counts over a table block or more walked in two pieces (files and memory; never on
    // NAND): a few counts a run qualify.
    o.count_split_blocks = 1;
    o.target_table_bytes = 8 << 10;
    o.l0_compaction_trigger = 3;
    o.l0_slowdown_trigger = 6;
    o.l0_stop_trigger = 10;
    o.level1_bytes = 32 << 10;
    o.level_size_ratio = 4;
    o.num_levels = 5;
    o.background_threads = 2;
    o.prefetch_threads = 2;
    o.vlog_gc_dead_ratio = 0.3;
    o.idle_settle_ms = 50;
    // Snapshots and iterators live as long as the session keeps them: an age limit would
    // make a run depend on the wall clock (tests/engine/snapshot_age.rs covers it).
    o.snapshot_max_age = None;
    o
}

/// The row cache axis: on (this small, so it evicts all along) in half the configurations,
/// off in the others, so every feature runs with and without it and their answers agree.
const ROW_CACHE_TINY: u64 = 8 << 10;

/// The configurations every log runs under; answers must agree between them.
pub fn configs() -> Vec<Config> {
    let b = base_options;
    vec![
        Config {
            runner: false,
            name: "mem/per-ns/cache/bg2/rowcache8k/point-fp2",
            storage: StorageSpec::Mem,
            opts: {
                let mut o = b();
                o.row_cache_bytes = ROW_CACHE_TINY;
                // Point-index fingerprints of 2 bits: most gets that find their key through
                // one read another key's record first and take the long way.
                o.point_index_fingerprint_bits = 2;
                o
            },
        },
        Config {
            runner: false,
            name: "posix/shared/nocache/mmap/inline0/bg1/point4k",
            storage: StorageSpec::Posix,
            opts: {
                let mut o = b();
                // Point indexes for a few tables at a time: the others' gets take the long
                // way, and tables compactions delete give their share to new ones.
                o.point_index_memory_bytes = 4 << 10;
                o.layout = Layout::Shared;
                o.cache_bytes = 0;
                o.inline_value_threshold = 0;
                o.background_threads = 1;
                o.mmap_reads = true;
                o
            },
        },
        Config {
            runner: false,
            name: "posix/per-ns/nommap/block4k/table64k/inline1k/rowcache8k",
            storage: StorageSpec::Posix,
            opts: {
                let mut o = b();
                o.row_cache_bytes = ROW_CACHE_TINY;
                o.mmap_reads = false;
                o.block_size = 4096;
                o.target_table_bytes = 64 << 10;
                o.inline_value_threshold = 1024;
                o.memtable_bytes = 64 << 10;
                o.vlog_segment_bytes = 128 << 10;
                // Most values are a few hundred bytes, some 9 KiB, and a get_many asks for
                // up to 9 keys: both sides of the bound come up.
                o.get_many_bytes = 2 << 10;
                o
            },
        },
        Config {
            runner: false,
            name: "nand/shared/bg1/smalltables/nopoint",
            storage: StorageSpec::Nand,
            opts: {
                let mut o = b();
                // Gets through the data blocks only: the other configurations' point
                // indexes must answer as they do.
                o.point_index = false;
                o.layout = Layout::Shared;
                o.background_threads = 1;
                o.target_table_bytes = 2 << 10;
                o.block_size = 256;
                o.mmap_reads = false;
                o
            },
        },
        Config {
            runner: true,
            name: "nand-mem/per-ns/nocache/no-auto-gc/runner/rowcache8k",
            storage: StorageSpec::NandMem,
            opts: {
                let mut o = b();
                o.row_cache_bytes = ROW_CACHE_TINY;
                o.cache_bytes = 0;
                o.vlog_gc_dead_ratio = 0.0;
                o.inline_value_threshold = 16;
                o
            },
        },
        Config {
            runner: false,
            name: "fault/shared/no sync (crash loses what came after the last sync)",
            storage: StorageSpec::Fault,
            opts: {
                let mut o = b();
                o.sync = false;
                o.layout = Layout::Shared;
                o
            },
        },
        Config {
            runner: false,
            name: "fault/per-ns/sync/rowcache8k (crash, I/O errors)",
            storage: StorageSpec::Fault,
            opts: {
                let mut o = b();
                o.row_cache_bytes = ROW_CACHE_TINY;
                o.sync = true;
                o
            },
        },
    ]
}
