//! Flushes, and the version edits they and compactions record in the manifest.

use super::background_state::Background;
use super::dead_bytes::dead_bytes_by_segment;
use super::flush_table::{flush_memtable, flush_params};
use super::flush_usage::flush_usage;
use super::index_flushes::IndexFlushes;
use super::index_set::IndexSet;
use super::namespace_set::NsState;
use super::pin_keeper::PinKeeper;
use super::segment_retire::SegmentRetire;
use super::super_version::Frozen;
use super::supersede::{insert_tombstones, supersede_index_entries};
use super::versions::Versions;
use super::write_queue::{WriteQueue, WriterState};
use crate::error::{IoContext, Result};
use crate::key::SeqNo;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::prefetch::ReadPool;
use crate::stats::Counters;
use crate::storage::StorageRef;
use crate::version::VersionEdit;
use crate::vlog::VlogReader;
use bytes::Bytes;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The parts a version's installation touches, borrowed, and what runs (in tests) between
/// the manifest's edit and the swap.
pub(super) struct Installer<'a, F> {
    pub(super) versions: &'a Versions,
    pub(super) index_flush: &'a IndexFlushes,
    /// The capacity checks' flush epoch (`CapacityFlushes::epoch`).
    pub(super) flush_epoch: &'a AtomicU64,
    pub(super) before_swap: F,
}

impl<F: Fn()> Installer<'_, F> {
    /// Logs `edit` and installs its version; `flushed` is the memtable it made durable.
    pub(super) fn install(&self, edit: VersionEdit, flushed: Option<&Arc<Frozen>>) -> Result<()> {
        let (index_flush, epoch) = (self.index_flush, self.flush_epoch);
        self.versions
            .install(edit, flushed, index_flush, epoch, &self.before_swap)
    }
}

/// The parts a flush touches, borrowed.
pub(super) struct Flusher<'a, F> {
    pub(super) opts: &'a Options,
    pub(super) storage: &'a StorageRef,
    /// Counters of background work.
    pub(super) counters: &'a Arc<Counters>,
    pub(super) closed: &'a AtomicBool,
    /// The open is under way with a background runner (see `Inner::opening_inline`).
    pub(super) opening_inline: &'a AtomicBool,
    pub(super) bg: &'a Background,
    pub(super) writes: &'a WriteQueue,
    pub(super) namespaces: &'a RwLock<NsState>,
    pub(super) indexes: &'a RwLock<Arc<IndexSet>>,
    pub(super) vlog_reader: &'a VlogReader,
    /// Reader threads for background work, started on first use.
    pub(super) background_reads: &'a OnceLock<Arc<ReadPool>>,
    pub(super) pins: PinKeeper<'a>,
    pub(super) retire: SegmentRetire<'a>,
    pub(super) installer: Installer<'a, F>,
}

impl<F: Fn()> Flusher<'_, F> {
    pub(super) fn flush(&self) -> Result<()> {
        self.bg.check_open(self.closed)?;
        let versions = self.installer.versions;
        if self.opening_inline.load(Ordering::Acquire) {
            // Nothing else runs background work yet: flush here.
            self.freeze(&mut self.writes.writer.lock());
            while !versions.super_version().imm.is_empty() {
                self.flush_oldest()?;
            }
            return Ok(());
        }
        // The memtable frozen now and those before it: what this flush waits for. Memtables
        // frozen later (writes go on) are not waited for, or a writer could keep it waiting.
        let pending = {
            let mut w = self.writes.writer.lock();
            self.freeze(&mut w);
            versions.super_version().imm.clone()
        };
        loop {
            let imm = versions.super_version().imm.clone();
            if !imm
                .iter()
                .any(|m| pending.iter().any(|p| Arc::ptr_eq(m, p)))
            {
                return Ok(());
            }
            self.bg.wait(self.opts.background_runner.as_ref())?;
        }
    }

    /// Turns the memtable into a frozen one and wakes the background to flush it.
    fn freeze(&self, w: &mut WriterState) {
        if self.installer.versions.freeze(w, self.opts) {
            self.bg.wake_locked(self.opts.background_runner.as_ref());
        }
    }

    pub(super) fn flush_oldest(&self) -> Result<()> {
        let versions = self.installer.versions;
        let Some(frozen) = versions.super_version().imm.last().cloned() else {
            return Ok(());
        };
        let alloc = || versions.new_file_number();
        let params = flush_params(self.opts);
        let destroyed = self.namespaces.read().destroyed.clone();
        let tombstones = supersede_index_entries(
            &frozen.mem,
            &versions.super_version().version,
            &self.indexes.read().clone(),
            self.vlog_reader,
            self.counters,
        )?;
        self.insert_tombstones(&frozen.mem, &tombstones);
        let usage = flush_usage(
            &frozen.mem,
            &versions.super_version().version,
            &destroyed,
            self.counters,
            self.background_reader(),
        )?;
        let (props, dropped) = flush_memtable(
            self.storage.as_ref(),
            &frozen.mem,
            params,
            self.opts,
            &destroyed,
            &self.pins.floors(),
            &alloc,
        )?;
        // Earlier segments were synced when the log moved past them.
        frozen.log_sync.sync()?;
        self.storage.sync_dir().ctx("database directory")?;
        let written: u64 = props.iter().map(|p| p.size).sum();
        let mut edit = VersionEdit {
            log_start: Some(frozen.log_end),
            last_seq: Some(frozen.mem.max_seq()),
            added: props.into_iter().map(|p| (0, p)).collect(),
            vlog_dead: dead_bytes_by_segment(&dropped),
            ..VersionEdit::default()
        };
        usage.into_edit(&mut edit);
        self.installer.install(edit, Some(&frozen))?;
        self.retire.gc.liveness.mark_dead(&dropped);
        self.retire.flushed(frozen.mem.max_seq());
        Counters::add(&self.counters.local().flushes, 1);
        Counters::add(&self.counters.local().flush_bytes_written, written);
        Ok(())
    }

    /// Inserts the `tombstones` of indexes still in the set, checked under its lock: an index
    /// whose drop began since they were found may be forgotten (`forget_destroyed`) once it
    /// left the set, and entries of it written after would belong to no tree.
    pub(super) fn insert_tombstones(&self, mem: &Memtable, tombstones: &[(Bytes, SeqNo)]) {
        if tombstones.is_empty() {
            return;
        }
        let set = self.indexes.read();
        insert_tombstones(mem, tombstones, |id| set.contains(id));
    }

    /// The reader threads of background work (a flush's lookups), started on first use: as
    /// the prefetch threads, at the background threads' priority.
    fn background_reader(&self) -> &Arc<ReadPool> {
        self.background_reads.get_or_init(|| {
            let pool = ReadPool::new(
                self.opts.prefetch_threads,
                self.storage.nand_stats().is_some(),
            );
            Arc::new(pool.for_background("cerberus-bgread", self.opts.background_nice))
        })
    }
}
