//! Carries out a compaction task: merges its inputs, drops what no reader can see any more,
//! and writes the output tables.

use super::merge::{LevelSource, MergingIter, Source};
use super::picker::CompactionTask;
use crate::error::Result;
use crate::key::{ikey_nsid, split_ikey, IndexValue, Kind, Nsid, SeqNo, ValueAddr};
use crate::storage::Storage;
use crate::table::{table_name, TableBuilder, TableProps};
use crate::version::{TableHandle, Version, VersionEdit, RUNS};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// How output tables are built.
#[derive(Clone, Copy, Debug)]
pub struct OutputParams {
    pub block_size: usize,
    pub bits_per_key: u32,
    /// Data blocks with a hash index (`Options::block_hash_index`).
    pub hash_index: bool,
    /// Tables with a point index, its fingerprints of this many bits (`Options::point_index`;
    /// `None`: without).
    pub point_index: Option<u32>,
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
            self.builder = Some(
                TableBuilder::new(
                    self.storage,
                    id,
                    self.params.block_size,
                    self.params.bits_per_key,
                )?
                .with_hash_index(self.params.hash_index)
                .with_point_index(self.params.point_index),
            );
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

/// The oldest seqno each key space's readers may read at, taken when a flush or compaction
/// starts: a version at or below it that a newer version at or below it shadows is invisible
/// to every reader of that key space, now and later (a snapshot taken later reads at or above
/// `now`). Snapshots count per namespace, so one namespace's snapshot holds back only its own
/// versions; a secondary index's entries, keyed by the index's id, are listed under that id
/// with the floor of the namespace owning the index.
#[derive(Clone, Debug, Default)]
pub struct SnapshotFloors {
    /// The visible seqno when the floors were taken: the floor of every key space with no
    /// live snapshot.
    now: SeqNo,
    /// Key spaces with a live snapshot: the oldest one's seqno.
    pinned: BTreeMap<Nsid, SeqNo>,
}

impl SnapshotFloors {
    pub fn new(now: SeqNo, pinned: BTreeMap<Nsid, SeqNo>) -> Self {
        SnapshotFloors { now, pinned }
    }

    /// The same floor for every key space.
    pub fn uniform(seq: SeqNo) -> Self {
        SnapshotFloors::new(seq, BTreeMap::new())
    }

    /// The floor of key space `ns` (a namespace or an index).
    pub fn of(&self, ns: Nsid) -> SeqNo {
        self.pinned.get(&ns).map_or(self.now, |&s| s.min(self.now))
    }
}

/// Decides which versions of a key survive a merge.
pub struct Retention {
    /// Each key space's floor: versions at or below it that are shadowed by a newer one at
    /// or below it are invisible to every reader of that key space.
    floors: SnapshotFloors,
    /// The floor of the current key's key space.
    floor: SeqNo,
    /// The key space `floor` was looked up for.
    floor_ns: Option<Nsid>,
    current_user: Vec<u8>,
    /// Seqno of the previous (newer) version of the current user key.
    newer_seq: Option<SeqNo>,
    started: bool,
}

impl Retention {
    pub fn new(floors: SnapshotFloors) -> Self {
        Retention {
            floors,
            floor: 0,
            floor_ns: None,
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
            // Entries come sorted by key space: one lookup per key space met.
            let ns = ikey_nsid(user);
            if self.floor_ns != Some(ns) {
                self.floor_ns = Some(ns);
                self.floor = self.floors.of(ns);
            }
        }
        let shadowed = self.newer_seq.is_some_and(|n| n <= self.floor);
        self.newer_seq = Some(seq);
        if shadowed {
            return true;
        }
        kind == Kind::Delete as u8 && seq <= self.floor && bottommost(user)
    }
}

/// What a compaction needs besides its task.
pub struct RunContext<'a> {
    pub storage: &'a dyn Storage,
    pub params: OutputParams,
    /// What the live snapshots of each key space read (a shared tree or L0 mixes them).
    pub floors: &'a SnapshotFloors,
    /// Destroyed namespaces: their entries are dropped.
    pub destroyed: &'a HashSet<Nsid>,
    pub new_file: &'a dyn Fn() -> u64,
}

/// What a compaction did.
pub struct Compacted {
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
pub fn run(task: &CompactionTask, version: &Version, cx: &RunContext<'_>) -> Result<Compacted> {
    let out_level = task.output_level();
    let mut edit = VersionEdit::default();
    let levels = input_levels(task, version);
    for (t, &level) in task.inputs.iter().zip(&levels) {
        edit.deleted.push((level, t.id()));
    }
    if task.moves {
        debug_assert!(task.is_trivial_move());
        for t in &task.inputs {
            edit.added.push((out_level, t.props.clone()));
        }
        return Ok(Compacted {
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
    let mut sorted: BTreeMap<usize, Vec<Arc<TableHandle>>> = BTreeMap::new();
    for (t, &level) in task.inputs.iter().zip(&levels) {
        if level == 0 || level == RUNS {
            // L0 tables and runs overlap each other: one source each.
            sources.push(Box::new(LevelSource::new(vec![t.clone()])?));
        } else {
            sorted.entry(level).or_default().push(t.clone());
        }
    }
    // A sorted level's tables are one source (a consolidation takes several levels).
    for (_, tables) in sorted {
        sources.push(Box::new(LevelSource::new(tables)?));
    }
    sources.push(Box::new(LevelSource::new(task.overlapping.clone())?));
    let mut merged = MergingIter::new(sources);
    let mut sink = TableSink::new(cx.storage, cx.params, cx.new_file);
    let mut rule = Retention::new(cx.floors.clone());
    let bottommost = |user: &[u8]| !version.deeper_overlaps(out_level, user, user);
    let mut dropped = Vec::new();
    while merged.valid() {
        let in_destroyed =
            !cx.destroyed.is_empty() && cx.destroyed.contains(&crate::key::ikey_nsid(merged.key()));
        if !in_destroyed && !rule.drop_entry(merged.key(), bottommost) {
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
    Ok(Compacted {
        edit,
        bytes_read: task.input_bytes(),
        bytes_written: written,
        written_by_ns: by_ns.into_iter().collect(),
        dropped,
    })
}

/// The level each input of `task` is in: `task.level`, except that an L0 merge straight into
/// L1 takes the namespace's runs along, and a consolidation takes a namespace's runs and
/// levels at once.
fn input_levels(task: &CompactionTask, version: &Version) -> Vec<usize> {
    let mut found: BTreeMap<u64, usize> = BTreeMap::new();
    for t in &version.runs {
        found.insert(t.id(), RUNS);
    }
    for (level, tables) in version.levels.iter().enumerate().skip(1) {
        for t in tables {
            found.insert(t.id(), level);
        }
    }
    task.inputs
        .iter()
        .map(|t| found.get(&t.id()).copied().unwrap_or(task.level))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_ikey;

    #[test]
    fn drop_rule_keeps_newest_and_snapshot_versions() {
        let mut r = Retention::new(SnapshotFloors::uniform(10));
        let never = |_: &[u8]| false;
        assert!(!r.drop_entry(&make_ikey(0, b"a", 12, Kind::Put), never));
        // Only versions shadowed by a version at or below the snapshot go.
        assert!(!r.drop_entry(&make_ikey(0, b"a", 11, Kind::Put), never));
        assert!(!r.drop_entry(&make_ikey(0, b"a", 9, Kind::Put), never));
        assert!(r.drop_entry(&make_ikey(0, b"a", 5, Kind::Put), never));
        assert!(!r.drop_entry(&make_ikey(0, b"b", 3, Kind::Delete), never));
        assert!(r.drop_entry(&make_ikey(0, b"c", 3, Kind::Delete), |_| true));
    }

    #[test]
    fn each_key_space_keeps_what_its_own_snapshots_read() {
        // Namespace 1 has a snapshot at 10 and owns index 7; namespace 2 has none.
        let floors = SnapshotFloors::new(50, [(1, 10), (7, 10)].into_iter().collect());
        assert_eq!((floors.of(1), floors.of(2), floors.of(7)), (10, 50, 10));
        let mut r = Retention::new(floors);
        let never = |_: &[u8]| false;
        for ns in [1, 7] {
            assert!(!r.drop_entry(&make_ikey(ns, b"a", 30, Kind::Put), never));
            // Shadowed by 30, but 30 is above the snapshot, which reads this version.
            assert!(!r.drop_entry(&make_ikey(ns, b"a", 9, Kind::Put), never));
            assert!(r.drop_entry(&make_ikey(ns, b"a", 5, Kind::Put), never));
            assert!(!r.drop_entry(&make_ikey(ns, b"b", 20, Kind::Delete), |_| true));
        }
        // Namespace 2's shadowed versions and bottommost tombstones go at once.
        assert!(!r.drop_entry(&make_ikey(2, b"a", 30, Kind::Put), never));
        assert!(r.drop_entry(&make_ikey(2, b"a", 9, Kind::Put), never));
        assert!(r.drop_entry(&make_ikey(2, b"b", 20, Kind::Delete), |_| true));
        // A seqno above the visible one (a write since) keeps the floor at `now`.
        let floors = SnapshotFloors::new(50, [(3, 60)].into_iter().collect());
        assert_eq!(floors.of(3), 50);
    }
}
