//! The database: the `Db` facade and the state its parts share. The write path, the read
//! path, namespaces, flushes, background work, value-log GC and recovery each have a file.

mod backfill;
mod background;
mod background_state;
mod builder;
mod checkpoint;
mod count;
mod dead_bytes;
mod delete_range;
mod flush;
mod flush_table;
mod flush_usage;
mod gc;
mod gc_state;
mod get_many;
mod handle;
mod index_flushes;
mod index_set;
mod indexes;
mod iterator;
mod level_stats;
mod log_syncs;
mod lookup;
mod namespace_set;
mod namespaces;
mod query;
mod query_doc;
mod quota_state;
mod read;
mod read_only;
mod readable;
mod records;
mod recovery;
mod settle;
mod snapshot;
mod snapshots;
mod super_version;
mod supersede;
#[cfg(test)]
mod test_hooks;
mod usage;
mod usage_probe;
mod verify;
mod versions;
mod write;
mod write_queue;

pub use builder::DbBuilder;
pub use checkpoint::{CheckpointInfo, CHECKPOINT_MARKER};
pub use delete_range::{prefix_end, RangeDelete, DELETE_RANGE_BATCH, DELETE_RANGE_STEP};
pub use gc_state::GcStats;
pub use get_many::MAX_GET_MANY_KEYS;
pub use handle::Namespace;
pub use index_set::IndexInfo;
pub use iterator::{Iter, IterMemory, ReadOptions, DEFAULT_PREFETCH_DEGREE};
pub use query::{FindOptions, TopOptions};
pub use query_doc::QueryOutput;
pub use readable::Readable;
pub use records::RECORD_WORK;
pub use snapshot::Snapshot;
pub use verify::VerifyReport;

use self::background_state::Background;
use self::gc_state::GcState;
use self::index_set::IndexSet;
use self::level_stats::level_stats;
use self::namespace_set::NsState;
use self::snapshots::Snapshots;
use self::write_queue::WriteQueue;

use crate::error::{Error, Result};
use crate::key::{Nsid, DEFAULT_NS};
use crate::options::Options;
use crate::stats::{Counters, DbStats, NamespaceInfo};
use crate::storage::StorageRef;
use crate::vlog::{self, VlogReader};
use parking_lot::{Mutex, RwLock};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

struct Inner {
    opts: Options,
    storage: StorageRef,
    /// Counters of background work (flush, compaction); namespaces have their own.
    counters: Arc<Counters>,
    namespaces: RwLock<NsState>,
    /// Live secondary indexes, by the namespace they index: the write path derives their
    /// entries. Replaced (under the writer lock) when an index is created or dropped.
    indexes: RwLock<Arc<IndexSet>>,
    vlog_reader: VlogReader,
    gc: GcState,
    /// The manifest and the super version readers load.
    versions: versions::Versions,
    writes: WriteQueue,
    bg: Background,
    closed: AtomicBool,
    /// The open is under way with a background runner, which runs nothing before it returns:
    /// flushes the open needs (an unfinished backfill's) run on the opening thread.
    opening_inline: AtomicBool,
    opened: std::time::Instant,
    /// Milliseconds from `opened` to the last write.
    last_write_ms: AtomicU64,
    /// Seqnos live snapshots read at, per namespace.
    snapshots: Snapshots,
    /// The storage's free space as last asked (the device-wide reserve).
    space: quota_state::SpaceGauge,
    /// Flushes capacity checks made, kept apart (see `check_room`).
    capacity_flush: quota_state::CapacityFlushes,
    /// Flushes index backfills made, and the indexes ready before their flush.
    index_flush: index_flushes::IndexFlushes,
    /// Values of recently read keys (`Options::row_cache_bytes`; `None`: off).
    row_cache: Option<crate::row_cache::RowCache>,
    /// Reader threads for iterators' prefetch (values, blocks, tables), started on first use.
    prefetcher: std::sync::OnceLock<Arc<crate::prefetch::ReadPool>>,
    /// Reader threads for background work, started on first use.
    background_reads: std::sync::OnceLock<Arc<crate::prefetch::ReadPool>>,
    #[cfg(test)]
    hooks: test_hooks::TestHooks,
}

/// A key-value store. Cheap to share between threads (`&Db` is enough).
pub struct Db {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Keeps other processes out of the directory while this instance is open.
    _lock: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Db {
    /// Opens (or creates) the database in directory `path`, on real files: the shorthand
    /// of `Db::builder(options).open(path)`. [`Db::builder`] opens on other storage.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::builder(options).open(path)
    }

    /// A builder that opens a database with `options`, on the storage it is given
    /// (see [`DbBuilder`]).
    pub fn builder(options: Options) -> DbBuilder {
        DbBuilder::new(options)
    }

    /// A handle to live namespace `ns`, or [`Error::UnknownNamespace`].
    pub fn namespace(&self, ns: Nsid) -> Result<Namespace> {
        let entry = self.inner.ns_entry(ns)?;
        Ok(Namespace::new(self.inner.clone(), entry))
    }

    /// The namespace every database has (id 0, never destroyed).
    pub fn default_namespace(&self) -> Namespace {
        self.namespace(DEFAULT_NS)
            .expect("the default namespace is never destroyed")
    }

    /// Syncs the value log: every write acknowledged so far survives a crash.
    pub fn sync_log(&self) -> Result<()> {
        self.inner.sync_log()
    }

    /// Creates a namespace with the default settings (no capacity, equal shares) and
    /// returns a handle to it. Ids are never reused.
    pub fn create_namespace(&self, name: &str) -> Result<Namespace> {
        self.create_namespace_with(name, crate::namespace_options::NamespaceOptions::default())
    }

    /// Creates a namespace with `options` (validated; kept in the manifest) and returns a
    /// handle to it.
    pub fn create_namespace_with(
        &self,
        name: &str,
        options: crate::namespace_options::NamespaceOptions,
    ) -> Result<Namespace> {
        let entry = self.inner.create_namespace(name, options)?;
        Ok(Namespace::new(self.inner.clone(), entry))
    }

    /// Destroys a namespace: its own tables go at once, its entries in the shared memtable
    /// and L0 become unreachable at once and are dropped by the next flush or compaction.
    /// The default namespace (0) cannot be destroyed.
    pub fn destroy_namespace(&self, ns: Nsid) -> Result<()> {
        self.inner.destroy_namespace(ns)
    }

    /// The id of the live namespace called `name`: no copy of the catalog, no sort (a
    /// device resolves names for clients that have proved nothing yet).
    pub fn namespace_id(&self, name: &str) -> Option<Nsid> {
        self.inner.namespaces.read().id_of(name)
    }

    /// Live namespaces, by id.
    pub fn list_namespaces(&self) -> Vec<NamespaceInfo> {
        self.inner.namespaces.read().list()
    }

    /// Flushes, then waits until no flush, compaction or value-log GC is pending or running,
    /// as db_bench's `waitforcompaction` does: the tree is in the shape background work leaves
    /// it in, with nothing in the shared L0 or in namespace runs. Writes made during the wait
    /// are not waited for (a steady writer would keep the tree from ever settling): once
    /// they come, the call returns as soon as everything written before it has left L0 and
    /// the runs.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_for_compactions()
    }

    /// Collects the value log now: seals the active segment, flushes, then rewrites the live
    /// records of every segment holding dead ones (overwritten, deleted or destroyed) and
    /// deletes those segments.
    pub fn gc_value_log(&self) -> Result<GcStats> {
        self.inner.gc_value_log()
    }

    /// Reads every table and value-log segment back and checks every checksum; what it
    /// found damaged is in the report (file, offset, what), nothing is repaired. Reads of
    /// the database go on meanwhile.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.inner.verify()
    }

    /// The value-log segments GC found damaged since open, with the corruption it met in
    /// each: GC keeps them (their intact values stay readable) and does not read them again.
    pub fn damaged_segments(&self) -> Vec<(u64, String)> {
        let damaged = self.inner.gc.damaged.lock();
        damaged.iter().map(|(s, e)| (*s, e.clone())).collect()
    }

    /// Writes the memtable to an L0 table and waits until it and every memtable frozen before
    /// it are flushed (not those that writes made meanwhile fill and freeze).
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Compacts, in every live namespace, every table holding keys in `[start, end]`
    /// (`None` = unbounded) down to the deepest level that has data.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(None, start, end)
    }

    /// Compacts every table of every live namespace down to the deepest level that has data
    /// (`compact_range(None, None)`).
    pub fn compact_all(&self) -> Result<()> {
        self.compact_range(None, None)
    }

    /// Makes every write durable, waits for background work and stops it. Later calls fail
    /// with [`Error::Closed`]. Dropping a `Db` closes it too.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let synced = self.inner.writes.writer.lock().vlog.sync();
        {
            let mut bg = self.inner.bg.state.lock();
            bg.policy.shutdown = true;
            self.inner.wake_background();
            self.inner.bg.done_cv.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        synced
    }

    /// Counters and tree shape of the whole database: background work and every namespace,
    /// destroyed ones included.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// Whether a write made now would be slowed down or wait for background work. A caller
    /// that must not block (an event loop serving other tenants) hands its writes to a thread
    /// that may while this is not `None`.
    pub fn write_pressure(&self) -> crate::options::WritePressure {
        self.inner.write_pressure()
    }

    /// Runs the most urgent background job (a flush first, then an L0 split or a
    /// compaction, then an index backfill or value-log GC) on the calling thread, for the
    /// runner of [`Options::background_runner`]. Without one, the database's own threads
    /// call it.
    pub fn run_background_job(&self) -> crate::options::BackgroundStep {
        self.inner.run_one_job()
    }

    /// The storage this database lives on.
    pub fn storage(&self) -> &StorageRef {
        &self.inner.storage
    }

    /// Times a compaction started while another held the same slot: always 0 unless the
    /// scheduling is broken (tests check it).
    #[doc(hidden)]
    pub fn compaction_slot_overlaps(&self) -> u64 {
        self.inner.bg.slot_overlaps()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Inner {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(e) = &self.bg.state.lock().policy.error {
            return Err(Error::Background(e.clone()));
        }
        Ok(())
    }

    fn stats(&self) -> DbStats {
        let sv = self.versions.super_version();
        let mut s = DbStats {
            levels: sv
                .version
                .levels
                .iter()
                .map(|ts| level_stats(&ts.iter().collect::<Vec<_>>()))
                .collect(),
            runs: level_stats(&sv.version.runs.iter().collect::<Vec<_>>()),
            ..DbStats::default()
        };
        // Totals: background work plus every namespace, destroyed ones included.
        let n = self.opts.num_levels;
        self.counters.accumulate(&mut s, n);
        let state = self.namespaces.read();
        for c in state
            .live
            .values()
            .flat_map(|e| [&e.counters, &e.list_counters])
        {
            c.accumulate(&mut s, n);
        }
        s.add_counts(&state.destroyed_counters, n);
        drop(state);
        if let Ok(names) = self.storage.list() {
            for n in names
                .iter()
                .filter(|n| vlog::parse_segment_name(n).is_some())
            {
                s.vlog_segments += 1;
                if let Ok(f) = self.storage.open(n) {
                    s.vlog_bytes += f.len().unwrap_or(0);
                }
            }
        }
        s.nand = self.storage.nand_stats();
        self.reap_snapshots();
        s.snapshots = self.snapshots.count();
        if let Some(rc) = &self.row_cache {
            let (hits, misses) = (s.row_cache.hits, s.row_cache.misses);
            s.row_cache = rc.stats();
            (s.row_cache.hits, s.row_cache.misses) = (hits, misses);
        }
        s
    }
}
