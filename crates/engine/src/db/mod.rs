//! The database facade: the write path (value log, then memtable), the read path (memtables,
//! then tables newest to oldest, then the value log), background flush and compaction, and
//! recovery.

mod gc;

pub use gc::GcStats;

use crate::batch::{BatchOp, WriteBatch};
use crate::compaction::{self, CompactionTask, OutputParams, Retention, TableSink};
use crate::error::{Error, IoContext, Result};
use crate::iter::{KeyList, SnapshotScan};
use crate::key::{self, IndexValue, Kind, Nsid, SeqNo, DEFAULT_NS, TRAILER_LEN};
use crate::memtable::{MemValue, Memtable};
use crate::options::{Layout, Options, StorageKind, WriteOptions};
use crate::stats::{
    level_step, step_level, Counters, DbStats, LevelStats, NamespaceInfo, NamespaceStats, STEP_L0,
    STEP_MEMTABLE, STEP_RUNS,
};
use crate::storage::{NandStorage, PosixStorage, StorageRef};
use crate::table::{filter::filter_hash, parse_table_name, table_name, BlockCache, TableProps};
use crate::version::{
    Namespaces, Recovered, TableCtx, TableHandle, Version, VersionEdit, VersionSet, RUNS,
};
use crate::vlog::{
    self, AppendError, EncodedWrite, Liveness, LogSync, RollError, VlogReader, VlogWriter,
};
use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::VecDeque;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Memtables plus the version they sit on: what a read needs, swapped as one.
struct SuperVersion {
    mem: Arc<Memtable>,
    /// Frozen memtables waiting for flush, newest first.
    imm: Vec<Arc<Frozen>>,
    version: Arc<Version>,
}

/// Work for a background thread.
enum Job {
    Flush,
    /// Per namespace: L0 into runs, beside a tree compaction.
    Split(CompactionTask, Arc<Version>),
    Compact(CompactionTask, Arc<Version>),
    /// Collect one value-log segment.
    Gc(u64),
}

/// Where a lookup found the newest version of a key.
struct Hit {
    /// The search step that answered (`stats::STEP_*`, `stats::level_step`).
    step: usize,
    kind: Kind,
    /// The record in the value log (of a put, or of a delete still in a memtable).
    addr: Option<key::ValueAddr>,
    /// The value when it is at hand: memtable or inline copy.
    value: Option<Bytes>,
}

/// A memtable that takes no more writes, with what its flush needs from the value log.
struct Frozen {
    mem: Arc<Memtable>,
    /// Value-log position just past its last record: replay starts there once it is flushed.
    log_end: (u64, u64),
    /// The segment holding its newest records, synced before the flush is recorded (the
    /// table will point at them).
    log_sync: LogSync,
}

struct WriterState {
    vlog: VlogWriter,
    next_seq: SeqNo,
    /// Scratch for joining the records of a commit group into one append.
    buf: Vec<u8>,
}

/// A write waiting in the commit queue. The first in the queue leads: it writes the records
/// of every waiting write with one append (and one sync), then hands each its result.
struct PendingWrite {
    records: Mutex<Option<EncodedWrite>>,
    /// The writer waits for its records to be synced.
    sync: bool,
    result: Mutex<Option<Result<()>>>,
}

/// A commit group stops growing at this many bytes, so small writes do not wait long behind
/// big ones.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// After a background job failed for want of space, the next attempt waits this long
/// (unless a writer asks for one sooner).
const NO_SPACE_RETRY: Duration = Duration::from_millis(200);
/// How long a writer waits for a background retry before it fails with `NoSpace`.
const NO_SPACE_WAIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct BgState {
    flushing: bool,
    /// An L0 split runs (per namespace), or a manual compaction owns L0.
    splitting: bool,
    /// A compaction of the trees runs (in one shared tree, L0 too).
    compacting: bool,
    /// Manual compactions running or waiting for the slots: automatic ones stay out of
    /// their way.
    manual: usize,
    /// Holds both slots for a manual compaction (or a namespace's destruction).
    manual_running: bool,
    error: Option<String>,
    /// A background job failed for want of space: writes that must wait for background
    /// work fail with `NoSpace` instead, and jobs are retried from `retry_at` on.
    no_space: Option<String>,
    retry_at: Option<std::time::Instant>,
    /// Background jobs that failed for want of space, so far.
    no_space_failures: u64,
    shutdown: bool,
    cursors: compaction::Cursors,
    /// Someone waits for the tree to settle: L0 and runs go down even below their triggers.
    drain: bool,
    gc_running: bool,
    /// Something may have made a segment worth collecting since the last look.
    gc_check: bool,
}

/// A live namespace as reads and writes see it.
struct NsEntry {
    name: String,
    /// Its writes and point lookups.
    counters: Arc<Counters>,
    /// Its key listings, apart so per-get figures come from gets alone.
    list_counters: Arc<Counters>,
}

impl NsEntry {
    fn new(name: &str, page_size: u64) -> NsEntry {
        NsEntry {
            name: name.to_string(),
            counters: Arc::new(Counters::new(page_size)),
            list_counters: Arc::new(Counters::new(page_size)),
        }
    }
}

/// The namespaces, mirrored from the manifest for the hot paths.
struct NsState {
    live: HashMap<Nsid, Arc<NsEntry>>,
    /// Destroyed ids: their entries are dropped by flushes and compactions.
    dead: Arc<HashSet<Nsid>>,
    /// Counters of destroyed namespaces, kept for the database totals.
    retired: Vec<Arc<Counters>>,
}

struct Inner {
    opts: Options,
    storage: StorageRef,
    /// Counters of background work (flush, compaction); namespaces have their own.
    counters: Arc<Counters>,
    namespaces: RwLock<NsState>,
    vlog_reader: VlogReader,
    liveness: Liveness,
    versions: Mutex<VersionSet>,
    sv: RwLock<Arc<SuperVersion>>,
    writer: Mutex<WriterState>,
    queue: Mutex<VecDeque<Arc<PendingWrite>>>,
    queue_cv: Condvar,
    /// Highest seqno whose write is complete; reads see everything at or below it.
    visible_seq: AtomicU64,
    bg: Mutex<BgState>,
    /// Wakes background threads.
    bg_cv: Condvar,
    /// Wakes threads waiting for background work to finish.
    done_cv: Condvar,
    closed: AtomicBool,
    opened: std::time::Instant,
    /// Milliseconds from `opened` to the last write.
    last_write_ms: AtomicU64,
    /// Compactions running in each slot (split, tree), counted where they run: a check
    /// that the slots' bookkeeping never lets two share a slot.
    in_slot: [AtomicU64; 2],
    /// Times a compaction started while another held its slot (a bug if ever above 0).
    slot_overlaps: AtomicU64,
    /// The last manifest write failed: its edit may or may not be on disk.
    manifest_in_doubt: AtomicBool,
}

/// Marks a compaction as running in its slots for as long as it lives.
struct SlotGuard<'a> {
    inner: &'a Inner,
    slots: [bool; 2],
}

impl<'a> SlotGuard<'a> {
    fn enter(inner: &'a Inner, task: &CompactionTask) -> SlotGuard<'a> {
        let split = task.output_level() == RUNS
            || (task.level == 0 && inner.opts.layout == Layout::PerNamespace);
        let tree = task.output_level() != RUNS;
        let slots = [split, tree];
        for (i, _) in slots.iter().enumerate().filter(|(_, on)| **on) {
            if inner.in_slot[i].fetch_add(1, Ordering::AcqRel) > 0 {
                inner.slot_overlaps.fetch_add(1, Ordering::Relaxed);
                tracing::error!("two compactions share a slot");
            }
        }
        SlotGuard { inner, slots }
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        for (i, _) in self.slots.iter().enumerate().filter(|(_, on)| **on) {
            self.inner.in_slot[i].fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A key-value store. Cheap to share between threads (`&Db` is enough).
pub struct Db {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Keeps other processes out of the directory while this instance is open.
    _lock: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Db {
    /// Opens (or creates) the database in directory `path`, on the storage `options.storage`
    /// names.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let dir = path.as_ref();
        let posix: StorageRef =
            Arc::new(PosixStorage::new(dir).map_err(|e| Error::io(dir.display().to_string(), e))?);
        let storage: StorageRef = match &options.storage {
            StorageKind::Posix => posix,
            StorageKind::Nand(cfg) => Arc::new(NandStorage::new(posix, cfg.clone())),
        };
        Db::open_with_storage(storage, options)
    }

    /// Opens (or creates) the database held by `storage`.
    pub fn open_with_storage(storage: StorageRef, options: Options) -> Result<Db> {
        options.validate()?;
        let lock = storage.lock().ctx("LOCK")?;
        let page_size = match &options.storage {
            StorageKind::Nand(cfg) => cfg.page_size as u64,
            StorageKind::Posix => 4096,
        };
        let counters = Arc::new(Counters::new(page_size));
        let ctx = TableCtx {
            storage: storage.clone(),
            cache: Arc::new(BlockCache::new(options.cache_bytes)),
            counters: counters.clone(),
        };
        let (versions, mem, vlog) = recover(&ctx, &options)?;
        let namespaces = NsState {
            live: versions
                .namespaces
                .live
                .iter()
                .map(|(id, name)| (*id, Arc::new(NsEntry::new(name, page_size))))
                .collect(),
            dead: Arc::new(versions.namespaces.destroyed.iter().copied().collect()),
            retired: Vec::new(),
        };
        let last_seq = versions.last_seq.max(mem.max_seq());
        let version = versions.current();
        let inner = Arc::new(Inner {
            vlog_reader: VlogReader::new(storage.clone()),
            liveness: Liveness::seeded(&versions.vlog_dead),
            storage,
            counters,
            namespaces: RwLock::new(namespaces),
            versions: Mutex::new(versions),
            sv: RwLock::new(Arc::new(SuperVersion {
                mem: Arc::new(Memtable::new()),
                imm: Vec::new(),
                version,
            })),
            writer: Mutex::new(WriterState {
                vlog,
                next_seq: last_seq + 1,
                buf: Vec::new(),
            }),
            queue: Mutex::new(VecDeque::new()),
            queue_cv: Condvar::new(),
            visible_seq: AtomicU64::new(last_seq),
            bg: Mutex::new(BgState {
                // Dead bytes recovered from the manifest may already make a segment worth it.
                gc_check: true,
                ..BgState::default()
            }),
            bg_cv: Condvar::new(),
            done_cv: Condvar::new(),
            closed: AtomicBool::new(false),
            opened: std::time::Instant::now(),
            last_write_ms: AtomicU64::new(0),
            in_slot: Default::default(),
            slot_overlaps: AtomicU64::new(0),
            manifest_in_doubt: AtomicBool::new(false),
            opts: options,
        });
        let mut threads = Vec::new();
        for i in 0..inner.opts.background_threads {
            let inner = inner.clone();
            let t = std::thread::Builder::new()
                .name(format!("cerberus-bg-{i}"))
                .spawn(move || inner.background_loop())
                .map_err(|e| Error::io("background thread", e))?;
            threads.push(t);
        }
        Ok(Db {
            inner,
            threads: Mutex::new(threads),
            _lock: lock,
        })
    }

    /// Writes into the default namespace (0).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_ns(DEFAULT_NS, key, value)
    }

    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.delete_ns(DEFAULT_NS, key)
    }

    /// Applies every write of `batch`, or none of them, even across a crash.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_ns(DEFAULT_NS, batch)
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        self.get_ns(DEFAULT_NS, key)
    }

    /// [`Db::put`] with per-write options (`sync`).
    pub fn put_opt(&self, key: &[u8], value: &[u8], opts: &WriteOptions) -> Result<()> {
        self.put_ns_opt(DEFAULT_NS, key, value, opts)
    }

    /// [`Db::delete`] with per-write options (`sync`).
    pub fn delete_opt(&self, key: &[u8], opts: &WriteOptions) -> Result<()> {
        self.delete_ns_opt(DEFAULT_NS, key, opts)
    }

    /// [`Db::write`] with per-write options (`sync`).
    pub fn write_opt(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        self.write_ns_opt(DEFAULT_NS, batch, opts)
    }

    /// Whether `key` of the default namespace has a value.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        self.contains_ns(DEFAULT_NS, key)
    }

    /// Keys of the default namespace; see [`Db::list_keys_ns`].
    pub fn list_keys(&self, start: &[u8], start_exclusive: bool, limit: usize) -> Result<KeyList> {
        self.list_keys_ns(DEFAULT_NS, start, start_exclusive, limit)
    }

    pub fn put_ns(&self, ns: Nsid, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_ns_opt(ns, key, value, &WriteOptions::default())
    }

    pub fn delete_ns(&self, ns: Nsid, key: &[u8]) -> Result<()> {
        self.delete_ns_opt(ns, key, &WriteOptions::default())
    }

    /// [`Db::put_ns`] with per-write options: with `opts.sync` it returns only once the
    /// write is durable.
    pub fn put_ns_opt(
        &self,
        ns: Nsid,
        key: &[u8],
        value: &[u8],
        opts: &WriteOptions,
    ) -> Result<()> {
        self.inner.write(ns, &[(Kind::Put, key, value)], opts.sync)
    }

    /// [`Db::delete_ns`] with per-write options (`sync`).
    pub fn delete_ns_opt(&self, ns: Nsid, key: &[u8], opts: &WriteOptions) -> Result<()> {
        self.inner.write(ns, &[(Kind::Delete, key, &[])], opts.sync)
    }

    pub fn get_ns(&self, ns: Nsid, key: &[u8]) -> Result<Option<Bytes>> {
        self.inner.get(ns, key)
    }

    /// Whether `key` of namespace `ns` has a value, found like a get but without reading
    /// the value (so never from the value log).
    pub fn contains_ns(&self, ns: Nsid, key: &[u8]) -> Result<bool> {
        self.inner.contains(ns, key)
    }

    /// Up to `limit` keys of namespace `ns` in byte order, from `start` on (empty = the
    /// first key), or strictly after `start` if `start_exclusive`. Deleted keys are left
    /// out; `more` says whether another key follows the last one returned. The listing is
    /// one consistent snapshot and reads no values. A destroyed or unknown namespace gives
    /// [`Error::UnknownNamespace`].
    pub fn list_keys_ns(
        &self,
        ns: Nsid,
        start: &[u8],
        start_exclusive: bool,
        limit: usize,
    ) -> Result<KeyList> {
        self.inner.list_keys(ns, start, start_exclusive, limit)
    }

    /// Applies every write of `batch` to namespace `ns`, or none of them, even across a
    /// crash.
    pub fn write_ns(&self, ns: Nsid, batch: WriteBatch) -> Result<()> {
        self.write_ns_opt(ns, batch, &WriteOptions::default())
    }

    /// [`Db::write_ns`] with per-write options: with `opts.sync` it returns only once the
    /// batch is durable.
    pub fn write_ns_opt(&self, ns: Nsid, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        let ops: Vec<(Kind, &[u8], &[u8])> = batch
            .ops
            .iter()
            .map(|op| match op {
                BatchOp::Put { key, value } => (Kind::Put, key.as_slice(), value.as_slice()),
                BatchOp::Delete { key } => (Kind::Delete, key.as_slice(), &[][..]),
            })
            .collect();
        self.inner.write(ns, &ops, opts.sync)
    }

    /// Syncs the value log: every write acknowledged so far survives a crash.
    pub fn sync_log(&self) -> Result<()> {
        self.inner.sync_log()
    }

    /// Creates a namespace and returns its id. Ids are never reused.
    pub fn create_namespace(&self, name: &str) -> Result<Nsid> {
        self.inner.create_namespace(name)
    }

    /// Destroys a namespace: its own tables go at once, its entries in the shared memtable
    /// and L0 become unreachable at once and are dropped by the next flush or compaction.
    /// The default namespace (0) cannot be destroyed.
    pub fn destroy_namespace(&self, ns: Nsid) -> Result<()> {
        self.inner.destroy_namespace(ns)
    }

    /// Live namespaces, by id.
    pub fn list_namespaces(&self) -> Vec<NamespaceInfo> {
        let state = self.inner.namespaces.read();
        let mut v: Vec<_> = state
            .live
            .iter()
            .map(|(id, e)| NamespaceInfo {
                nsid: *id,
                name: e.name.clone(),
            })
            .collect();
        v.sort_by_key(|i| i.nsid);
        v
    }

    /// Counters and tree shape of one namespace.
    pub fn namespace_stats(&self, ns: Nsid) -> Result<NamespaceStats> {
        self.inner.namespace_stats(ns)
    }

    /// Flushes, then waits until no flush, compaction or value-log GC is pending or running,
    /// as db_bench's `waitforcompaction` does: the tree is in the shape background work leaves
    /// it in, with nothing in the shared L0 or in namespace runs.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_for_compactions()
    }

    /// Collects the value log now: seals the active segment, flushes, then rewrites the live
    /// records of every segment holding dead ones (overwritten, deleted or destroyed) and
    /// deletes those segments.
    pub fn gc_value_log(&self) -> Result<GcStats> {
        self.inner.gc_value_log()
    }

    /// Writes the memtable to an L0 table and waits until every frozen memtable is flushed.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Compacts, in every live namespace, every table holding keys in `[start, end]`
    /// (`None` = unbounded) down to the deepest level that has data.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(None, start, end)
    }

    /// [`Db::compact_range`] in namespace `ns` only.
    pub fn compact_range_ns(
        &self,
        ns: Nsid,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        self.inner.compact_range(Some(ns), start, end)
    }

    pub fn compact_all(&self) -> Result<()> {
        self.compact_range(None, None)
    }

    /// Makes every write durable, waits for background work and stops it. Later calls fail
    /// with [`Error::Closed`]. Dropping a `Db` closes it too.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let synced = self.inner.writer.lock().vlog.sync();
        {
            let mut bg = self.inner.bg.lock();
            bg.shutdown = true;
            self.inner.bg_cv.notify_all();
            self.inner.done_cv.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        synced
    }

    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// The storage this database lives on.
    pub fn storage(&self) -> &StorageRef {
        &self.inner.storage
    }

    /// Times a compaction started while another held the same slot: always 0 unless the
    /// scheduling is broken (tests check it).
    #[doc(hidden)]
    pub fn compaction_slot_overlaps(&self) -> u64 {
        self.inner.slot_overlaps.load(Ordering::Relaxed)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Reads the manifest, replays the value log into a memtable, flushes it, and starts a new
/// manifest and a new value-log segment.
fn recover(ctx: &TableCtx, opts: &Options) -> Result<(VersionSet, Memtable, VlogWriter)> {
    let storage = ctx.storage.as_ref();
    let Recovered {
        mut version,
        namespaces,
        mut next_file,
        mut last_seq,
        log_start,
        mut vlog_dead,
    } = VersionSet::recover(ctx, opts.num_levels)?.unwrap_or_else(|| Recovered {
        version: Version::new(opts.num_levels),
        namespaces: Namespaces::default(),
        next_file: 1,
        last_seq: 0,
        log_start: (0, 0),
        vlog_dead: Default::default(),
    });
    let names = storage.list().ctx("database directory")?;
    let mut segments = Vec::new();
    let mut tables = Vec::new();
    for name in &names {
        let id = if let Some(id) = vlog::parse_segment_name(name) {
            segments.push(id);
            id
        } else if let Some(id) = parse_table_name(name) {
            tables.push(id);
            id
        } else {
            name.strip_prefix("MANIFEST-")
                .and_then(|n| n.parse().ok())
                .unwrap_or_default()
        };
        next_file = next_file.max(id + 1);
    }
    for id in version.table_ids() {
        if !tables.contains(&id) {
            return Err(Error::corruption(
                table_name(id),
                0,
                "table named by the manifest is missing",
            ));
        }
    }
    let live: Vec<u64> = version.table_ids().collect();
    for id in tables.iter().filter(|id| !live.contains(id)) {
        // Output of a flush or compaction that never reached the manifest.
        let _ = storage.delete(&table_name(*id));
    }
    segments.sort_unstable();
    // A segment too short for its header was being created when a write failed or the
    // power went: it never held a record.
    let mut kept = Vec::with_capacity(segments.len());
    for seg in segments {
        let name = vlog::segment_name(seg);
        let len = storage.open(&name).and_then(|f| f.len()).ctx(&name)?;
        if len < vlog::SEGMENT_HEADER_LEN {
            storage.delete(&name).ctx(&name)?;
        } else {
            kept.push(seg);
        }
    }
    let segments = kept;
    // Sums for segments GC has deleted (or versions dropped after their segment went).
    vlog_dead.retain(|seg, _| segments.binary_search(seg).is_ok());
    let replay: Vec<u64> = segments
        .iter()
        .copied()
        .filter(|&s| s >= log_start.0)
        .collect();
    let mem = Memtable::new();
    let flushed_seq = last_seq;
    for (i, &seg) in replay.iter().enumerate() {
        let start = if seg == log_start.0 { log_start.1 } else { 0 };
        let is_last = i + 1 == replay.len();
        let end = vlog::replay_segment(storage, seg, start, is_last, |r| {
            if r.seq > flushed_seq {
                let mut user = Vec::with_capacity(4 + r.key.len());
                user.extend_from_slice(&r.nsid.to_be_bytes());
                user.extend_from_slice(&r.key);
                mem.insert(
                    Bytes::from(user),
                    r.seq,
                    MemValue {
                        kind: r.kind,
                        value: r.value,
                        addr: r.addr,
                    },
                );
            }
            Ok(())
        })?;
        if end.dropped_tail {
            tracing::warn!(
                segment = seg,
                end = end.end,
                "dropped a torn value-log tail"
            );
        }
    }
    if !mem.is_empty() {
        let ids = std::cell::Cell::new(next_file);
        let alloc = || ids.replace(ids.get() + 1);
        let params = flush_params(opts);
        let dead: HashSet<Nsid> = namespaces.destroyed.iter().copied().collect();
        let (props, dropped) = flush_memtable(storage, &mem, params, opts, &dead, &alloc)?;
        for (seg, bytes) in dead_bytes_by_segment(&dropped) {
            *vlog_dead.entry(seg).or_default() += bytes;
        }
        next_file = ids.get();
        storage.sync_dir().ctx("database directory")?;
        last_seq = last_seq.max(mem.max_seq());
        let edit = VersionEdit {
            added: props.into_iter().map(|p| (0, p)).collect(),
            ..VersionEdit::default()
        };
        version = version.apply(&edit, ctx).0;
    }
    // The manifest points replay at the new segment before the segment exists: a crash in
    // between leaves nothing to replay, never an old torn tail followed by a newer segment.
    let segment = next_file;
    next_file += 1;
    let versions = VersionSet::create(
        ctx.clone(),
        Recovered {
            version,
            namespaces,
            next_file,
            last_seq,
            log_start: (segment, vlog::SEGMENT_HEADER_LEN),
            vlog_dead,
        },
    )?;
    let writer = VlogWriter::create(ctx.storage.clone(), segment)?;
    Ok((versions, Memtable::new(), writer))
}

fn level_stats(tables: &[&Arc<TableHandle>]) -> LevelStats {
    LevelStats {
        tables: tables.len(),
        bytes: tables.iter().map(|t| t.props.size).sum(),
    }
}

/// Times the steps of one get for the cost model. Steps that read nothing are counted
/// without reading the clock: their time, a few comparisons, goes to the next timed step.
struct StepClock<'a> {
    c: &'a Counters,
    last: std::time::Instant,
}

impl<'a> StepClock<'a> {
    fn new(c: &'a Counters) -> Self {
        StepClock {
            c,
            last: std::time::Instant::now(),
        }
    }

    fn lap(&mut self) -> u64 {
        let now = std::time::Instant::now();
        let ns = now.duration_since(self.last).as_nanos() as u64;
        self.last = now;
        ns
    }

    fn hit(&mut self, step: usize) {
        let ns = self.lap();
        Counters::add(&self.c.step_hits[step], 1);
        Counters::add(&self.c.step_hit_nanos[step], ns);
    }

    /// The get passed `step`; `timed` if it read anything there.
    fn miss(&mut self, step: usize, timed: bool) {
        Counters::add(&self.c.step_misses[step], 1);
        if timed {
            let ns = self.lap();
            Counters::add(&self.c.step_miss_nanos[step], ns);
        }
    }
}

/// Value-log bytes of `addrs`, per segment, as a manifest edit records them.
fn dead_bytes_by_segment(addrs: &[key::ValueAddr]) -> Vec<(u64, u64)> {
    let mut sums: std::collections::BTreeMap<u64, u64> = Default::default();
    for a in addrs {
        *sums.entry(a.segment).or_default() += u64::from(a.len);
    }
    sums.into_iter().collect()
}

/// A flush writes one L0 table holding every namespace.
fn flush_params(opts: &Options) -> OutputParams {
    OutputParams {
        split_by_namespace: false,
        ..output_params(opts, u64::MAX)
    }
}

fn output_params(opts: &Options, target_table_bytes: u64) -> OutputParams {
    OutputParams {
        block_size: opts.block_size,
        bits_per_key: opts.filter_bits_per_key,
        target_table_bytes,
        split_by_namespace: opts.layout == Layout::PerNamespace,
    }
}

/// Writes a memtable as L0 table(s); drops versions shadowed within it and the entries of
/// destroyed namespaces.
fn flush_memtable(
    storage: &dyn crate::storage::Storage,
    mem: &Memtable,
    params: OutputParams,
    opts: &Options,
    dead: &HashSet<Nsid>,
    new_file: &dyn Fn() -> u64,
) -> Result<(Vec<TableProps>, Vec<key::ValueAddr>)> {
    let mut sink = TableSink::new(storage, params, new_file);
    let mut dropped = Vec::new();
    let mut rule = Retention::new(SeqNo::MAX);
    let mut ikey = Vec::new();
    let mut val = Vec::new();
    for (k, v) in mem.iter() {
        ikey.clear();
        ikey.extend_from_slice(&k.user);
        key::push_trailer(&mut ikey, k.seq, v.kind);
        let dead_ns = !dead.is_empty() && dead.contains(&key::ikey_nsid(&k.user));
        if dead_ns || rule.drop_entry(&ikey, |_| false) {
            if v.kind == Kind::Put {
                dropped.push(v.addr);
            }
            continue;
        }
        val.clear();
        match v.kind {
            Kind::Delete => IndexValue::Tombstone.encode(&mut val),
            Kind::Put => IndexValue::Addr {
                addr: v.addr,
                inline: (v.value.len() < opts.inline_value_threshold).then(|| v.value.clone()),
            }
            .encode(&mut val),
        }
        sink.add(&ikey, &val)?;
    }
    Ok((sink.finish()?, dropped))
}

impl Inner {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(e) = &self.bg.lock().error {
            return Err(Error::Background(e.clone()));
        }
        Ok(())
    }

    fn super_version(&self) -> Arc<SuperVersion> {
        self.sv.read().clone()
    }

    fn new_file_number(&self) -> u64 {
        self.versions.lock().new_file_number()
    }

    /// No write for `idle_settle_ms`.
    fn idle(&self) -> bool {
        let ms = self.opts.idle_settle_ms;
        let now = self.opened.elapsed().as_millis() as u64;
        ms > 0 && now.saturating_sub(self.last_write_ms.load(Ordering::Relaxed)) >= ms
    }

    /// A background job failed: for want of space it is retried later, anything else makes
    /// the database read-only.
    fn fail_job(&self, e: &Error) {
        if e.is_no_space() {
            self.set_no_space(e);
        } else {
            self.set_bg_error(e);
        }
    }

    fn set_bg_error(&self, e: &Error) {
        let mut bg = self.bg.lock();
        if bg.error.is_none() {
            tracing::error!(error = %e, "background error: database is now read-only");
            bg.error = Some(e.to_string());
        }
        self.done_cv.notify_all();
    }

    /// Writes `ops` to `ns` through group commit; `sync` asks for a synced log even when
    /// `Options::sync` is off.
    fn write(&self, ns: Nsid, ops: &[(Kind, &[u8], &[u8])], sync: bool) -> Result<()> {
        for (_, k, v) in ops {
            if k.len() > self.opts.max_key_size {
                return Err(Error::KeyTooLarge {
                    len: k.len(),
                    limit: self.opts.max_key_size,
                });
            }
            if v.len() > self.opts.max_value_size {
                return Err(Error::ValueTooLarge {
                    len: v.len(),
                    limit: self.opts.max_value_size,
                });
            }
        }
        let counters = self.ns_counters(ns)?;
        if ops.is_empty() {
            return Ok(());
        }
        self.check_open()?;
        self.settle_manifest()?;
        let result = self.commit(ns, ops, sync);
        if result.is_ok() {
            let puts = ops.iter().filter(|(k, ..)| *k == Kind::Put).count() as u64;
            Counters::add(&counters.puts, puts);
            Counters::add(&counters.deletes, ops.len() as u64 - puts);
        }
        result
    }

    /// The counters of a live namespace, or `UnknownNamespace`.
    fn ns_counters(&self, ns: Nsid) -> Result<Arc<Counters>> {
        Ok(self.ns_entry(ns)?.counters.clone())
    }

    fn ns_entry(&self, ns: Nsid) -> Result<Arc<NsEntry>> {
        match self.namespaces.read().live.get(&ns) {
            Some(e) => Ok(e.clone()),
            None => Err(Error::UnknownNamespace(ns)),
        }
    }

    /// Queues a write for group commit and returns its outcome.
    fn commit(&self, ns: Nsid, ops: &[(Kind, &[u8], &[u8])], sync: bool) -> Result<()> {
        let me = Arc::new(PendingWrite {
            records: Mutex::new(Some(EncodedWrite::new(ns, ops))),
            sync,
            result: Mutex::new(None),
        });
        let mut queue = self.queue.lock();
        queue.push_back(me.clone());
        loop {
            if let Some(r) = me.result.lock().take() {
                return r;
            }
            if queue.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            self.queue_cv.wait(&mut queue);
        }
        // This write leads a group: itself and the writes queued behind it.
        let mut group = Vec::new();
        let mut bytes = 0;
        // One sync covers the whole group, so sync writes share it.
        let mut sync = false;
        for p in queue.iter() {
            let mut records = p.records.lock();
            let len = records.as_ref().map_or(0, |r| r.buf.len());
            if !group.is_empty() && bytes + len > MAX_GROUP_BYTES {
                break;
            }
            bytes += len;
            sync |= p.sync;
            group.extend(records.take());
        }
        let n = group.len();
        drop(queue);
        let result = self.commit_group(group, bytes, sync);
        let mut queue = self.queue.lock();
        for _ in 0..n {
            if let Some(p) = queue.pop_front() {
                if !Arc::ptr_eq(&p, &me) {
                    let r = match &result {
                        Ok(()) => Ok(()),
                        Err(e) => Err(e.duplicate()),
                    };
                    *p.result.lock() = Some(r);
                }
            }
        }
        self.queue_cv.notify_all();
        result
    }

    /// Appends the records of a group to the value log (one append, one sync if `sync` or
    /// `Options::sync`) and inserts them into the memtable.
    fn commit_group(&self, group: Vec<EncodedWrite>, bytes: usize, sync: bool) -> Result<()> {
        let mut guard = self.writer.lock();
        let w = &mut *guard;
        let now = self.opened.elapsed().as_millis() as u64;
        self.last_write_ms.store(now, Ordering::Relaxed);
        self.make_room(w)?;
        self.append_locked(w, group, bytes, sync)
    }

    /// Stamps, appends (and syncs, if `sync` or `Options::sync`) the records of `group` and
    /// inserts them into the memtable; the caller holds the writer lock and made room.
    fn append_locked(
        &self,
        w: &mut WriterState,
        mut group: Vec<EncodedWrite>,
        bytes: usize,
        sync: bool,
    ) -> Result<()> {
        let records: usize = group.iter().map(|g| g.spans.len()).sum();
        let first = w.next_seq;
        if first + records as u64 > key::MAX_SEQ {
            return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
        }
        let mut seq = first;
        for g in &mut group {
            g.stamp(seq);
            seq += g.spans.len() as u64;
        }
        if w.vlog.needs_roll(bytes, self.opts.vlog_segment_bytes) {
            let id = self.new_file_number();
            self.roll_log(w, id)?;
        }
        let appended = if let [one] = group.as_slice() {
            w.vlog.append(&one.buf)
        } else {
            w.buf.clear();
            for g in &group {
                w.buf.extend_from_slice(&g.buf);
            }
            w.vlog.append(&w.buf)
        };
        let mut base = match appended {
            Ok(b) => b,
            // The log is as it was: a full disk fails this write only.
            Err(AppendError::Clean(e)) if e.is_no_space() => return Err(e),
            Err(e) => {
                // An I/O error, or part of the records left at the log's end: accept no
                // more writes, so that part stays the torn tail that recovery drops.
                let e = e.into_error();
                self.set_bg_error(&e);
                return Err(e);
            }
        };
        if sync || self.opts.sync {
            if let Err(e) = w.vlog.sync() {
                // A failed sync proves nothing about what reached the disk, and a later one
                // that succeeds would not either: the log is in doubt for good.
                self.set_bg_error(&e);
                return Err(e);
            }
        }
        let segment = w.vlog.segment();
        let mem = self.super_version().mem.clone();
        let mut seq = first;
        for g in group {
            let buf = Bytes::from(g.buf);
            for s in &g.spans {
                let key = &buf[s.key.clone()];
                let mut user = Vec::with_capacity(4 + key.len());
                user.extend_from_slice(&g.nsid.to_be_bytes());
                user.extend_from_slice(key);
                let value = if s.kind == Kind::Put {
                    buf.slice(s.value.clone())
                } else {
                    Bytes::new()
                };
                let addr = key::ValueAddr {
                    segment,
                    offset: base + s.at as u64,
                    len: s.len as u32,
                };
                mem.insert(
                    Bytes::from(user),
                    seq,
                    MemValue {
                        kind: s.kind,
                        value,
                        addr,
                    },
                );
                seq += 1;
            }
            base += buf.len() as u64;
        }
        w.next_seq = seq;
        self.visible_seq.store(seq - 1, Ordering::Release);
        Ok(())
    }

    /// Continues the value log in a new segment `id`. Failing to create it (a full disk)
    /// fails the write only; failing to sync the old one leaves the log in doubt for good.
    fn roll_log(&self, w: &mut WriterState, id: u64) -> Result<()> {
        match w.vlog.roll(id) {
            Ok(()) => Ok(()),
            // The writer goes on in the old segment; a half-made new one holds no record.
            Err(RollError::Create(e)) => Err(e),
            Err(RollError::Sync(e)) => {
                self.set_bg_error(&e);
                Err(e)
            }
        }
    }

    /// Makes sure the memtable has room, freezing it or waiting for background work.
    fn make_room(&self, w: &mut WriterState) -> Result<()> {
        let mut slowed = false;
        loop {
            let sv = self.super_version();
            let (l0, runs, o) = (sv.version.levels[0].len(), sv.version.max_runs, &self.opts);
            let auto = o.auto_compaction;
            if auto && (l0 >= o.l0_stop_trigger || runs >= o.run_stop_trigger) {
                Counters::add(&self.counters.write_stalls, 1);
                self.wait_for_background()?;
                continue;
            }
            let slow = l0 >= o.l0_slowdown_trigger || runs >= o.run_slowdown_trigger;
            if auto && slow && !slowed {
                Counters::add(&self.counters.write_slowdowns, 1);
                slowed = true;
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            if sv.mem.approximate_bytes() < self.opts.memtable_bytes {
                return Ok(());
            }
            if sv.imm.len() >= self.opts.max_immutable_memtables {
                Counters::add(&self.counters.write_stalls, 1);
                self.wait_for_background()?;
                continue;
            }
            return self.freeze_memtable(w);
        }
    }

    fn wait_for_background(&self) -> Result<()> {
        let mut bg = self.bg.lock();
        if let Some(e) = &bg.error {
            return Err(Error::Background(e.clone()));
        }
        if bg.shutdown {
            return Err(Error::Closed);
        }
        if bg.no_space.is_some() {
            // Space may be back: have the background retry now, and give up only if that
            // attempt fails too (or none comes soon).
            let failures = bg.no_space_failures;
            bg.retry_at = None;
            self.bg_cv.notify_all();
            let deadline = std::time::Instant::now() + NO_SPACE_WAIT;
            while bg.no_space.is_some()
                && bg.no_space_failures == failures
                && bg.error.is_none()
                && !bg.shutdown
                && std::time::Instant::now() < deadline
            {
                self.done_cv.wait_for(&mut bg, Duration::from_millis(20));
            }
            if let Some(why) = &bg.no_space {
                return Err(Error::NoSpace {
                    file: "database".into(),
                    source: std::io::Error::new(std::io::ErrorKind::StorageFull, why.clone()),
                });
            }
            return Ok(());
        }
        self.bg_cv.notify_all();
        self.done_cv.wait_for(&mut bg, Duration::from_millis(50));
        Ok(())
    }

    /// A background job failed for want of space: nothing is lost, it is retried later.
    fn set_no_space(&self, e: &Error) {
        let mut bg = self.bg.lock();
        if bg.no_space.is_none() {
            tracing::warn!(error = %e, "out of space: writes that need background work fail until space returns");
        }
        bg.no_space = Some(e.to_string());
        bg.no_space_failures += 1;
        bg.retry_at = Some(std::time::Instant::now() + NO_SPACE_RETRY);
        self.done_cv.notify_all();
    }

    /// Turns the memtable into a frozen one and starts a new one.
    fn freeze_memtable(&self, w: &mut WriterState) -> Result<()> {
        let mut sv = self.sv.write();
        if sv.mem.is_empty() {
            return Ok(());
        }
        let frozen = Frozen {
            mem: sv.mem.clone(),
            log_end: w.vlog.position(),
            log_sync: w.vlog.sync_handle(),
        };
        let mut imm = vec![Arc::new(frozen)];
        imm.extend(sv.imm.iter().cloned());
        *sv = Arc::new(SuperVersion {
            mem: Arc::new(Memtable::new()),
            imm,
            version: sv.version.clone(),
        });
        drop(sv);
        let _bg = self.bg.lock();
        self.bg_cv.notify_all();
        Ok(())
    }

    fn sync_log(&self) -> Result<()> {
        self.check_open()?;
        let mut w = self.writer.lock();
        if let Err(e) = w.vlog.sync() {
            // What a failed sync left on disk is unknown, and a later sync could succeed
            // without it: stop writing, as a failed sync in the write path does.
            self.set_bg_error(&e);
            return Err(e);
        }
        Ok(())
    }

    /// `lookup` counted as a get in the namespace's counters.
    fn counted_lookup(&self, ns: Nsid, key: &[u8], c: &Counters) -> Result<Option<Hit>> {
        Counters::add(&c.gets, 1);
        let hit = self.lookup(ns, key, c)?;
        match hit.as_ref().map(|h| h.step) {
            None => Counters::add(&c.gets_not_found, 1),
            Some(STEP_MEMTABLE) => Counters::add(&c.gets_memtable, 1),
            Some(STEP_RUNS) => Counters::add(&c.gets_runs, 1),
            Some(s) => Counters::add(&c.gets_by_level[step_level(s)], 1),
        }
        Ok(hit)
    }

    fn contains(&self, ns: Nsid, key: &[u8]) -> Result<bool> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let c = &*self.ns_counters(ns)?;
        Ok(self
            .counted_lookup(ns, key, c)?
            .is_some_and(|h| h.kind == Kind::Put))
    }

    fn list_keys(&self, ns: Nsid, start: &[u8], exclusive: bool, limit: usize) -> Result<KeyList> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let c = self.ns_entry(ns)?.list_counters.clone();
        // One super version and one seqno, taken in this order as `lookup` does: the
        // listing is the state at that seqno.
        let sv = self.super_version();
        let snapshot = self.visible_seq.load(Ordering::Acquire);
        let mems: Vec<Arc<Memtable>> = std::iter::once(&sv.mem)
            .chain(sv.imm.iter().map(|f| &f.mem))
            .cloned()
            .collect();
        let mut scan = SnapshotScan::new(&mems, sv.version.clone(), ns, snapshot, &c)?;
        let list = scan.list(start, exclusive, limit)?;
        Counters::add(&c.lists, 1);
        Counters::add(&c.keys_listed, list.keys.len() as u64);
        Ok(list)
    }

    fn get(&self, ns: Nsid, key: &[u8]) -> Result<Option<Bytes>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let c = &*self.ns_counters(ns)?;
        // Before the lookup: the segment of the address it finds outlives this get.
        let _pin = self.vlog_reader.pin();
        let Some(hit) = self.counted_lookup(ns, key, c)? else {
            return Ok(None);
        };
        match (hit.kind, hit.value, hit.addr) {
            (Kind::Delete, ..) => Ok(None),
            (Kind::Put, Some(v), _) => Ok(Some(v)),
            (Kind::Put, None, Some(addr)) => {
                // The value read is part of the hit time of the step that found the key.
                let t = std::time::Instant::now();
                let v = self.vlog_reader.read_value(addr, ns, key, c)?;
                Counters::add(&c.step_hit_nanos[hit.step], t.elapsed().as_nanos() as u64);
                Ok(Some(v))
            }
            (Kind::Put, None, None) => Err(Error::corruption(
                "index",
                0,
                "entry without a value or an address",
            )),
        }
    }

    /// The newest version of `(ns, key)` visible now: memtables, then L0 newest first, then
    /// the namespace's runs newest first, then one table per deeper level, each asked through
    /// its filter first. Each step's outcome and time go into the cost-model counters.
    fn lookup(&self, ns: Nsid, key: &[u8], c: &Counters) -> Result<Option<Hit>> {
        let mut clock = StepClock::new(c);
        let sv = self.super_version();
        let snapshot = self.visible_seq.load(Ordering::Acquire);
        let mut user = key::user_part(ns, key);
        for m in std::iter::once(&sv.mem).chain(sv.imm.iter().map(|f| &f.mem)) {
            if let Some((_, v)) = m.get(&user, snapshot) {
                clock.hit(STEP_MEMTABLE);
                return Ok(Some(Hit {
                    step: STEP_MEMTABLE,
                    kind: v.kind,
                    addr: Some(v.addr),
                    value: Some(v.value),
                }));
            }
        }
        clock.miss(STEP_MEMTABLE, true);
        let hash = filter_hash(&user);
        key::push_trailer(&mut user, snapshot, Kind::Put);
        let seek = user;
        let user = &seek[..seek.len() - TRAILER_LEN];
        // Tables that overlap each other (L0, runs), newest first: the first answer wins.
        let search_all = |tables: &mut dyn Iterator<Item = &Arc<TableHandle>>,
                          probed: &mut bool|
         -> Result<Option<(u64, Kind, IndexValue)>> {
            for t in tables.filter(|t| t.covers(user)) {
                let r = t.reader()?;
                if r.ns_may_contain(ns, key) {
                    *probed = true;
                    if r.may_contain(hash, c)? {
                        if let Some(f) = r.get(user, &seek, c)? {
                            return Ok(Some(f));
                        }
                    }
                }
            }
            Ok(None)
        };
        let steps = [STEP_L0, STEP_RUNS]
            .into_iter()
            .chain((1..sv.version.num_levels()).map(level_step));
        for step in steps {
            let mut probed = false;
            let found = match step {
                STEP_L0 => search_all(&mut sv.version.levels[0].iter(), &mut probed)?,
                STEP_RUNS => search_all(&mut sv.version.runs_of(ns).iter(), &mut probed)?,
                _ => match sv.version.find_in_level(step_level(step), user) {
                    Some(t) => {
                        probed = true;
                        let r = t.reader()?;
                        if r.may_contain(hash, c)? {
                            r.get(user, &seek, c)?
                        } else {
                            None
                        }
                    }
                    None => None,
                },
            };
            let Some((_, kind, iv)) = found else {
                clock.miss(step, probed);
                continue;
            };
            clock.hit(step);
            let (kind, addr, value) = match iv {
                IndexValue::Tombstone => (Kind::Delete, None, None),
                IndexValue::Addr { addr, inline } => (kind, Some(addr), inline),
            };
            return Ok(Some(Hit {
                step,
                kind,
                addr,
                value,
            }));
        }
        Ok(None)
    }

    fn create_namespace(&self, name: &str) -> Result<Nsid> {
        self.check_open()?;
        if name.is_empty() || name.len() > 255 {
            return Err(Error::InvalidArgument(
                "a namespace name has 1 to 255 bytes".into(),
            ));
        }
        let mut vs = self.versions.lock();
        if vs.namespaces.live.values().any(|n| n == name) {
            return Err(Error::NamespaceExists(name.to_string()));
        }
        let ns = vs.namespaces.next;
        if ns == Nsid::MAX {
            return Err(Error::InvalidArgument("namespace ids exhausted".into()));
        }
        self.log_edit(
            &mut vs,
            VersionEdit {
                created_ns: vec![(ns, name.to_string())],
                next_nsid: Some(ns + 1),
                ..VersionEdit::default()
            },
        )?;
        let entry = NsEntry::new(name, self.counters.page_size());
        self.namespaces.write().live.insert(ns, Arc::new(entry));
        Ok(ns)
    }

    fn destroy_namespace(&self, ns: Nsid) -> Result<()> {
        self.check_open()?;
        if ns == DEFAULT_NS {
            return Err(Error::InvalidArgument(
                "the default namespace cannot be destroyed".into(),
            ));
        }
        self.ns_counters(ns)?;
        // No compaction may run meanwhile: it could write tables of `ns` back.
        self.acquire_compaction()?;
        let result = (|| {
            let version = self.versions.lock().current();
            let own: Vec<(usize, &Arc<TableHandle>)> = version
                .levels
                .iter()
                .enumerate()
                .skip(1)
                .flat_map(|(l, ts)| {
                    ts.iter()
                        .filter(|t| t.only_namespace() == Some(ns))
                        .map(move |t| (l, t))
                })
                .chain(version.runs_of(ns).iter().map(|t| (RUNS, t)))
                .collect();
            // Their values die with them: count them per segment so GC, in the background
            // and after a restart, knows where the space is.
            let mut dead = Vec::new();
            for (_, t) in &own {
                let mut it = t.reader()?.iter()?;
                it.seek_to_first()?;
                while it.valid() {
                    if let Some(IndexValue::Addr { addr, .. }) = IndexValue::decode(&it.value()) {
                        dead.push(addr);
                    }
                    it.advance()?;
                }
            }
            self.install(
                VersionEdit {
                    destroyed_ns: vec![ns],
                    deleted: own.iter().map(|(l, t)| (*l, t.id())).collect(),
                    vlog_dead: dead_bytes_by_segment(&dead),
                    ..VersionEdit::default()
                },
                None,
            )?;
            self.liveness.mark_dead(&dead);
            self.bg.lock().gc_check = true;
            self.bg_cv.notify_all();
            let mut state = self.namespaces.write();
            if let Some(e) = state.live.remove(&ns) {
                state.retired.push(e.counters.clone());
                state.retired.push(e.list_counters.clone());
            }
            let mut dead = (*state.dead).clone();
            dead.insert(ns);
            state.dead = Arc::new(dead);
            Ok(())
        })();
        self.release_compaction();
        result
    }

    fn namespace_stats(&self, ns: Nsid) -> Result<NamespaceStats> {
        let entry = self.ns_entry(ns)?;
        let mut s = entry.counters.namespace_stats(ns, self.opts.num_levels);
        s.listings = entry.list_counters.listing_stats();
        let sv = self.super_version();
        s.keys_estimate = std::iter::once(&sv.mem)
            .chain(sv.imm.iter().map(|f| &f.mem))
            .map(|m| m.entries_of(ns))
            .sum::<u64>();
        for t in sv.version.levels.iter().flatten().chain(&sv.version.runs) {
            if t.may_hold_namespace(ns) {
                s.keys_estimate += t.entries_of(ns)?;
            }
        }
        let version = sv.version.clone();
        s.levels = version
            .levels
            .iter()
            .enumerate()
            .map(|(level, ts)| {
                let mine: Vec<_> = ts
                    .iter()
                    .filter(|t| match (level, self.opts.layout) {
                        (0, _) => t.may_hold_namespace(ns),
                        (_, Layout::PerNamespace) => t.only_namespace() == Some(ns),
                        (_, Layout::Shared) => true,
                    })
                    .collect();
                level_stats(&mine)
            })
            .collect();
        s.runs = level_stats(&version.runs_of(ns).iter().collect::<Vec<_>>());
        Ok(s)
    }

    fn wait_for_compactions(&self) -> Result<()> {
        self.flush()?;
        self.bg.lock().drain = true;
        let mut gc_seen = false;
        let result = (|| loop {
            {
                let bg = self.bg.lock();
                if let Some(e) = &bg.error {
                    return Err(Error::Background(e.clone()));
                }
                let idle = !bg.flushing
                    && !bg.compacting
                    && !bg.splitting
                    && self.super_version().imm.is_empty();
                if idle {
                    if !self.opts.auto_compaction {
                        return Ok(());
                    }
                    let version = self.versions.lock().current();
                    let mut cursors = bg.cursors.clone();
                    let split = compaction::pick_split(&version, &self.opts, true);
                    let ratio = self.opts.vlog_gc_dead_ratio;
                    // GC moves live values and so writes index entries: settled means it
                    // has nothing left to collect either.
                    let gc_due =
                        ratio > 0.0 && (bg.gc_running || self.gc_candidate(ratio)?.is_some());
                    gc_seen |= gc_due;
                    if split.is_none()
                        && !gc_due
                        && compaction::pick(&version, &self.opts, &mut cursors, true)?.is_none()
                    {
                        return Ok(());
                    }
                }
            }
            self.bg.lock().gc_check = true;
            self.wait_for_background()?;
            if std::mem::take(&mut gc_seen) {
                // What GC moved sits in the memtable: into the tree with the rest.
                self.flush()?;
            }
        })();
        self.bg.lock().drain = false;
        result
    }

    fn gc_value_log(&self) -> Result<GcStats> {
        self.check_open()?;
        {
            let mut w = self.writer.lock();
            if w.vlog.position().1 > vlog::SEGMENT_HEADER_LEN {
                let id = self.new_file_number();
                self.roll_log(&mut w, id)?;
            }
        }
        self.flush()?;
        {
            // Nothing left in memory: replay can start at the head, sealing what is behind.
            let w = self.writer.lock();
            let sv = self.super_version();
            if sv.mem.is_empty() && sv.imm.is_empty() {
                let pos = w.vlog.position();
                if self.versions.lock().log_start < pos {
                    self.install(
                        VersionEdit {
                            log_start: Some(pos),
                            ..VersionEdit::default()
                        },
                        None,
                    )?;
                }
            }
        }
        self.set_gc_running(true);
        let result = self.gc_pass(0.0);
        self.set_gc_running(false);
        let stats = result?;
        Counters::add(
            &self.counters.gc_segments_deleted,
            stats.segments_deleted as u64,
        );
        Counters::add(&self.counters.gc_bytes_rewritten, stats.bytes_rewritten);
        Ok(stats)
    }

    /// Waits for a running GC, then marks one as running (or clears the mark).
    fn set_gc_running(&self, on: bool) {
        let mut bg = self.bg.lock();
        if on {
            while bg.gc_running && bg.error.is_none() && !bg.shutdown {
                self.done_cv.wait_for(&mut bg, Duration::from_millis(50));
            }
        }
        bg.gc_running = on;
        self.done_cv.notify_all();
    }

    /// Takes both compaction slots for a manual job: waits until the compaction and split
    /// running now have ended (whatever errors or shutdown say meanwhile: a running job
    /// always ends, and two must never overlap), and keeps automatic ones out until
    /// [`Inner::release_compaction`]. Fails, holding nothing, if the database is closed or
    /// read-only.
    fn acquire_compaction(&self) -> Result<()> {
        let mut bg = self.bg.lock();
        bg.manual += 1;
        while bg.compacting || bg.splitting {
            self.done_cv.wait_for(&mut bg, Duration::from_millis(50));
        }
        bg.manual -= 1;
        let refuse = if let Some(e) = &bg.error {
            Some(Error::Background(e.clone()))
        } else if bg.shutdown || self.closed.load(Ordering::Acquire) {
            Some(Error::Closed)
        } else {
            None
        };
        if let Some(e) = refuse {
            self.done_cv.notify_all();
            return Err(e);
        }
        bg.compacting = true;
        bg.splitting = true;
        bg.manual_running = true;
        Ok(())
    }

    fn release_compaction(&self) {
        let mut bg = self.bg.lock();
        debug_assert!(bg.manual_running && bg.compacting && bg.splitting);
        bg.compacting = false;
        bg.splitting = false;
        bg.manual_running = false;
        self.bg_cv.notify_all();
        self.done_cv.notify_all();
    }

    fn flush(&self) -> Result<()> {
        self.check_open()?;
        {
            let mut w = self.writer.lock();
            self.freeze_memtable(&mut w)?;
        }
        loop {
            if self.super_version().imm.is_empty() {
                return Ok(());
            }
            self.wait_for_background()?;
        }
    }

    /// A manual compaction of `ns`, or of every live namespace.
    fn compact_range(
        &self,
        ns: Option<Nsid>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        if let Some(ns) = ns {
            self.ns_counters(ns)?;
        }
        self.flush()?;
        self.acquire_compaction()?;
        let result = (|| {
            let mut all: Vec<Nsid> = match ns {
                Some(ns) => vec![ns],
                None => self.namespaces.read().live.keys().copied().collect(),
            };
            all.sort_unstable();
            for ns in all {
                self.manual_compaction(ns, start, end)?;
            }
            Ok(())
        })();
        self.release_compaction();
        result
    }

    fn manual_compaction(&self, ns: Nsid, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let lo = key::user_part(ns, start.unwrap_or_default());
        let hi = match end {
            Some(e) => key::user_part(ns, e),
            // Every key of `ns` sorts below the next namespace's prefix.
            None => match ns.checked_add(1) {
                Some(n) => n.to_be_bytes().to_vec(),
                None => vec![0xff; 5],
            },
        };
        let version = self.versions.lock().current();
        let deepest = (1..version.num_levels())
            .rev()
            .find(|&l| !version.levels[l].is_empty())
            .unwrap_or(1);
        let steps = std::iter::once(0)
            .chain((self.opts.layout == Layout::PerNamespace).then_some(RUNS))
            .chain(1..deepest);
        for level in steps {
            let version = self.versions.lock().current();
            if let Some(task) =
                compaction::range_tasks(&version, self.opts.layout, level, &lo, &hi)?
            {
                self.run_compaction(&task, &version, false)?;
            }
        }
        Ok(())
    }

    fn run_compaction(
        &self,
        task: &CompactionTask,
        version: &Version,
        allow_move: bool,
    ) -> Result<()> {
        let _slots = SlotGuard::enter(self, task);
        // A split writes each namespace's part of L0 as one run.
        let target = match task.output_level() {
            RUNS => u64::MAX,
            _ => self.opts.target_table_bytes,
        };
        let params = output_params(&self.opts, target);
        let snapshot = self.visible_seq.load(Ordering::Acquire);
        let alloc = || self.new_file_number();
        let dead = self.namespaces.read().dead.clone();
        let cx = compaction::RunContext {
            storage: self.storage.as_ref(),
            params,
            smallest_snapshot: snapshot,
            allow_move,
            dead: &dead,
            new_file: &alloc,
        };
        let mut out = compaction::run(task, version, &cx)?;
        let (read, written) = (out.bytes_read, out.bytes_written);
        for &(ns, bytes) in &out.written_by_ns {
            if let Ok(c) = self.ns_counters(ns) {
                Counters::add(&c.tree_bytes_written, bytes);
            }
        }
        self.storage.sync_dir().ctx("database directory")?;
        out.edit.vlog_dead = dead_bytes_by_segment(&out.dropped);
        self.install(out.edit, None)?;
        self.liveness.mark_dead(&out.dropped);
        Counters::add(&self.counters.compactions, 1);
        Counters::add(&self.counters.compaction_bytes_read, read);
        Counters::add(&self.counters.compaction_bytes_written, written);
        Ok(())
    }

    /// Logs `edit` in the manifest, noting whether the manifest is left in doubt.
    fn log_edit(&self, vs: &mut VersionSet, edit: VersionEdit) -> Result<Arc<Version>> {
        let result = vs.log_and_apply(edit);
        self.manifest_in_doubt
            .store(result.is_err(), Ordering::Release);
        result
    }

    /// After a failed manifest write, an edit (a namespace created or destroyed) may or may
    /// not be on disk. A write acknowledged now would take one side of that doubt without
    /// saying so (a put into a namespace whose destruction a crash then brings back), so the
    /// doubt is settled first: a new manifest holding the state in memory.
    fn settle_manifest(&self) -> Result<()> {
        if !self.manifest_in_doubt.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut vs = self.versions.lock();
        if vs.in_doubt() {
            self.log_edit(&mut vs, VersionEdit::default())?;
        } else {
            self.manifest_in_doubt.store(false, Ordering::Release);
        }
        Ok(())
    }

    /// Logs `edit` and installs its version; `flushed` is the memtable it made durable.
    fn install(&self, edit: VersionEdit, flushed: Option<&Arc<Frozen>>) -> Result<()> {
        let mut vs = self.versions.lock();
        let version = self.log_edit(&mut vs, edit)?;
        let mut sv = self.sv.write();
        let imm = sv
            .imm
            .iter()
            .filter(|m| flushed.is_none_or(|f| !Arc::ptr_eq(m, f)))
            .cloned()
            .collect();
        *sv = Arc::new(SuperVersion {
            mem: sv.mem.clone(),
            imm,
            version,
        });
        Ok(())
    }

    fn flush_oldest(&self) -> Result<()> {
        let Some(frozen) = self.super_version().imm.last().cloned() else {
            return Ok(());
        };
        let alloc = || self.new_file_number();
        let params = flush_params(&self.opts);
        let dead = self.namespaces.read().dead.clone();
        let (props, dropped) = flush_memtable(
            self.storage.as_ref(),
            &frozen.mem,
            params,
            &self.opts,
            &dead,
            &alloc,
        )?;
        // Earlier segments were synced when the log moved past them.
        frozen.log_sync.sync()?;
        self.storage.sync_dir().ctx("database directory")?;
        let edit = VersionEdit {
            log_start: Some(frozen.log_end),
            last_seq: Some(frozen.mem.max_seq()),
            added: props.into_iter().map(|p| (0, p)).collect(),
            vlog_dead: dead_bytes_by_segment(&dropped),
            ..VersionEdit::default()
        };
        self.install(edit, Some(&frozen))?;
        self.liveness.mark_dead(&dropped);
        Counters::add(&self.counters.flushes, 1);
        Ok(())
    }

    /// The most urgent background job, if any, marked as running: a flush first, then a
    /// compaction, then value-log GC.
    fn next_job(&self, bg: &mut BgState) -> Result<Option<Job>> {
        if !bg.flushing && !self.super_version().imm.is_empty() {
            bg.flushing = true;
            return Ok(Some(Job::Flush));
        }
        if bg.manual == 0 && self.opts.auto_compaction {
            let drain = bg.drain || self.idle();
            let version = self.versions.lock().current();
            if !bg.splitting {
                if let Some(task) = compaction::pick_split(&version, &self.opts, drain) {
                    // A merge straight into L1 touches a tree: it needs the tree slot too.
                    let tree = task.output_level() != RUNS;
                    if !tree || !bg.compacting {
                        bg.splitting = true;
                        bg.compacting |= tree;
                        return Ok(Some(Job::Split(task, version)));
                    }
                }
            }
            if !bg.compacting {
                if let Some(task) = compaction::pick(&version, &self.opts, &mut bg.cursors, drain)?
                {
                    bg.compacting = true;
                    return Ok(Some(Job::Compact(task, version)));
                }
            }
        }
        let ratio = self.opts.vlog_gc_dead_ratio;
        if bg.gc_check && !bg.gc_running && ratio > 0.0 {
            bg.gc_check = false;
            if let Some(seg) = self.gc_candidate(ratio)? {
                bg.gc_running = true;
                return Ok(Some(Job::Gc(seg)));
            }
        }
        Ok(None)
    }

    fn background_loop(self: Arc<Self>) {
        loop {
            let job = {
                let mut bg = self.bg.lock();
                loop {
                    if bg.shutdown {
                        return;
                    }
                    let now = std::time::Instant::now();
                    let backoff = bg.retry_at.filter(|t| *t > now);
                    if bg.error.is_none() && backoff.is_none() {
                        match self.next_job(&mut bg) {
                            Ok(Some(job)) => break job,
                            Ok(None) => {
                                // Nothing waits for space any more.
                                if bg.no_space.take().is_some() {
                                    bg.retry_at = None;
                                    self.done_cv.notify_all();
                                }
                            }
                            Err(e) => {
                                drop(bg);
                                self.fail_job(&e);
                                bg = self.bg.lock();
                                continue;
                            }
                        }
                    }
                    let wait = match (self.opts.idle_settle_ms, backoff) {
                        (_, Some(t)) => Some(t - now),
                        (0, None) => None,
                        // Wake up to notice that writes stopped.
                        (ms, None) => Some(Duration::from_millis(ms)),
                    };
                    match wait {
                        Some(d) => {
                            self.bg_cv.wait_for(&mut bg, d);
                        }
                        None => self.bg_cv.wait(&mut bg),
                    }
                }
            };
            // A panic in a job must not leave its flag set and writers waiting forever.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &job {
                Job::Flush => self.flush_oldest(),
                Job::Compact(task, version) | Job::Split(task, version) => {
                    self.run_compaction(task, version, true)
                }
                Job::Gc(seg) => {
                    let mut stats = GcStats::default();
                    let r = self.gc_segment(*seg, self.opts.vlog_gc_dead_ratio, &mut stats);
                    Counters::add(
                        &self.counters.gc_segments_deleted,
                        stats.segments_deleted as u64,
                    );
                    Counters::add(&self.counters.gc_bytes_rewritten, stats.bytes_rewritten);
                    r
                }
            }))
            .unwrap_or_else(|_| Err(Error::Background("a background job panicked".into())));
            if let Err(e) = &result {
                self.fail_job(e);
            }
            let mut bg = self.bg.lock();
            if result.is_ok() && bg.no_space.take().is_some() {
                tracing::info!("space is back: background work goes on");
                bg.retry_at = None;
            }
            match job {
                Job::Flush => bg.flushing = false,
                Job::Compact(..) => bg.compacting = false,
                Job::Split(task, _) => {
                    bg.splitting = false;
                    if task.output_level() != RUNS {
                        bg.compacting = false;
                    }
                }
                Job::Gc(_) => bg.gc_running = false,
            }
            bg.gc_check = true;
            self.bg_cv.notify_all();
            self.done_cv.notify_all();
        }
    }

    fn stats(&self) -> DbStats {
        let sv = self.super_version();
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
            .chain(&state.retired)
        {
            c.accumulate(&mut s, n);
        }
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
        s
    }
}
