//! Flushes, and the version edits they and compactions record in the manifest.

use super::dead_bytes::dead_bytes_by_segment;
use super::flush_table::{flush_memtable, flush_params};
use super::flush_usage::flush_usage;
use super::inner::Inner;
use super::super_version::Frozen;
use super::supersede::supersede_index_entries;
use crate::error::{IoContext, Result};
use crate::stats::Counters;
use crate::version::VersionEdit;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Inner {
    pub(super) fn flush(&self) -> Result<()> {
        self.check_open()?;
        if self.opening_inline.load(Ordering::Acquire) {
            // Nothing else runs background work yet: flush here.
            self.freeze_memtable(&mut self.writes.writer.lock())?;
            while !self.versions.super_version().imm.is_empty() {
                self.flush_oldest()?;
            }
            return Ok(());
        }
        // The memtable frozen now and those before it: what this flush waits for. Memtables
        // frozen later (writes go on) are not waited for, or a writer could keep it waiting.
        let pending = {
            let mut w = self.writes.writer.lock();
            self.freeze_memtable(&mut w)?;
            self.versions.super_version().imm.clone()
        };
        loop {
            let imm = self.versions.super_version().imm.clone();
            if !imm
                .iter()
                .any(|m| pending.iter().any(|p| Arc::ptr_eq(m, p)))
            {
                return Ok(());
            }
            self.wait_for_background()?;
        }
    }

    pub(super) fn flush_oldest(&self) -> Result<()> {
        let Some(frozen) = self.versions.super_version().imm.last().cloned() else {
            return Ok(());
        };
        let alloc = || self.versions.new_file_number();
        let params = flush_params(&self.opts);
        let destroyed = self.namespaces.read().destroyed.clone();
        supersede_index_entries(
            &frozen.mem,
            &self.versions.super_version().version,
            &self.index_set(),
            &self.vlog_reader,
            &self.counters,
        )?;
        let usage = flush_usage(
            &frozen.mem,
            &self.versions.super_version().version,
            &destroyed,
            &self.counters,
            self.background_reader(),
        )?;
        let (props, dropped) = flush_memtable(
            self.storage.as_ref(),
            &frozen.mem,
            params,
            &self.opts,
            &destroyed,
            &self.pins().floors(),
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
        self.install(edit, Some(&frozen))?;
        self.gc.liveness.mark_dead(&dropped);
        self.retire_flushed_segments(frozen.mem.max_seq());
        Counters::add(&self.counters.local().flushes, 1);
        Counters::add(&self.counters.local().flush_bytes_written, written);
        Ok(())
    }

    /// Logs `edit` and installs its version; `flushed` is the memtable it made durable.
    pub(super) fn install(&self, edit: VersionEdit, flushed: Option<&Arc<Frozen>>) -> Result<()> {
        self.versions.install(
            edit,
            flushed,
            &self.index_flush,
            &self.capacity_flush.epoch,
            || {
                #[cfg(test)]
                self.hooks.before_swap(self);
            },
        )
    }
}
