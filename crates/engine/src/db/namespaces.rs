//! Namespaces: creation, destruction, and their counters and tree shape.

use super::background_state::Background;
use super::dead_bytes::dead_bytes_by_segment;
use super::flush::Installer;
use super::gc_state::GcState;
use super::indexes::IndexAdmin;
use super::level_stats::level_stats;
use super::manual_slots::ManualSlots;
use super::namespace_set::{NsEntry, NsState};
use super::pin_keeper::PinKeeper;
use super::snapshots::Snapshots;
use super::versions::Versions;
use super::write_queue::WriteQueue;
use crate::error::{Error, Result};
use crate::key::{self, IndexValue, Nsid, DEFAULT_NS};
use crate::namespace_options::NamespaceOptions;
use crate::options::{Layout, Options};
use crate::row_cache::RowCache;
use crate::stats::{Counters, NamespaceStats};
use crate::version::{TableHandle, VersionEdit, RUNS};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The parts the creation, settings, destruction and figures of namespaces touch, borrowed.
pub(super) struct NamespaceAdmin<'a, F> {
    pub(super) opts: &'a Options,
    /// Counters of background work (their page size is each namespace's).
    pub(super) counters: &'a Arc<Counters>,
    pub(super) closed: &'a AtomicBool,
    pub(super) bg: &'a Background,
    pub(super) versions: &'a Versions,
    pub(super) namespaces: &'a RwLock<NsState>,
    /// The commit queue and the writer lock a destroy waits on.
    pub(super) writes: &'a WriteQueue,
    pub(super) gc: &'a GcState,
    pub(super) snapshots: &'a Snapshots,
    pub(super) row_cache: Option<&'a RowCache>,
    pub(super) indexes: IndexAdmin<'a>,
    pub(super) pins: PinKeeper<'a>,
    pub(super) installer: Installer<'a, F>,
}

impl<F: Fn()> NamespaceAdmin<'_, F> {
    fn check_open(&self) -> Result<()> {
        self.bg.check_open(self.closed)
    }

    pub(super) fn ns_entry(&self, ns: Nsid) -> Result<Arc<NsEntry>> {
        self.namespaces.read().entry(ns)
    }

    pub(super) fn create_namespace(
        &self,
        name: &str,
        options: NamespaceOptions,
    ) -> Result<Arc<NsEntry>> {
        self.check_open()?;
        options.validate()?;
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
        self.versions.log_edit(
            &mut vs,
            VersionEdit {
                created_ns: vec![(ns, name.to_string())],
                next_nsid: Some(ns + 1),
                // Defaults need no record: a namespace without one has them.
                ns_options: (options != NamespaceOptions::default())
                    .then_some((ns, options))
                    .into_iter()
                    .collect(),
                ..VersionEdit::default()
            },
        )?;
        let entry = Arc::new(NsEntry::new(ns, name, self.counters));
        *entry.options.write() = options;
        self.namespaces.write().live.insert(ns, entry.clone());
        Ok(entry)
    }

    /// Gives namespace `e` new settings (validated), kept in the manifest. A capacity below
    /// what it uses refuses further growth only.
    pub(super) fn configure_namespace(&self, e: &NsEntry, options: NamespaceOptions) -> Result<()> {
        self.check_open()?;
        e.check_live()?;
        options.validate()?;
        let mut vs = self.versions.lock();
        // Checked under the manifest's lock: a destroy is logged under it too.
        e.check_live()?;
        self.versions.log_edit(
            &mut vs,
            VersionEdit {
                ns_options: vec![(e.id, options)],
                ..VersionEdit::default()
            },
        )?;
        *e.options.write() = options;
        Ok(())
    }

    pub(super) fn destroy_namespace(&self, ns: Nsid) -> Result<()> {
        self.check_open()?;
        if ns == DEFAULT_NS {
            return Err(Error::InvalidArgument(
                "the default namespace cannot be destroyed".into(),
            ));
        }
        let e = self.ns_entry(ns)?;
        // Writes are refused from here, and nothing of the namespace lands once the ids join
        // the destroyed set (a background flush may then forget them at any time): the flag
        // is set under the commit queue's lock, where each write checks it (`commit`), the
        // writes queued before it are waited for, and so is the holder of the writer lock
        // (a write alone, GC's rewrites and backfills check the flag under it).
        self.take_offline(&e)?;
        self.writes.wait_queued();
        // Its indexes go with it.
        let mut ids = vec![ns];
        ids.extend(self.versions.lock().namespaces.indexes_of(ns).map(|d| d.id));
        if let Err(err) = self.drop_trees(&ids) {
            // Still in the manifest: the namespace is back as it was.
            let _queue = self.writes.queue.lock();
            e.live.store(true, Ordering::Release);
            return Err(err);
        }
        self.indexes.dropped();
        let mut state = self.namespaces.write();
        state.live.remove(&ns);
        let n = self.opts.num_levels;
        e.counters.accumulate(&mut state.destroyed_counters, n);
        e.list_counters.accumulate(&mut state.destroyed_counters, n);
        drop(state);
        self.forget_destroyed_quietly();
        if let Some(rc) = self.row_cache {
            rc.drop_namespace(ns);
        }
        Ok(())
    }

    /// Clears namespace `e`'s flag under the commit queue's lock; `UnknownNamespace` if
    /// another destroy did first.
    fn take_offline(&self, e: &NsEntry) -> Result<()> {
        let _queue = self.writes.queue.lock();
        match e.live.swap(false, Ordering::AcqRel) {
            true => Ok(()),
            false => Err(Error::UnknownNamespace(e.id)),
        }
    }

    /// Destroys the namespaces (or indexes) `ids` in the manifest: their own tables go at
    /// once, and their entries in the memtables, L0 and runs become unreachable at once (the
    /// destroyed set) and are dropped by the next flush or compaction.
    pub(super) fn drop_trees(&self, ids: &[Nsid]) -> Result<()> {
        // No compaction may run meanwhile: it could write tables of `ids` back.
        let runner = self.opts.background_runner.as_ref();
        let _slots = ManualSlots::acquire(self.bg, self.closed, runner)?;
        let dead = self.remove_trees(ids)?;
        self.join_destroyed_set(ids, &dead);
        Ok(())
    }

    /// The first half of [`drop_trees`](Self::drop_trees): logs the destruction and takes
    /// the own tables of `ids` out of the version. Returns the value addresses that died
    /// with them. Until [`join_dead_set`](Self::join_dead_set), readers see the namespaces'
    /// memtable, L0 and run entries still, and their deeper tables no more.
    pub(super) fn remove_trees(&self, ids: &[Nsid]) -> Result<Vec<key::ValueAddr>> {
        {
            let version = self.versions.lock().current();
            let own: Vec<(usize, &Arc<TableHandle>)> = version
                .levels
                .iter()
                .enumerate()
                .skip(1)
                .flat_map(|(l, ts)| {
                    ts.iter()
                        .filter(|t| t.only_namespace().is_some_and(|n| ids.contains(&n)))
                        .map(move |t| (l, t))
                })
                .chain(
                    ids.iter()
                        .flat_map(|&ns| version.runs_of(ns).iter().map(|t| (RUNS, t))),
                )
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
            self.installer.install(
                VersionEdit {
                    destroyed_ns: ids.to_vec(),
                    deleted: own.iter().map(|(l, t)| (*l, t.id())).collect(),
                    vlog_dead: dead_bytes_by_segment(&dead),
                    ..VersionEdit::default()
                },
                None,
            )?;
            Ok(dead)
        }
    }

    /// The second half of [`drop_trees`](Self::drop_trees): the values in `dead` are
    /// garbage for GC, and the entries of `ids` left in memtables, L0 and runs are
    /// unreachable and dropped by the next flush or compaction.
    fn join_destroyed_set(&self, ids: &[Nsid], dead: &[key::ValueAddr]) {
        self.gc.liveness.mark_dead(dead);
        self.bg.state.lock().policy.reclaim_gc();
        self.bg.wake(self.opts.background_runner.as_ref());
        let mut state = self.namespaces.write();
        let mut set = (*state.destroyed).clone();
        set.extend(ids.iter().copied());
        state.destroyed = Arc::new(set);
    }

    /// Forgets the destroyed ids nothing can refer to any more: no memtable entry, no table
    /// entry, no snapshot. The destroyed set and the manifest's list of destroyed ids then stay as
    /// small as what is left to drop (ids are never reused: the registry's next id says which
    /// were handed out). Called after a destroy, a background job, a manual compaction or GC.
    pub(super) fn forget_destroyed(&self) -> Result<()> {
        let destroyed = self.namespaces.read().destroyed.clone();
        if destroyed.is_empty() {
            return Ok(());
        }
        // Memtables and tables of one super version: entries of a destroyed id only ever
        // leave them (the flush that drops its memtable entries installs with its tables).
        // An index still in the set may get tombstones from a flush (`Flusher::
        // insert_tombstones`): its id stays until the set lets it go.
        let set = self.indexes.set.read().clone();
        let sv = self.versions.super_version();
        let mut gone = Vec::new();
        'ids: for &id in destroyed.iter().filter(|id| !set.contains(**id)) {
            let mems = std::iter::once(&sv.mem).chain(sv.imm.iter().map(|f| &f.mem));
            if self.snapshots.count_of(id) > 0 || mems.into_iter().any(|m| m.entries_of(id) > 0) {
                continue;
            }
            let tables = sv.version.levels.iter().flatten();
            for t in tables.chain(&sv.version.runs) {
                if t.entries_of(id)? > 0 {
                    continue 'ids;
                }
            }
            gone.push(id);
        }
        if gone.is_empty() {
            return Ok(());
        }
        let mut vs = self.versions.lock();
        let mut state = self.namespaces.write();
        let mut set = (*state.destroyed).clone();
        for id in &gone {
            set.remove(id);
            vs.namespaces.destroyed.remove(id);
        }
        state.destroyed = Arc::new(set);
        drop((state, vs));
        // The flush or compaction that dropped their last entries marked those values dead:
        // GC reclaims what they leave (the look at the destroy found only what was marked
        // then).
        self.bg.state.lock().policy.reclaim_gc();
        Ok(())
    }

    /// [`forget_destroyed`](Self::forget_destroyed) as housekeeping: a failed table read
    /// leaves the ids for the next try, and fails nothing.
    pub(super) fn forget_destroyed_quietly(&self) {
        if let Err(e) = self.forget_destroyed() {
            tracing::warn!(error = %e, "could not look for destroyed namespaces to forget");
        }
    }

    pub(super) fn namespace_stats(&self, entry: &NsEntry) -> Result<NamespaceStats> {
        entry.check_live()?;
        let ns = entry.id;
        let mut s = entry.counters.namespace_stats(ns, self.opts.num_levels);
        s.listings = entry.list_counters.listing_stats();
        self.pins.reap();
        s.snapshots = self.snapshots.count_of(ns);
        let sv = self.versions.super_version();
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
                    .filter(|t| match self.opts.layout {
                        Layout::PerNamespace if level > 0 => t.only_namespace() == Some(ns),
                        // L0, and the shared tree's levels: the tables whose key range
                        // takes in the namespace's.
                        _ => t.may_hold_namespace(ns),
                    })
                    .collect();
                level_stats(&mine)
            })
            .collect();
        s.runs = level_stats(&version.runs_of(ns).iter().collect::<Vec<_>>());
        Ok(s)
    }
}

#[cfg(test)]
#[path = "namespaces_tests.rs"]
mod tests;
