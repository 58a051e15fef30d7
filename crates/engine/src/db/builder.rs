//! [`DbBuilder`]: how a database is opened, on which storage. One spelling per case:
//! `Db::builder(options).open(path)` on real files (or `Db::open(path, options)`),
//! `Db::builder(options).storage(StorageKind::Nand(cfg)).open(path)` on real files behind
//! the NAND timing model, and `Db::builder(options).open_storage(storage)` on a storage the
//! caller built (memory, fault injection, a timing model over either).

use super::background_state::Background;
use super::database::Db;
use super::gc_state::GcState;
use super::index_set::IndexSet;
use super::inner::Inner;
use super::namespace_set::{NsEntry, NsState};
use super::recovery::recover;
use super::snapshots::Snapshots;
use super::super_version::{used_of, SuperVersion};
use super::versions::Versions;
use super::write_queue::{WriteQueue, WriterState};
use crate::error::{Error, IoContext, Result};
use crate::memtable::Memtable;
use crate::options::{Options, StorageKind};
use crate::stats::Counters;
use crate::storage::{NandStorage, PosixStorage, StorageRef};
use crate::table::BlockCache;
use crate::version::TableCtx;
use crate::vlog::{Liveness, VlogReader, Writeback};
use parking_lot::{Mutex, RwLock};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Opens a database: made by [`Db::builder`] with the database's options, told the storage
/// with [`storage`](DbBuilder::storage) (real files unless told otherwise), and ended by
/// [`open`](DbBuilder::open) (in a directory) or [`open_storage`](DbBuilder::open_storage)
/// (on a storage the caller built).
#[derive(Clone, Debug)]
#[must_use = "a builder opens nothing until `open` or `open_storage`"]
pub struct DbBuilder {
    options: Options,
    kind: StorageKind,
}

impl DbBuilder {
    pub(super) fn new(options: Options) -> DbBuilder {
        DbBuilder {
            options,
            kind: StorageKind::Posix,
        }
    }

    /// The storage [`open`](DbBuilder::open) builds over its directory: real files
    /// ([`StorageKind::Posix`], the default) or real files behind the NAND timing model.
    pub fn storage(mut self, kind: StorageKind) -> DbBuilder {
        self.kind = kind;
        self
    }

    /// Opens (or creates) the database in directory `path`, on the storage set by
    /// [`storage`](DbBuilder::storage).
    pub fn open(self, path: impl AsRef<Path>) -> Result<Db> {
        let dir = path.as_ref();
        let posix: StorageRef = Arc::new(
            PosixStorage::new(dir)
                .map_err(|e| Error::io(dir.display().to_string(), e))?
                .with_mmap_reads(self.options.mmap_reads),
        );
        let storage: StorageRef = match self.kind {
            StorageKind::Posix => posix,
            StorageKind::Nand(cfg) => Arc::new(NandStorage::new(posix, cfg)),
        };
        open_on(storage, self.options)
    }

    /// Opens (or creates) the database held by `storage`, as the caller built it (memory,
    /// fault injection, a timing model over either). A storage kind set by
    /// [`storage`](DbBuilder::storage) is for [`open`](DbBuilder::open): given one here, it
    /// fails with [`Error::InvalidArgument`] rather than leave it unused.
    pub fn open_storage(self, storage: StorageRef) -> Result<Db> {
        if !matches!(self.kind, StorageKind::Posix) {
            return Err(Error::InvalidArgument(
                "a storage kind is for `open(path)`; `open_storage` takes the storage as built \
                 (wrap it in a NandStorage for the timing model)"
                    .into(),
            ));
        }
        open_on(storage, self.options)
    }
}

/// Opens (or creates) the database held by `storage`: recovery, then the background threads
/// unless a runner is set.
fn open_on(storage: StorageRef, options: Options) -> Result<Db> {
    options.validate()?;
    let lock = storage.lock().ctx("LOCK")?;
    if storage
        .exists(super::checkpoint::CHECKPOINT_MARKER)
        .ctx(super::checkpoint::CHECKPOINT_MARKER)?
    {
        return Err(Error::corruption(
            super::checkpoint::CHECKPOINT_MARKER,
            0,
            "an interrupted checkpoint: delete this directory and take the checkpoint again",
        ));
    }
    let page_size = storage.page_size();
    let counters = Arc::new(Counters::new(page_size).timing_steps(options.time_get_steps));
    let block_cache = Arc::new(
        BlockCache::with_meta(options.cache_bytes, options.cache_filters_and_indexes)
            .with_point_budget(options.point_index_memory_bytes),
    );
    let ctx = TableCtx::new(
        storage.clone(),
        block_cache.clone(),
        counters.clone(),
        options.max_open_files,
    );
    let (versions, mem, vlog) = recover(&ctx, &options)?;
    let namespaces = NsState {
        live: versions
            .namespaces
            .live
            .iter()
            .map(|(id, name)| {
                let e = NsEntry::new(*id, name, &counters);
                *e.options.write() = versions.namespaces.options_of(*id);
                let read_only = versions.namespaces.read_only.contains(id);
                e.read_only
                    .store(read_only, std::sync::atomic::Ordering::Release);
                (*id, Arc::new(e))
            })
            .collect(),
        destroyed: Arc::new(versions.namespaces.destroyed.iter().copied().collect()),
        destroyed_counters: Default::default(),
    };
    let indexes = IndexSet::from_defs(versions.namespaces.indexes.values(), &[], Vec::new());
    let last_seq = versions.last_seq.max(mem.max_seq());
    let version = versions.current();
    let used = Arc::new(used_of(&versions.namespaces));
    let inner = Arc::new(Inner {
        vlog_reader: VlogReader::sharing(storage.clone(), ctx.readers.segments()),
        gc: GcState::new(Liveness::seeded(&versions.vlog_dead)),
        storage,
        counters,
        namespaces: RwLock::new(namespaces),
        indexes: RwLock::new(Arc::new(indexes)),
        versions: Versions::new(
            versions,
            SuperVersion {
                mem: Arc::new(Memtable::new(options.memtable_bytes)),
                imm: Vec::new(),
                version,
                used,
            },
        ),
        writes: WriteQueue::new(
            WriterState {
                vlog: vlog.with_writeback((options.log_writeback_bytes > 0).then(|| {
                    Box::new(Writeback::new(
                        options.log_writeback_bytes,
                        options.background_nice,
                    ))
                })),
                next_seq: last_seq + 1,
                buf: Vec::new(),
            },
            last_seq,
        ),
        bg: Background::default(),
        closed: AtomicBool::new(false),
        opening_inline: AtomicBool::new(options.background_runner.is_some()),
        block_cache,
        opened: std::time::Instant::now(),
        uptime: crate::uptime::Uptime::new(),
        last_write_ms: AtomicU64::new(0),
        snapshots: Snapshots::default(),
        prefetcher: std::sync::OnceLock::new(),
        background_reads: std::sync::OnceLock::new(),
        row_cache: crate::row_cache::RowCache::new(options.row_cache_bytes),
        space: Default::default(),
        capacity_flush: Default::default(),
        index_flush: Default::default(),
        #[cfg(test)]
        hooks: Default::default(),
        opts: options,
    });
    let threads = spawn_background(&inner)?;
    let db = Db {
        inner,
        threads: Mutex::new(threads),
        _lock: lock,
    };
    upgrade_index_keys(&db.inner)?;
    db.inner.backfiller().finish_backfills()?;
    db.inner.opening_inline.store(false, Ordering::Release);
    db.inner.namespace_admin().forget_destroyed_quietly();
    // Work recovery left (a segment worth collecting) goes to the runner at once.
    db.inner.wake_background();
    Ok(db)
}

/// The database's own background threads: none when a runner is set.
fn spawn_background(inner: &Arc<Inner>) -> Result<Vec<std::thread::JoinHandle<()>>> {
    let own_threads = match inner.opts.background_runner.is_some() {
        true => 0,
        false => inner.opts.background_threads,
    };
    (0..own_threads)
        .map(|i| {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(format!("cerberus-bg-{i}"))
                .spawn(move || {
                    crate::priority::lower_priority(inner.opts.background_nice);
                    inner.jobs().run_loop()
                })
                .map_err(|e| Error::io("background thread", e))
        })
        .collect()
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
}

/// Rebuilds each index whose entries have an older key format: registered again under a
/// new id (its backfill runs as a crashed one's, `Backfiller::finish_backfills`), then its old
/// trees dropped. A crash between the two leaves both registered; the next open finds the
/// new one and only drops the old.
fn upgrade_index_keys(inner: &Inner) -> Result<()> {
    let admin = inner.index_admin();
    for d in admin.outdated() {
        admin.reregister(&d)?;
        inner.namespace_admin().drop_trees(&[d.id])?;
    }
    Ok(())
}
