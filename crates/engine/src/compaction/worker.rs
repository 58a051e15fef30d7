//! Carries out a compaction task: merges its inputs, drops what no reader can see any more,
//! and writes the output tables.

use super::merge::{LevelSource, MergingIter, Source};
use super::picker::CompactionTask;
use crate::error::Result;
use crate::key::{split_ikey, IndexValue, Kind, Nsid, SeqNo, ValueAddr};
use crate::storage::Storage;
use crate::table::{table_name, TableBuilder, TableProps};
use crate::version::{Version, VersionEdit, RUNS};
use std::collections::HashSet;

/// How output tables are built.
#[derive(Clone, Copy, Debug)]
pub struct OutputParams {
    pub block_size: usize,
    pub bits_per_key: u32,
    pub target_table_bytes: u64,
    /// Start a new table at every namespace boundary (per-namespace trees).
    pub split_by_namespace: bool,
}

/// Writes a sorted stream into tables of about `target_table_bytes`, never splitting the
/// versions of one key across two tables.
pub struct TableSink<'a> {
    storage: &'a dyn Storage,
    params: OutputParams,
    new_file: &'a dyn Fn() -> u64,
    builder: Option<TableBuilder>,
    last_user: Vec<u8>,
    outputs: Vec<TableProps>,
    created: Vec<u64>,
}

impl<'a> TableSink<'a> {
    pub fn new(
        storage: &'a dyn Storage,
        params: OutputParams,
        new_file: &'a dyn Fn() -> u64,
    ) -> Self {
        TableSink {
            storage,
            params,
            new_file,
            builder: None,
            last_user: Vec::new(),
            outputs: Vec::new(),
            created: Vec::new(),
        }
    }

    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let user = crate::key::ikey_user(ikey);
        let full = self
            .builder
            .as_ref()
            .is_some_and(|b| b.estimated_size() >= self.params.target_table_bytes);
        let new_ns = self.params.split_by_namespace
            && self.builder.is_some()
            && crate::key::ikey_nsid(user) != crate::key::ikey_nsid(&self.last_user);
        if new_ns || (full && user != self.last_user.as_slice()) {
            self.finish_table()?;
        }
        if self.builder.is_none() {
            let id = (self.new_file)();
            self.created.push(id);
            self.builder = Some(TableBuilder::new(
                self.storage,
                id,
                self.params.block_size,
                self.params.bits_per_key,
            )?);
        }
        if let Some(b) = &mut self.builder {
            b.add(ikey, value)?;
        }
        self.last_user.clear();
        self.last_user.extend_from_slice(user);
        Ok(())
    }

    fn finish_table(&mut self) -> Result<()> {
        if let Some(b) = self.builder.take() {
            self.outputs.push(b.finish()?);
        }
        Ok(())
    }

    /// Finishes the last table and returns all outputs.
    pub fn finish(mut self) -> Result<Vec<TableProps>> {
        self.finish_table()?;
        self.created.clear();
        Ok(std::mem::take(&mut self.outputs))
    }
}

impl Drop for TableSink<'_> {
    /// A sink dropped before `finish` (an error) removes the files it created.
    fn drop(&mut self) {
        self.builder = None;
        for id in self.created.drain(..) {
            let _ = self.storage.delete(&table_name(id));
        }
    }
}

/// Decides which versions of a key survive a merge.
pub struct Retention {
    /// Versions at or below this seqno that are shadowed by a newer one are invisible to
    /// every reader.
    pub smallest_snapshot: SeqNo,
    current_user: Vec<u8>,
    /// Seqno of the previous (newer) version of the current user key.
    newer_seq: Option<SeqNo>,
    started: bool,
}

impl Retention {
    pub fn new(smallest_snapshot: SeqNo) -> Self {
        Retention {
            smallest_snapshot,
            current_user: Vec::new(),
            newer_seq: None,
            started: false,
        }
    }

    /// Whether the entry `ikey` can go. `bottommost(user)` says no deeper level may hold the
    /// key, so a tombstone can go too.
    pub fn drop_entry(&mut self, ikey: &[u8], bottommost: impl Fn(&[u8]) -> bool) -> bool {
        let Some((user, seq, kind)) = split_ikey(ikey) else {
            return false;
        };
        if !self.started || user != self.current_user.as_slice() {
            self.started = true;
            self.current_user.clear();
            self.current_user.extend_from_slice(user);
            self.newer_seq = None;
        }
        let shadowed = self.newer_seq.is_some_and(|n| n <= self.smallest_snapshot);
        self.newer_seq = Some(seq);
        if shadowed {
            return true;
        }
        kind == Kind::Delete as u8 && seq <= self.smallest_snapshot && bottommost(user)
    }
}

/// What a compaction needs besides its task.
pub struct RunContext<'a> {
    pub storage: &'a dyn Storage,
    pub params: OutputParams,
    pub smallest_snapshot: SeqNo,
    /// A lone table with nothing below it moves down without a rewrite (a manual compaction
    /// rewrites it to drop what it can).
    pub allow_move: bool,
    /// Destroyed namespaces: their entries are dropped.
    pub dead: &'a HashSet<Nsid>,
    pub new_file: &'a dyn Fn() -> u64,
}

/// What a compaction did.
pub struct Outcome {
    pub edit: VersionEdit,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Bytes written per namespace (each output table holds one namespace, except in a
    /// shared tree, where it counts under the namespace of its first key).
    pub written_by_ns: Vec<(Nsid, u64)>,
    /// Value-log records of the versions it dropped: dead from now on.
    pub dropped: Vec<ValueAddr>,
}

/// Runs `task` against `version`.
pub fn run(task: &CompactionTask, version: &Version, cx: &RunContext<'_>) -> Result<Outcome> {
    let out_level = task.output_level();
    let mut edit = VersionEdit::default();
    for t in &task.inputs {
        // An L0 merge straight into L1 takes the namespace's runs along.
        let from_runs = task.level == 0 && version.runs.iter().any(|r| r.id() == t.id());
        let level = if from_runs { RUNS } else { task.level };
        edit.deleted.push((level, t.id()));
    }
    if cx.allow_move && task.is_trivial_move() {
        for t in &task.inputs {
            edit.added.push((out_level, t.props.clone()));
        }
        return Ok(Outcome {
            edit,
            bytes_read: 0,
            bytes_written: 0,
            written_by_ns: Vec::new(),
            dropped: Vec::new(),
        });
    }
    for t in &task.overlapping {
        edit.deleted.push((out_level, t.id()));
    }
    let mut sources: Vec<Box<dyn Source>> = Vec::new();
    // L0 tables and runs overlap each other: one source each.
    if task.level == 0 || task.level == RUNS {
        for t in &task.inputs {
            sources.push(Box::new(LevelSource::new(vec![t.clone()])?));
        }
    } else {
        sources.push(Box::new(LevelSource::new(task.inputs.clone())?));
    }
    sources.push(Box::new(LevelSource::new(task.overlapping.clone())?));
    let mut merged = MergingIter::new(sources);
    let mut sink = TableSink::new(cx.storage, cx.params, cx.new_file);
    let mut rule = Retention::new(cx.smallest_snapshot);
    let bottommost = |user: &[u8]| !version.deeper_overlaps(out_level, user, user);
    let mut dropped = Vec::new();
    while merged.valid() {
        let dead = !cx.dead.is_empty() && cx.dead.contains(&crate::key::ikey_nsid(merged.key()));
        if !dead && !rule.drop_entry(merged.key(), bottommost) {
            sink.add(merged.key(), &merged.value())?;
        } else if let Some(IndexValue::Addr { addr, .. }) = IndexValue::decode(&merged.value()) {
            dropped.push(addr);
        }
        merged.advance()?;
    }
    let outputs = sink.finish()?;
    let written = outputs.iter().map(|p| p.size).sum();
    let mut by_ns: std::collections::BTreeMap<Nsid, u64> = Default::default();
    for p in outputs {
        *by_ns.entry(crate::key::ikey_nsid(&p.smallest)).or_default() += p.size;
        edit.added.push((out_level, p));
    }
    Ok(Outcome {
        edit,
        bytes_read: task.input_bytes(),
        bytes_written: written,
        written_by_ns: by_ns.into_iter().collect(),
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_ikey;

    #[test]
    fn drop_rule_keeps_newest_and_snapshot_versions() {
        let mut r = Retention::new(10);
        let never = |_: &[u8]| false;
        assert!(!r.drop_entry(&make_ikey(0, b"a", 12, Kind::Put), never));
        // Only versions shadowed by a version at or below the snapshot go.
        assert!(!r.drop_entry(&make_ikey(0, b"a", 11, Kind::Put), never));
        assert!(!r.drop_entry(&make_ikey(0, b"a", 9, Kind::Put), never));
        assert!(r.drop_entry(&make_ikey(0, b"a", 5, Kind::Put), never));
        assert!(!r.drop_entry(&make_ikey(0, b"b", 3, Kind::Delete), never));
        assert!(r.drop_entry(&make_ikey(0, b"c", 3, Kind::Delete), |_| true));
    }
}
