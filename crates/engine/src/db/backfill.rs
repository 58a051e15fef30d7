//! Index backfills: the entries of the records a namespace held when an index was created,
//! checked against the namespace's capacity, and made durable without a flush of the shared
//! memtable per index (docs/quotas.md, Indexes).

use super::index_flushes::IndexFlushes;
use super::index_set::{entries_of, entry_bytes, insert_entries, IndexSet, LiveIndex};
use super::indexes::IndexAdmin;
use super::namespace_set::NsEntry;
use super::namespaces::NamespaceAdmin;
use super::pin_keeper::PinKeeper;
use super::read::Reader;
use super::snapshots::Snapshots;
use super::versions::Versions;
use super::write::WritePath;
use super::write_queue::WriteQueue;
use crate::error::{Error, Result};
use crate::key::{self, Kind, Nsid, SeqNo};
use crate::memtable::Memtable;
use crate::version::VersionEdit;
use crate::vlog::VlogReader;
use bytes::Bytes;
use parking_lot::RwLock;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// Entries a backfill inserts under one hold of the writer lock.
const BACKFILL_CHUNK: usize = 1024;

/// Records of a chunk: key, value, address, seqno.
type Chunk = Vec<(Bytes, Bytes, key::ValueAddr, SeqNo)>;

/// The parts an index's backfill touches, borrowed: the write path its inserts take (and
/// through it the capacity checks and the flusher), the reader its scan takes, and the
/// namespaces' admin that drops an index the capacity refused.
pub(super) struct Backfiller<'a, F, N, R> {
    pub(super) writes: &'a WriteQueue,
    pub(super) versions: &'a Versions,
    pub(super) indexes: &'a RwLock<Arc<IndexSet>>,
    pub(super) snapshots: &'a Snapshots,
    pub(super) vlog_reader: &'a VlogReader,
    /// Flushes index backfills made, and the indexes ready before their flush.
    pub(super) index_flush: &'a IndexFlushes,
    pub(super) opened: &'a Instant,
    pub(super) index_admin: IndexAdmin<'a>,
    pub(super) pins: PinKeeper<'a>,
    pub(super) reader: Reader<'a, R>,
    pub(super) write: WritePath<'a, F>,
    pub(super) namespaces: NamespaceAdmin<'a, N>,
}

impl<F: Fn(), N: Fn(), R: Fn()> Backfiller<'_, F, N, R> {
    /// Adds the entries of every record `e` held when index `id` was created, makes them
    /// durable, and marks the index ready. Entries that would take the namespace past its
    /// capacity (or the device's reserve) fail it with `CapacityExceeded`, and the index is
    /// dropped (registry, entries and the bytes charged so far): nothing of it remains.
    pub(super) fn backfill(&self, e: &NsEntry, id: Nsid) -> Result<()> {
        match self.backfill_and_mark(e, id) {
            // The index went with its namespace: the error of any call on a destroyed one.
            Err(Error::UnknownIndex(_)) if e.check_live().is_err() => {
                Err(Error::UnknownNamespace(e.id))
            }
            r => r,
        }
    }

    /// [`backfill`](Self::backfill) but for its error when the namespace went meanwhile.
    fn backfill_and_mark(&self, e: &NsEntry, id: Nsid) -> Result<()> {
        let mut charged: Vec<(Arc<Memtable>, u64)> = Vec::new();
        let result = self.backfill_entries(e, id, &mut charged);
        if let Err(err @ (Error::CapacityExceeded { .. } | Error::ReserveReached { .. })) = result {
            for (mem, bytes) in charged {
                mem.charge(e.id, 0, bytes);
            }
            self.drop_refused_index(id)?;
            return Err(err);
        }
        result?;
        self.mark_ready(e, id)
    }

    /// Drops index `id`, whose backfill the capacity or the reserve refused.
    fn drop_refused_index(&self, id: Nsid) -> Result<()> {
        {
            let _w = self.writes.writer.lock();
            self.index_admin.take_out(id);
        }
        let dropped = self.namespaces.drop_trees(&[id]);
        self.index_admin.unlinked(id, dropped)
    }

    /// The backfill's scan and inserts; `charged` gets the bytes charged per memtable.
    fn backfill_entries(
        &self,
        e: &NsEntry,
        id: Nsid,
        charged: &mut Vec<(Arc<Memtable>, u64)>,
    ) -> Result<()> {
        let set = self.indexes.read().clone();
        let Some(idx) = set.of(e.id).iter().find(|i| i.def.id == id).cloned() else {
            return Err(Error::UnknownIndex(format!(
                "index {id} of namespace {}",
                e.id
            )));
        };
        // Writes after this seqno derive their own entries (the set was loaded before it). A
        // snapshot of the namespace: GC and compactions keep the records it scans.
        let (seq, pin, _) = self.snapshots.acquire(e.id, &self.writes.visible_seq, None);
        let result = (|| {
            let config = crate::table::IterConfig {
                fill_cache: false,
                readahead: None,
            };
            let mut scan =
                self.versions
                    .super_version()
                    .scan(e.id, seq, &e.list_counters, &config)?;
            let _pin = self.vlog_reader.pin();
            scan.seek(&[])?;
            let one = [idx.clone()];
            let mut chunk: Chunk = Vec::with_capacity(BACKFILL_CHUNK);
            loop {
                let done = !scan.valid();
                if !done && scan.kind() == Kind::Put {
                    let pk = Bytes::copy_from_slice(scan.key());
                    let (value, addr) = match self.reader.scanned_value(
                        scan.index_value(),
                        e.id,
                        &pk,
                        &e.list_counters,
                    )? {
                        (v, Some(addr)) => (v, addr),
                        (_, None) => {
                            return Err(Error::corruption(
                                "index",
                                0,
                                "backfill met a record without a value-log address",
                            ))
                        }
                    };
                    chunk.push((pk, value, addr, scan.seq()));
                }
                if done || chunk.len() >= BACKFILL_CHUNK {
                    self.insert_chunk(e, &one, &mut chunk, charged)?;
                }
                if done {
                    break;
                }
                scan.next()?;
            }
            Ok(())
        })();
        self.pins.release(e.id, seq, pin);
        result
    }

    /// Inserts the entries of `chunk` (emptied) whose record is still current, if the
    /// namespace's capacity has room for them.
    fn insert_chunk(
        &self,
        e: &NsEntry,
        one: &[Arc<LiveIndex>],
        chunk: &mut Chunk,
        charged: &mut Vec<(Arc<Memtable>, u64)>,
    ) -> Result<()> {
        // A close stops it between chunks (the next open starts it again).
        self.write.check_open()?;
        // Under the writer lock: the memtable cannot be frozen meanwhile, and a destroy of
        // the namespace (which clears its flag, then waits for this lock, before its ids may
        // be forgotten) or a drop of the index (which takes it out of the set under this
        // lock, before its id may be forgotten) either refuses these entries here or finds
        // them.
        let mut w = self.writes.writer.lock();
        e.check_live()?;
        let set = self.indexes.read().clone();
        if let Some(gone) = one.iter().find(|i| !set.contains(i.def.id)) {
            return Err(Error::UnknownIndex(format!(
                "index {} of namespace {}, dropped during its backfill",
                gone.def.id, e.id
            )));
        }
        self.write.make_room(&mut w)?;
        let mem = self.versions.super_version().mem.clone();
        let mut staged = Vec::with_capacity(chunk.len());
        let mut bytes = 0u64;
        for (pk, value, addr, at) in chunk.drain(..) {
            // Only a record still current gets an entry: a write since the snapshot may
            // have been flushed, its tombstone for this entry compacted away before the
            // entry existed. Checked under the writer lock: a write after the check
            // supersedes the entry at its own flush.
            let hit = self.reader.lookup(e.id, &pk, None, &e.list_counters)?;
            if !hit.is_some_and(|h| h.kind == Kind::Put && h.addr == Some(addr)) {
                continue;
            }
            let entries = entries_of(one, &pk, &value, addr, at);
            bytes += entries.iter().map(entry_bytes).sum::<u64>();
            staged.push((entries, at));
        }
        // The device's reserve, as every put's: a namespace without a capacity must not
        // fill the disk through its indexes.
        if bytes > 0 {
            self.write.quotas.check_reserve()?;
        }
        // Under the writer lock: no write of the namespace lands between the check and
        // the inserts.
        if let Some(capacity) = e.options.read().capacity {
            let (used, pending) = self.write.quotas.room_figures(e.id);
            if bytes > 0 && used.saturating_add_signed(pending).saturating_add(bytes) > capacity {
                let pending = pending.max(0).unsigned_abs();
                return Err(self.write.quotas.over(e.id, used, pending, bytes, capacity));
            }
        }
        for (entries, at) in staged {
            // At the record's own seqno: snapshots see the entry exactly when they see the
            // record, and a write after the index's creation, with its own entry for the
            // same key, is newer.
            insert_entries(&mem, entries, at);
        }
        mem.charge(e.id, bytes, 0);
        charged.push((mem, bytes));
        Ok(())
    }

    /// Marks index `id` ready once its entries are durable. The entries have no value-log
    /// record to be replayed from: they must be in tables before the manifest says the index
    /// is ready. One flush per [`INDEX_FLUSH_EVERY`](super::index_flushes::INDEX_FLUSH_EVERY) does it at once; a backfill within it
    /// leaves the index ready in memory (queries use it) and the flush that writes its
    /// memtable logs it (a crash before: the next open backfills it again).
    fn mark_ready(&self, e: &NsEntry, id: Nsid) -> Result<()> {
        let flush_now = self.index_flush.allow(self.opened.elapsed());
        if flush_now {
            self.write.flusher().flush()?;
        }
        let _w = self.writes.writer.lock();
        let mut vs = self.versions.lock();
        if !vs.namespaces.indexes.contains_key(&id) {
            return Err(Error::UnknownIndex(format!(
                "index {id} of namespace {}",
                e.id
            )));
        }
        let from = self.writes.visible_seq.load(Ordering::Acquire);
        // Under the writer lock and the manifest's: the memtables cannot change, and a
        // flush installing one logs what it finds registered for it (`install`).
        let sv = self.versions.super_version();
        let holder = match sv.imm.first() {
            _ if flush_now => None,
            _ if !sv.mem.is_empty() => Some(&sv.mem),
            Some(f) => Some(&f.mem),
            None => None,
        };
        match holder {
            Some(mem) => self.index_flush.wait_for(id, from, mem),
            None => {
                let edit = VersionEdit {
                    ready_index: vec![(id, from)],
                    ..VersionEdit::default()
                };
                self.versions.log_edit(&mut vs, edit)?;
            }
        }
        self.index_admin.reload(&vs);
        Ok(())
    }

    /// Backfills the indexes a crash (or a close before the flush that records them ready)
    /// left unfinished, before the open returns. One the capacity refuses now is dropped
    /// (the open goes on).
    pub(super) fn finish_backfills(&self) -> Result<()> {
        let pending: Vec<(Nsid, Nsid)> = self
            .versions
            .lock()
            .namespaces
            .indexes
            .values()
            .filter(|d| d.ready.is_none())
            .map(|d| (d.ns, d.id))
            .collect();
        for (ns, id) in pending {
            // The registry keeps no index of a destroyed namespace (`Namespaces::apply`).
            let e = self.namespaces.ns_entry(ns)?;
            match self.backfill(&e, id) {
                Err(Error::CapacityExceeded { .. } | Error::ReserveReached { .. }) => {}
                other => other?,
            }
        }
        Ok(())
    }

    /// Backfills index `id` of `ns` as a background job (placed by the runner, if there is
    /// one) and waits for it to end. With a single background run, the backfill (which may
    /// wait for a flush) would hold the only one: it runs here instead.
    pub(super) fn backfill_in_background(&self, e: &NsEntry, id: Nsid) -> Result<()> {
        let (opts, bg) = (self.write.opts, self.write.bg);
        if opts.background_threads < 2 {
            return self.backfill(e, id);
        }
        let mut state = bg.state.lock();
        state.policy.queue_backfill(e.id, id);
        state.backfilled.insert(id, None);
        // Background work stopped for want of space may not run the backfill for as long as
        // the disk is full: as a writer does, give up once a retry since this call failed too.
        let failures = state.policy.no_space_failures;
        state.policy.retry_now();
        bg.wake(opts.background_runner.as_ref());
        loop {
            if let Some(done) = state.backfilled.get_mut(&id).and_then(Option::take) {
                state.backfilled.remove(&id);
                return done;
            }
            let no_space = state
                .policy
                .no_space
                .clone()
                .filter(|_| state.policy.no_space_failures != failures);
            let gave_up = match (&state.policy.error, state.policy.shutdown, no_space) {
                (Some(msg), _, _) => Error::Background(msg.clone()),
                // Left unready: the next open backfills it.
                (None, true, _) => Error::Closed,
                (None, false, Some(why)) => Error::NoSpace {
                    file: "database".into(),
                    source: std::io::Error::new(std::io::ErrorKind::StorageFull, why),
                },
                (None, false, None) => {
                    bg.done_cv.wait_for(&mut state, Duration::from_millis(100));
                    continue;
                }
            };
            state.backfilled.remove(&id);
            state.policy.cancel_backfill(id);
            return Err(gave_up);
        }
    }
}

#[cfg(test)]
#[path = "backfill_tests.rs"]
mod tests;
