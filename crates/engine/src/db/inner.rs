//! The parts of an open database, composed: the write path's queue, the versions and
//! manifest, namespaces, indexes, usage and quotas, snapshots, value-log GC and background
//! work. Only this type knows them all; the orchestration that needs several of them is in
//! the files named for what it does (flush.rs, write.rs, gc.rs, ...).

use super::backfill::Backfiller;
use super::background::{JobParts, Jobs};
use super::background_state::Background;
use super::compactions::Compactions;
use super::flush::{Flusher, Installer};
use super::gc::ValueLogGc;
use super::gc_state::GcState;
use super::index_flushes::IndexFlushes;
use super::index_set::IndexSet;
use super::indexes::IndexAdmin;
use super::level_stats::level_stats;
use super::namespace_set::NsState;
use super::namespaces::NamespaceAdmin;
use super::pin_keeper::PinKeeper;
use super::query::Queries;
use super::quota_state::{CapacityFlushes, SpaceGauge};
use super::read::Reader;
use super::records::RecordSource;
use super::segment_retire::SegmentRetire;
use super::settle::Settle;
use super::snapshots::Snapshots;
use super::super_version::SuperVersion;
#[cfg(test)]
use super::test_hooks::TestHooks;
use super::usage::Quotas;
use super::versions::Versions;
use super::write::WritePath;
use super::write_queue::WriteQueue;
use crate::error::Result;
use crate::key::SeqNo;
use crate::options::Options;
use crate::prefetch::ReadPool;
use crate::stats::{Counters, DbStats};
use crate::storage::StorageRef;
use crate::vlog::{self, VlogReader};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The parts of an open database, composed: the one place that holds them all.
pub(super) struct Inner {
    pub(super) opts: Options,
    pub(super) storage: StorageRef,
    /// Counters of background work (flush, compaction); namespaces have their own.
    pub(super) counters: Arc<Counters>,
    pub(super) namespaces: RwLock<NsState>,
    /// Live secondary indexes, by the namespace they index: the write path derives their
    /// entries. Replaced (under the writer lock) when an index is created or dropped.
    pub(super) indexes: RwLock<Arc<IndexSet>>,
    pub(super) vlog_reader: VlogReader,
    pub(super) gc: GcState,
    /// The manifest and the super version readers load.
    pub(super) versions: Versions,
    pub(super) writes: WriteQueue,
    pub(super) bg: Background,
    pub(super) closed: AtomicBool,
    /// The open is under way with a background runner, which runs nothing before it returns:
    /// flushes the open needs (an unfinished backfill's) run on the opening thread.
    pub(super) opening_inline: AtomicBool,
    /// The block cache the tables share (also the budget of their kept point indexes).
    pub(super) block_cache: Arc<crate::table::BlockCache>,
    pub(super) opened: std::time::Instant,
    /// Milliseconds since the opening, on a clock cheap enough to read every commit group.
    pub(super) uptime: crate::uptime::Uptime,
    /// Milliseconds of `uptime` at the last write.
    pub(super) last_write_ms: AtomicU64,
    /// Seqnos live snapshots read at, per namespace.
    pub(super) snapshots: Snapshots,
    /// The storage's free space as last asked (the device-wide reserve).
    pub(super) space: SpaceGauge,
    /// Flushes capacity checks made, kept apart (see `check_room`).
    pub(super) capacity_flush: CapacityFlushes,
    /// Flushes index backfills made, and the indexes ready before their flush.
    pub(super) index_flush: IndexFlushes,
    /// Values of recently read keys (`Options::row_cache_bytes`; `None`: off).
    pub(super) row_cache: Option<crate::row_cache::RowCache>,
    /// Reader threads for iterators' prefetch (values, blocks, tables), started on first use.
    pub(super) prefetcher: std::sync::OnceLock<Arc<crate::prefetch::ReadPool>>,
    /// Reader threads for background work, started on first use.
    pub(super) background_reads: std::sync::OnceLock<Arc<crate::prefetch::ReadPool>>,
    #[cfg(test)]
    pub(super) hooks: TestHooks<Inner>,
}

impl Inner {
    /// The reader threads iterators (and batched gets, and counts) prefetch through,
    /// started on first use.
    pub(super) fn prefetcher(&self) -> &Arc<ReadPool> {
        let threads = self.opts.prefetch_threads;
        let pool = || ReadPool::new(threads, self.storage.nand_stats().is_some());
        self.prefetcher.get_or_init(|| Arc::new(pool()))
    }

    /// The parts a query touches; its reads take the database itself (see `RecordSource`).
    pub(super) fn queries(self: &Arc<Self>) -> Queries<'_, Arc<Inner>> {
        fn after_super_version(_inner: &Arc<Inner>) {
            #[cfg(test)]
            _inner.hooks.query_super_version(_inner);
        }
        Queries {
            closed: &self.closed,
            bg: &self.bg,
            indexes: &self.indexes,
            source: self,
            after_super_version,
        }
    }

    /// The parts the registry of indexes touches.
    pub(super) fn index_admin(&self) -> IndexAdmin<'_> {
        IndexAdmin {
            opts: &self.opts,
            writes: &self.writes,
            versions: &self.versions,
            set: &self.indexes,
            index_flush: &self.index_flush,
        }
    }

    /// The parts a read touches; in tests, the hook shown the whole database between a
    /// get's load of the super version and its read of the seqno.
    pub(super) fn reader(&self) -> Reader<'_, impl Fn() + '_> {
        let after_super_version = move || {
            #[cfg(test)]
            self.hooks.after_super_version(self);
        };
        Reader {
            closed: &self.closed,
            versions: &self.versions,
            writes: &self.writes,
            vlog_reader: &self.vlog_reader,
            row_cache: self.row_cache.as_ref(),
            after_super_version,
        }
    }

    /// The parts a flush touches.
    pub(super) fn flusher(&self) -> Flusher<'_, impl Fn() + '_> {
        Flusher {
            opts: &self.opts,
            storage: &self.storage,
            counters: &self.counters,
            closed: &self.closed,
            opening_inline: &self.opening_inline,
            bg: &self.bg,
            writes: &self.writes,
            namespaces: &self.namespaces,
            indexes: &self.indexes,
            vlog_reader: &self.vlog_reader,
            background_reads: &self.background_reads,
            pins: self.pins(),
            retire: self.retire(),
            installer: self.installer(),
        }
    }

    /// The parts capacity checks and usage figures touch.
    pub(super) fn quotas(&self) -> Quotas<'_, impl Fn() + '_> {
        Quotas {
            opts: &self.opts,
            storage: &self.storage,
            versions: &self.versions,
            writes: &self.writes,
            indexes: &self.indexes,
            gc: &self.gc,
            space: &self.space,
            capacity_flush: &self.capacity_flush,
            opened: &self.opened,
            uptime: &self.uptime,
            flusher: self.flusher(),
        }
    }

    /// The parts a write touches.
    pub(super) fn write_path(&self) -> WritePath<'_, impl Fn() + '_> {
        WritePath {
            opts: &self.opts,
            versions: &self.versions,
            writes: &self.writes,
            bg: &self.bg,
            closed: &self.closed,
            opening_inline: &self.opening_inline,
            uptime: &self.uptime,
            last_write_ms: &self.last_write_ms,
            counters: &self.counters,
            indexes: &self.indexes,
            capacity_flush: &self.capacity_flush,
            row_cache: self.row_cache.as_ref(),
            quotas: self.quotas(),
        }
    }

    /// The parts compactions touch.
    pub(super) fn compactions(&self) -> Compactions<'_, impl Fn() + '_> {
        Compactions {
            opts: &self.opts,
            storage: &self.storage,
            counters: &self.counters,
            closed: &self.closed,
            bg: &self.bg,
            versions: &self.versions,
            namespaces: &self.namespaces,
            gc: &self.gc,
            uptime: &self.uptime,
            last_write_ms: &self.last_write_ms,
            flusher: self.flusher(),
        }
    }

    /// The parts the creation, settings, destruction and figures of namespaces touch.
    pub(super) fn namespace_admin(&self) -> NamespaceAdmin<'_, impl Fn() + '_> {
        NamespaceAdmin {
            opts: &self.opts,
            counters: &self.counters,
            closed: &self.closed,
            bg: &self.bg,
            versions: &self.versions,
            namespaces: &self.namespaces,
            writes: &self.writes,
            gc: &self.gc,
            snapshots: &self.snapshots,
            row_cache: self.row_cache.as_ref(),
            indexes: self.index_admin(),
            pins: self.pins(),
            installer: self.installer(),
        }
    }

    /// The parts value-log GC touches.
    pub(super) fn value_log_gc(&self) -> ValueLogGc<'_, impl Fn() + '_, impl Fn() + '_> {
        ValueLogGc {
            storage: &self.storage,
            versions: &self.versions,
            writes: &self.writes,
            namespaces: &self.namespaces,
            gc: &self.gc,
            snapshots: &self.snapshots,
            vlog_reader: &self.vlog_reader,
            counters: &self.counters,
            reader: self.reader(),
            retire: self.retire(),
            write: self.write_path(),
        }
    }

    /// The parts an index's backfill touches.
    pub(super) fn backfiller(
        &self,
    ) -> Backfiller<'_, impl Fn() + '_, impl Fn() + '_, impl Fn() + '_> {
        Backfiller {
            writes: &self.writes,
            versions: &self.versions,
            indexes: &self.indexes,
            snapshots: &self.snapshots,
            vlog_reader: &self.vlog_reader,
            index_flush: &self.index_flush,
            opened: &self.opened,
            index_admin: self.index_admin(),
            pins: self.pins(),
            reader: self.reader(),
            write: self.write_path(),
            namespaces: self.namespace_admin(),
        }
    }

    /// The parts the installation of a version touches; in tests, the hook shown the whole
    /// database between the manifest's edit and the swap.
    pub(super) fn installer(&self) -> Installer<'_, impl Fn() + '_> {
        let (versions, index_flush) = (&self.versions, &self.index_flush);
        let flush_epoch = &self.capacity_flush.epoch;
        let before_swap = move || {
            #[cfg(test)]
            self.hooks.before_swap(self);
        };
        Installer {
            versions,
            index_flush,
            flush_epoch,
            before_swap,
        }
    }

    /// The parts the retirement of collected value-log segments touches.
    pub(super) fn retire(&self) -> SegmentRetire<'_> {
        SegmentRetire {
            vlog_reader: &self.vlog_reader,
            gc: &self.gc,
            versions: &self.versions,
            writes: &self.writes,
        }
    }

    /// The parts snapshot pins' floors, releases and expiries touch.
    pub(super) fn pins(&self) -> PinKeeper<'_> {
        PinKeeper {
            snapshots: &self.snapshots,
            writes: &self.writes,
            indexes: &self.indexes,
            gc: &self.gc,
            bg: &self.bg,
            opts: &self.opts,
        }
    }

    /// The parts waiting for a settled tree touches.
    pub(super) fn settle(&self) -> Settle<'_, impl Fn() + '_, impl Fn() + '_, impl Fn() + '_> {
        Settle {
            compactions: self.compactions(),
            gc: self.value_log_gc(),
        }
    }

    /// The job loop, over this database's parts.
    pub(super) fn jobs(&self) -> Jobs<'_, Inner> {
        Jobs {
            opts: &self.opts,
            bg: &self.bg,
            versions: &self.versions,
            parts: self,
        }
    }

    /// Wakes the background: the database's own threads, or the runner given in the options.
    pub(super) fn wake_background(&self) {
        self.bg.wake(self.opts.background_runner.as_ref());
    }

    pub(super) fn check_open(&self) -> Result<()> {
        self.bg.check_open(&self.closed)
    }

    pub(super) fn stats(&self) -> DbStats {
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
        self.pins().reap();
        s.snapshots = self.snapshots.count();
        s.point_index_memory_bytes = self.block_cache.point_budget().used();
        if let Some(rc) = &self.row_cache {
            let (hits, misses) = (s.row_cache.hits, s.row_cache.misses);
            s.row_cache = rc.stats();
            (s.row_cache.hits, s.row_cache.misses) = (hits, misses);
        }
        s
    }
}

impl RecordSource for Arc<Inner> {
    fn reader(&self) -> Reader<'_, impl Fn() + '_> {
        Inner::reader(self)
    }

    fn vlog_reader(&self) -> &VlogReader {
        &self.vlog_reader
    }

    fn super_version(&self) -> Arc<SuperVersion> {
        self.versions.super_version()
    }

    fn visible_seq(&self) -> SeqNo {
        self.writes.visible_seq.load(Ordering::Acquire)
    }

    fn page_size(&self) -> u64 {
        self.counters.page_size()
    }

    fn prefetcher(&self) -> &Arc<ReadPool> {
        Inner::prefetcher(self)
    }

    fn models_nand(&self) -> bool {
        self.storage.nand_stats().is_some()
    }

    fn count_split_blocks(&self) -> usize {
        self.opts.count_split_blocks
    }
}

impl JobParts for Inner {
    fn flusher(&self) -> Flusher<'_, impl Fn() + '_> {
        Inner::flusher(self)
    }

    fn compactions(&self) -> Compactions<'_, impl Fn() + '_> {
        Inner::compactions(self)
    }

    fn value_log_gc(&self) -> ValueLogGc<'_, impl Fn() + '_, impl Fn() + '_> {
        Inner::value_log_gc(self)
    }

    fn backfiller(&self) -> Backfiller<'_, impl Fn() + '_, impl Fn() + '_, impl Fn() + '_> {
        Inner::backfiller(self)
    }

    fn namespace_admin(&self) -> NamespaceAdmin<'_, impl Fn() + '_> {
        Inner::namespace_admin(self)
    }

    fn pins(&self) -> PinKeeper<'_> {
        Inner::pins(self)
    }
}
