//! Options of a database.

use crate::storage::NandConfig;

/// Most bytes of values one `get_many` call answers with by default (64 MiB,
/// `Options::get_many_bytes`): the keys alone do not bound a batch (4,096 values of 64 MiB
/// each). The sizes are known from the lookups, so a batch past it fails with
/// [`Error::TooManyBytes`](crate::Error::TooManyBytes) before it reads any value; the caller
/// splits it (a value larger than the bound alone is read with a get).
pub const MAX_GET_MANY_BYTES: u64 = 64 << 20;

/// Which storage [`DbBuilder::open`](crate::DbBuilder::open) builds over its directory
/// (set with [`DbBuilder::storage`](crate::DbBuilder::storage)).
#[derive(Clone, Debug, Default)]
pub enum StorageKind {
    /// Real files.
    #[default]
    Posix,
    /// Real files behind the NAND timing model.
    Nand(NandConfig),
}

/// How namespaces share the LSM tree below L0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// Each namespace has its own tree below the shared memtable and L0 (Cerberus): L0
    /// compactions split L0 into per-namespace runs, which merge into the namespace's own L1
    /// (`docs/per-namespace-trees.md`).
    #[default]
    PerNamespace,
    /// One tree for all namespaces, nsid as key prefix (what a RocksDB user does with one
    /// column family).
    Shared,
}

/// Whether a write made now would be held back (`Db::write_pressure`): what the engine's
/// write controller does to writes while background work is behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WritePressure {
    /// Writes go through.
    None,
    /// Each write sleeps 1 ms first (L0 or a namespace's runs at their slowdown trigger).
    Slowdown,
    /// Writes wait for background work: L0 or a namespace's runs at their stop trigger, or a
    /// full memtable with `max_immutable_memtables` frozen ones not flushed yet.
    Stop,
}

/// Options of one write. `WriteOptions::default()` is what `put`, `delete` and `write` use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Return only once the write's value-log record is synced, even when `Options::sync` is
    /// off. Writes committed in one group share one sync.
    pub sync: bool,
}

/// Options of a database. `Options::default()` is tuned for a general workload. Made from
/// the default and changed field by field (`let mut o = Options::default(); o.sync = true;`):
/// new options may come in later versions.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// How namespaces share the tree below L0: each its own (the default) or one for all.
    pub layout: Layout,
    /// Bytes of memory a memtable takes before it is frozen and flushed: its entries, the
    /// encoded records their values keep, its search tree, key filter and point index (the
    /// allocator may round each allocation further).
    pub memtable_bytes: usize,
    /// Entries a memtable takes before it is frozen, whatever their bytes (0: no bound). An
    /// insert's search passes more cold nodes the more entries the memtable holds: small
    /// values once filled the budget with some 600,000, and puts of 32 B ran a fifth slower
    /// than with this bound (`docs/benchmarks.md`, session 104). With 16-byte keys and the
    /// 64 MiB budget, the bytes come first for any value that is not empty.
    pub memtable_max_entries: usize,
    /// Frozen memtables waiting for flush before writes stop.
    pub max_immutable_memtables: usize,
    /// Target size of a table data block.
    pub block_size: usize,
    /// Bloom filter bits per key (0 = no filter).
    pub filter_bits_per_key: u32,
    /// Data blocks carry a hash index over their keys (`docs/format.md`): a point lookup
    /// finds its key's restart interval in one probe instead of a binary search, and most
    /// keys a block does not hold are ruled out at once; about 1.3 bytes a distinct key.
    pub block_hash_index: bool,
    /// Tables carry a point index (`docs/format.md`): each user key's hash and its newest
    /// version's value-log address, so that a get reads its value record without the index
    /// and data block. 16 bytes a slot, 4 slots for 3 distinct keys: about 21 bytes a key,
    /// kept by the open table readers (outside `cache_bytes`, within
    /// `point_index_memory_bytes`), and built and
    /// used only when readers keep their filters and index blocks (`cache_filters_and_indexes`
    /// off). Gets at an older snapshot than a table's newest entry, and gets in tables of
    /// mostly tombstones or inline values, go the long way (the data block). Built into the
    /// tables written while on; a table written with one keeps it.
    pub point_index: bool,
    /// Bytes the open tables' point indexes may hold in memory together (default 256 MiB:
    /// some 12 million keys' worth). A table whose index does not fit keeps none until
    /// another's is given back (its table deleted or closed); its gets take the long way
    /// meanwhile (a freed share goes to whichever table asks first; an index larger than
    /// the whole budget never fits). Tables deleted while an iterator or snapshot still
    /// reads them keep theirs until it ends. 0: none kept, and none built.
    pub point_index_memory_bytes: u64,
    /// Bits of a key's hash its point-index fingerprint keeps (default 32). Tests lower it
    /// so that keys share fingerprints and gets check the records and take the long way.
    #[doc(hidden)]
    pub point_index_fingerprint_bits: u32,
    /// Byte budget of the block cache: data blocks, and filter and index blocks if
    /// `cache_filters_and_indexes`; 0 reads what it would hold from storage on every lookup.
    pub cache_bytes: u64,
    /// Filter and index blocks go in the block cache, competing with data blocks for its
    /// budget and read again after an eviction, as a device with little DRAM keeps them (the
    /// paper's model). Off (the default): each open table keeps its own once read, outside
    /// the budget and bounded by `max_open_files` (about 1.3 bytes a key for the filter at
    /// 10 bits a key, and one index entry a data block), as RocksDB does unless told
    /// otherwise (`cache_index_and_filter_blocks`); a get then skips two cache lookups. A
    /// table closed by the table cache and opened again reads them again.
    pub cache_filters_and_indexes: bool,
    /// Gets read the clock at each step they take (memtables, each level, the value read)
    /// and add the time to the step's counters (`StepStats::hit_nanos`, `miss_nanos`), the
    /// terms of the paper's cost model. Off (the default): the steps are counted, not timed,
    /// as RocksDB counts but does not time unless its perf level asks; the clock's reads
    /// were 4 % of a get's time.
    pub time_get_steps: bool,
    /// Byte budget of the row cache: the values of recently read keys, answered without a
    /// tree search or a value-log read, invalidated by every write of the key
    /// (`row_cache.rs`). Charged key + value + 128 bytes an entry; values over 64 KiB are not
    /// cached. Only gets at the latest state use it (not snapshots). 0 (the default): off.
    pub row_cache_bytes: u64,
    /// Table files kept open at most, about (the table cache; RocksDB's and LevelDB's
    /// option of the same name). A table is opened on first use and closed when the cache
    /// evicts it, least recently used first, or when it is deleted; an iterator or get in the
    /// middle of a table keeps that file open until it is done, so open iterators can hold
    /// more. Blocks stay cached across a re-open. Each open table costs one file descriptor
    /// (with `mmap_reads` too: the file stays open to map it again) and its namespace table.
    /// The cache keeps no more than half the process's descriptor limit (`RLIMIT_NOFILE`
    /// when the database opens), leaving the rest to value-log segments, the manifest and,
    /// in a device, connections. Default 1,000 (at least 1).
    pub max_open_files: usize,
    /// Values shorter than this are also stored inline in the table (0 = never).
    pub inline_value_threshold: usize,
    /// Sync the value log before acknowledging each write.
    pub sync: bool,
    /// Bytes a key may hold at most: a longer one fails its write with
    /// [`Error::KeyTooLarge`](crate::Error::KeyTooLarge).
    pub max_key_size: usize,
    /// Bytes a value may hold at most: a longer one fails its write with
    /// [`Error::ValueTooLarge`](crate::Error::ValueTooLarge).
    pub max_value_size: usize,
    /// Bytes of values one `get_many` call answers with at most (default
    /// [`MAX_GET_MANY_BYTES`]): a batch past it fails with
    /// [`Error::TooManyBytes`](crate::Error::TooManyBytes) before it reads a value.
    pub get_many_bytes: u64,
    /// A value-log segment is closed and a new one started past this size.
    pub vlog_segment_bytes: u64,
    /// Every this many bytes appended to the value log, a thread of its own writes them out
    /// to the device, so the sync that closes a segment (on the writing thread) finds little
    /// left to write. 0: none (the kernel writes back when it will). Durability is the same.
    pub log_writeback_bytes: u64,
    /// Target size of a table written by compaction.
    pub target_table_bytes: u64,
    /// L0 tables that trigger an L0 compaction (per namespace: a split into runs).
    pub l0_compaction_trigger: usize,
    /// Runs of one namespace that trigger their merge into its L1 (per-namespace layout).
    /// More runs per merge rewrite L1 less often; each run costs its namespace's gets a
    /// filter probe until then.
    pub run_compaction_trigger: usize,
    /// Runs of any one namespace at which writes are slowed down, and at which they wait:
    /// compaction debt shows as slower writes rather than as reads that probe many runs.
    pub run_slowdown_trigger: usize,
    /// Runs of any one namespace at which writes wait for their merge into its L1 (see
    /// `run_slowdown_trigger`).
    pub run_stop_trigger: usize,
    /// After this long without a write, background work moves everything out of the shared
    /// L0 into the namespaces' own trees, as `Db::wait_for_compactions` does (0 = never).
    pub idle_settle_ms: u64,
    /// L0 tables at which writes are slowed down.
    pub l0_slowdown_trigger: usize,
    /// L0 tables at which writes wait for compaction.
    pub l0_stop_trigger: usize,
    /// Byte size L1 may reach before it compacts into L2. Per namespace, a tree being written
    /// (with runs) gets its share among all trees, `level1_bytes / trees`, at least
    /// `target_table_bytes`; an idle tree the whole (`docs/per-namespace-trees.md`, rule 4).
    pub level1_bytes: u64,
    /// Each level below L1 may hold this many times the bytes of the level above.
    pub level_size_ratio: u64,
    /// Per-namespace trees size their levels from the bottom up (RocksDB's
    /// `level_compaction_dynamic_level_bytes`): the last level's target is its actual size
    /// and each level above it may hold that over `level_size_ratio` once more, so a tree
    /// never keeps a half-full L1 over its last level. Off: every level has the fixed budget
    /// `level1_bytes * level_size_ratio^(level-1)`. The shared layout always uses the fixed
    /// budgets. Default on.
    pub dynamic_level_bytes: bool,
    /// A namespace without a write for `idle_settle_ms` whose tree (runs, L1 and deeper)
    /// holds less than this many bytes in more than one level is merged into one sorted run
    /// in its deepest level, once per idle period, so its gets read one table
    /// (`docs/per-namespace-trees.md`, rule 5). `None`: `level1_bytes * level_size_ratio^2`;
    /// `Some(0)`: never. Per-namespace layout only.
    pub consolidate_below_bytes: Option<u64>,
    /// Number of levels, L0 included.
    pub num_levels: usize,
    /// Threads for flushes, compactions and value-log GC. With 1, GC runs on it too: its
    /// rewrites flush for themselves when the memtables are full, and no compaction runs
    /// while it does.
    pub background_threads: usize,
    /// The nice value of the database's own background threads (0-19; 0: as the caller's):
    /// on a machine with few cores a flush or compaction then yields the core to a thread
    /// serving a client instead of sharing it evenly, and still gets every idle cycle. A
    /// background runner (`background_runner`) places work on threads of its own.
    pub background_nice: i32,
    /// A count the index answers alone over at least this many table blocks is walked in
    /// two pieces at once, the second on a prefetch thread (`docs/queries.md`, Count; 0:
    /// never). Below ~32 blocks the hand-off to another thread costs more than it saves.
    pub count_split_blocks: usize,
    /// Posix storage reads through memory maps (no system call per read that the page
    /// cache can answer). An I/O error on a mapped page then stops the process (SIGBUS)
    /// instead of failing the one read: turn it off where that matters more than speed.
    /// Values read from the value log are then the mapped bytes themselves, not copies: a
    /// value kept keeps its segment's disk space after value-log GC deleted the segment,
    /// until the value is dropped.
    pub mmap_reads: bool,
    /// Threads that read ahead for iterators (values with `ReadOptions::prefetch_degree`
    /// above 0, blocks and tables with `index_prefetch`), started on first use. A storage with
    /// a timing model (NAND) needs none: its reads ahead are queued on the modeled device.
    pub prefetch_threads: usize,
    /// Run compactions in the background (off: only `compact_*` calls compact).
    pub auto_compaction: bool,
    /// The value log's garbage background GC allows (0, or 1: only `gc_value_log` collects):
    /// once the sealed segments it may collect hold this share of known-dead bytes together,
    /// it collects them, the deadest first, each at least this share dead. It collects
    /// without waiting a segment at least 90 % dead, and any segment this dead when space is
    /// wanted back: a namespace was destroyed, a write or job was refused for want of space,
    /// or the free space above [`reserve_bytes`](Self::reserve_bytes) is below the garbage.
    /// The log then takes up to `1 / (1 - ratio)` times its live bytes (2x at 0.5; the open
    /// segment, overwrites not flushed yet and segments snapshots pin come on top): more
    /// than when each segment went as it crossed the ratio, for far fewer rewrites.
    pub vlog_gc_dead_ratio: f64,
    /// Free bytes the storage keeps for background work: below them writes (not deletes)
    /// fail with `ErrorKind::CapacityExceeded`, so no namespace takes the last free bytes
    /// and flushes, compactions and GC always have room to give space back. `None` (the
    /// default): 1% of the storage's size, at most [`DEFAULT_RESERVE_MAX`]; `Some(0)`: none.
    /// Applies only on storage that reports its space (files: the file system's).
    pub reserve_bytes: Option<u64>,
    /// Most secondary indexes a namespace may have: a create past it fails with
    /// `Error::TooManyIndexes` (each index adds entries to every write of its namespace and
    /// a backfill of all its records). Default [`DEFAULT_MAX_INDEXES_PER_NAMESPACE`].
    pub max_indexes_per_namespace: usize,
    /// Longest life of a snapshot or an iterator, from its opening (not since its last use:
    /// one touched now and then would live forever). Past it, its pin is released (value-log
    /// GC and compactions no longer keep what it reads) and its reads fail with
    /// `Error::SnapshotExpired`. `None`: no limit. Default [`DEFAULT_SNAPSHOT_MAX_AGE`].
    pub snapshot_max_age: Option<std::time::Duration>,
    /// Who runs flushes, compactions, value-log GC and index backfills. `None`:
    /// `background_threads` threads of the database's own. Set (a device's scheduler), the
    /// database starts none: it calls the runner whenever background work may be due, and
    /// the runner calls [`Db::run_background_job`](crate::Db::run_background_job) on
    /// threads of its choosing (at most `background_threads` at once), again until it answers
    /// [`BackgroundStep::Idle`], and at least every `idle_settle_ms`. A writer may wait for
    /// that work: the runner must never run it behind a thread that writes.
    pub background_runner: Option<BackgroundRunner>,
}

/// Called when background work may be due (see [`Options::background_runner`]).
#[derive(Clone)]
pub struct BackgroundRunner(pub std::sync::Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for BackgroundRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BackgroundRunner")
    }
}

/// What one call of [`Db::run_background_job`](crate::Db::run_background_job) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackgroundStep {
    /// Ran a job of this kind; there may be more.
    Ran(JobKind),
    /// Nothing is due; look again after this long at the latest (or when called).
    Idle(Option<std::time::Duration>),
    /// The database is closed.
    Stopped,
}

/// The kinds of background job (see [`BackgroundStep::Ran`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// Writing a frozen memtable to an L0 table.
    Flush,
    /// An L0 split or a compaction of a tree.
    Compaction,
    /// Value-log GC: rewriting the live records of a segment and deleting it.
    Gc,
    /// Filling a new secondary index with the records stored before it.
    Backfill,
}

/// The most the default reserve keeps free: room for a few memtable flushes and a
/// compaction's output (64 MiB memtables, 2 MiB tables), small next to today's disks.
pub const DEFAULT_RESERVE_MAX: u64 = 256 << 20;

/// Default of [`Options::max_indexes_per_namespace`].
pub const DEFAULT_MAX_INDEXES_PER_NAMESPACE: usize = 16;

/// Default of [`Options::snapshot_max_age`]: 10 minutes, longer than any scan a tenant
/// needs, short enough that a forgotten iterator does not hold GC back for long.
pub const DEFAULT_SNAPSHOT_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(600);

impl Default for Options {
    fn default() -> Self {
        Options {
            layout: Layout::PerNamespace,
            memtable_bytes: 64 << 20,
            memtable_max_entries: 1 << 18,
            max_immutable_memtables: 2,
            block_size: 4096,
            filter_bits_per_key: 10,
            block_hash_index: true,
            point_index: true,
            point_index_memory_bytes: 256 << 20,
            point_index_fingerprint_bits: 32,
            cache_bytes: 64 << 20,
            cache_filters_and_indexes: false,
            time_get_steps: false,
            row_cache_bytes: 0,
            max_open_files: 1000,
            inline_value_threshold: 64,
            sync: false,
            max_key_size: 64 << 10,
            max_value_size: 64 << 20,
            get_many_bytes: MAX_GET_MANY_BYTES,
            vlog_segment_bytes: 128 << 20,
            log_writeback_bytes: 1 << 20,
            target_table_bytes: 2 << 20,
            l0_compaction_trigger: 4,
            run_compaction_trigger: 1,
            run_slowdown_trigger: 3,
            run_stop_trigger: 6,
            idle_settle_ms: 1000,
            l0_slowdown_trigger: 12,
            l0_stop_trigger: 20,
            level1_bytes: 32 << 20,
            level_size_ratio: 10,
            dynamic_level_bytes: true,
            consolidate_below_bytes: None,
            num_levels: 7,
            background_threads: 2,
            background_nice: 10,
            count_split_blocks: 32,
            prefetch_threads: 8,
            mmap_reads: true,
            auto_compaction: true,
            vlog_gc_dead_ratio: 0.5,
            reserve_bytes: None,
            max_indexes_per_namespace: DEFAULT_MAX_INDEXES_PER_NAMESPACE,
            snapshot_max_age: Some(DEFAULT_SNAPSHOT_MAX_AGE),
            background_runner: None,
        }
    }
}

impl Options {
    /// The free bytes kept on a storage of `total` bytes ([`reserve_bytes`](Self::reserve_bytes)).
    pub fn reserve_on(&self, total: u64) -> u64 {
        self.reserve_bytes
            .unwrap_or_else(|| (total / 100).min(DEFAULT_RESERVE_MAX))
    }

    /// The tree size below which an idle namespace's tree is consolidated (0: never).
    pub fn consolidation_bound(&self) -> u64 {
        if self.layout != Layout::PerNamespace || self.idle_settle_ms == 0 {
            return 0;
        }
        self.consolidate_below_bytes.unwrap_or_else(|| {
            self.level1_bytes
                .saturating_mul(self.level_size_ratio)
                .saturating_mul(self.level_size_ratio)
        })
    }

    /// Checks that the options make sense together.
    pub fn validate(&self) -> crate::error::Result<()> {
        let bad = |m: &str| Err(crate::error::Error::InvalidArgument(m.to_string()));
        if self.memtable_bytes < 4096 {
            return bad("memtable_bytes must be at least 4096");
        }
        if self.block_size < 256 {
            return bad("block_size must be at least 256");
        }
        if self.max_open_files == 0 {
            return bad("max_open_files must be at least 1");
        }
        if self.num_levels < 2 || self.num_levels > 16 {
            return bad("num_levels must be between 2 and 16");
        }
        if self.level_size_ratio < 2 {
            return bad("level_size_ratio must be at least 2");
        }
        // A value-log record (header, key, value) and a table block entry (key, inline
        // value) store their lengths in 32 bits: refuse limits that would truncate one.
        let record = crate::vlog::RECORD_HEADER_LEN as u64;
        let (key, value) = (self.max_key_size as u64, self.max_value_size as u64);
        if key == 0 || key + value + record > u64::from(u32::MAX) {
            return Err(crate::error::Error::InvalidArgument(format!(
                "max_key_size ({key}) + max_value_size ({value}) + the {record}-byte record \
                 header must fit in 2^32-1 bytes, and max_key_size must be at least 1"
            )));
        }
        if key + self.inline_value_threshold as u64 + 64 > u64::from(u32::MAX) {
            return bad("max_key_size + inline_value_threshold must fit in a 32-bit block length");
        }
        if self.run_compaction_trigger == 0
            || self.run_compaction_trigger > self.l0_slowdown_trigger
        {
            return bad("need 0 < run_compaction_trigger <= l0_slowdown_trigger");
        }
        if self.l0_compaction_trigger == 0
            || self.l0_slowdown_trigger < self.l0_compaction_trigger
            || self.l0_stop_trigger < self.l0_slowdown_trigger
        {
            return bad("need 0 < l0_compaction_trigger <= l0_slowdown_trigger <= l0_stop_trigger");
        }
        if !(0.0..=1.0).contains(&self.vlog_gc_dead_ratio) {
            return bad("vlog_gc_dead_ratio must be between 0 and 1");
        }
        if !(0..=19).contains(&self.background_nice) {
            return bad("background_nice must be between 0 and 19");
        }
        if self.background_threads == 0 {
            return bad("background_threads must be at least 1");
        }
        if self.get_many_bytes == 0 {
            return bad("get_many_bytes must be at least 1");
        }
        if self.prefetch_threads == 0 || self.prefetch_threads > 256 {
            return bad("prefetch_threads must be between 1 and 256");
        }
        Ok(())
    }
}
