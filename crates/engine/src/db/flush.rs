//! Flushes, and the version edits they and compactions record in the manifest.

use super::dead_bytes::dead_bytes_by_segment;
use super::super_version::Frozen;
use super::supersede::supersede_index_entries;
use super::usage::flush_usage;
use super::Inner;
use crate::compaction::{OutputParams, Retention, SnapshotFloors, TableSink};
use crate::error::{IoContext, Result};
use crate::key::{self, IndexValue, Kind, Nsid};
use crate::memtable::Memtable;
use crate::options::{Layout, Options};
use crate::stats::Counters;
use crate::table::TableProps;
use crate::version::VersionEdit;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A flush writes one L0 table holding every namespace.
pub(super) fn flush_params(opts: &Options) -> OutputParams {
    OutputParams {
        split_by_namespace: false,
        ..output_params(opts, u64::MAX)
    }
}

pub(super) fn output_params(opts: &Options, target_table_bytes: u64) -> OutputParams {
    OutputParams {
        block_size: opts.block_size,
        bits_per_key: opts.filter_bits_per_key,
        hash_index: opts.block_hash_index,
        target_table_bytes,
        split_by_namespace: opts.layout == Layout::PerNamespace,
    }
}

/// Writes a memtable as L0 table(s); drops the entries of destroyed namespaces and the
/// versions shadowed within it that no snapshot can see. The table holds every namespace:
/// each entry is kept for the snapshots of its own namespace (`floors`).
pub(super) fn flush_memtable(
    storage: &dyn crate::storage::Storage,
    mem: &Memtable,
    params: OutputParams,
    opts: &Options,
    destroyed: &HashSet<Nsid>,
    floors: &SnapshotFloors,
    new_file: &dyn Fn() -> u64,
) -> Result<(Vec<TableProps>, Vec<key::ValueAddr>)> {
    let mut sink = TableSink::new(storage, params, new_file);
    let mut dropped = Vec::new();
    let mut rule = Retention::new(floors.clone());
    let mut ikey = Vec::new();
    let mut val = Vec::new();
    for (k, v) in mem.iter() {
        ikey.clear();
        ikey.extend_from_slice(&k.user);
        key::push_trailer(&mut ikey, k.seq, v.kind);
        let in_destroyed = !destroyed.is_empty() && destroyed.contains(&key::ikey_nsid(&k.user));
        if in_destroyed || rule.drop_entry(&ikey, |_| false) {
            if v.kind == Kind::Put && !v.addr.is_none() {
                dropped.push(v.addr);
            }
            continue;
        }
        val.clear();
        match v.kind {
            Kind::Delete => IndexValue::Tombstone.encode(&mut val),
            Kind::Put if v.addr.is_none() => IndexValue::Table(v.value.clone()).encode(&mut val),
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
            &self.snapshot_floors(),
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
