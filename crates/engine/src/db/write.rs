//! The write path: writes into the value log and the memtable under the writer lock (synced
//! ones by group commit, one sync a group), and room for them.

use super::background_state::{on_job_thread, Background};
use super::flush::Flusher;
use super::index_set::{derive_entries, IndexSet};
use super::namespace_set::NsEntry;
use super::quota_state::{credit_holds, CapacityFlushes, Credit};
use super::usage::Quotas;
use super::versions::Versions;
use super::write_queue::{PendingWrite, WriteQueue, WriterGuard, WriterState, MAX_GROUP_BYTES};
use crate::error::{Error, Result};
use crate::key::{self, Kind};
use crate::memtable::MemValue;
use crate::options::{Options, WritePressure};
use crate::row_cache::RowCache;
use crate::stats::Counters;
use crate::uptime::Uptime;
use crate::vlog::{AppendError, EncodedWrite, RollError, Spans};
use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The parts a write touches, borrowed: built once per call (a write, a batch, a GC group),
/// never per record.
pub(super) struct WritePath<'a, F> {
    pub(super) opts: &'a Options,
    pub(super) versions: &'a Versions,
    pub(super) writes: &'a WriteQueue,
    pub(super) bg: &'a Background,
    pub(super) closed: &'a AtomicBool,
    /// The open is under way with a background runner (see `Inner::opening_inline`).
    pub(super) opening_inline: &'a AtomicBool,
    pub(super) uptime: &'a Uptime,
    /// Milliseconds of `uptime` at the last write.
    pub(super) last_write_ms: &'a AtomicU64,
    /// Counters of background work (write stalls and slowdowns count there).
    pub(super) counters: &'a Arc<Counters>,
    pub(super) indexes: &'a RwLock<Arc<IndexSet>>,
    /// The capacity checks' flushes (their epoch tells a credit it went stale).
    pub(super) capacity_flush: &'a CapacityFlushes,
    pub(super) row_cache: Option<&'a RowCache>,
    /// The capacity checks, and through them the flusher.
    pub(super) quotas: Quotas<'a, F>,
}

impl<'a, F: Fn()> WritePath<'a, F> {
    pub(super) fn flusher(&self) -> &Flusher<'a, F> {
        &self.quotas.flusher
    }

    pub(super) fn check_open(&self) -> Result<()> {
        self.bg.check_open(self.closed)
    }

    /// Writes `ops` to `ns` (see `commit`); `sync` asks for a synced log even when
    /// `Options::sync` is off.
    pub(super) fn write(
        &self,
        e: &NsEntry,
        ops: &[(Kind, &[u8], &[u8])],
        sync: bool,
    ) -> Result<()> {
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
        e.check_live()?;
        e.check_writable()?;
        if ops.is_empty() {
            return Ok(());
        }
        let credit = self.quotas.check_room(e, ops)?;
        self.write_checked(e, ops, credit, sync)
    }

    /// The rest of [`write`](Self::write), once `ops` were checked and found room (`credit`).
    pub(super) fn write_checked(
        &self,
        e: &NsEntry,
        ops: &[(Kind, &[u8], &[u8])],
        credit: Credit,
        sync: bool,
    ) -> Result<()> {
        let counters = &e.counters;
        self.check_open()?;
        self.versions.settle_manifest()?;
        let mut records = EncodedWrite::new(e.id, ops);
        records.credit = credit.bytes;
        records.credit_at = credit.at;
        let result = self.commit(records, sync, e);
        if result.is_ok() {
            // The group's time, stamped by its leader before this write committed: no clock
            // read per write.
            let now = self.last_write_ms.load(Ordering::Relaxed);
            if e.last_write_ms.load(Ordering::Relaxed) < now {
                e.last_write_ms.store(now, Ordering::Relaxed);
            }
            let seq = self.writes.visible_seq.load(Ordering::Relaxed);
            if e.last_write_seq.load(Ordering::Relaxed) < seq {
                e.last_write_seq.store(seq, Ordering::Relaxed);
            }
            let puts = ops.iter().filter(|(k, ..)| *k == Kind::Put).count() as u64;
            Counters::add(&counters.local().puts, puts);
            Counters::add(&counters.local().deletes, ops.len() as u64 - puts);
        }
        result
    }

    /// Commits the write `records` of namespace `e` and returns its outcome. It is refused
    /// if the namespace is destroyed or read-only. `destroy_namespace` and `set_read_only`
    /// set their flags under the queue's lock, then `WriteQueue::wait_queued` waits for the
    /// queue to drain and for the writer lock: so a write that checks the flags under
    /// either lock, and holds it until it has committed, is either done before the flag
    /// setter returns or refused.
    ///
    /// A write that needs no sync takes the writer lock and commits alone: a queue would
    /// save it nothing (no sync to share) and cost each writer a sleep and a wake-up behind
    /// its leader (4 writers on 2 CPUs put 0.53-0.65 times as fast through the queue). A sync
    /// write joins the queue, where one sync covers a group of them.
    fn commit(&self, records: EncodedWrite, sync: bool, e: &NsEntry) -> Result<()> {
        if !sync && !self.opts.sync {
            let mut w = self.writes.writer.lock();
            e.check_live()?;
            e.check_writable()?;
            let bytes = records.buf.len();
            return self.commit_locked(&mut w, &mut [records], bytes, false);
        }
        let me = Arc::new(PendingWrite {
            records: Mutex::new(Some(records)),
            sync,
            result: Mutex::new(None),
        });
        let mut queue = self.writes.queue.lock();
        e.check_live()?;
        e.check_writable()?;
        queue.push_back(me.clone());
        loop {
            if let Some(r) = me.result.lock().take() {
                return r;
            }
            if queue.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            self.writes.queue_cv.wait(&mut queue);
        }
        // This write leads a group: itself and the writes queued behind it (most often alone:
        // held in place, no allocation).
        let mut group: SmallVec<[EncodedWrite; 1]> = SmallVec::new();
        let mut bytes = 0;
        // Queued writes the group takes.
        let mut n = 0;
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
            n += 1;
        }
        drop(queue);
        // Never empty: the leader's own records are its to take.
        let result = self.commit_locked(&mut self.writes.writer.lock(), &mut group, bytes, sync);
        let mut queue = self.writes.queue.lock();
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
        self.writes.queue_cv.notify_all();
        result
    }

    /// Appends the records of a group to the value log (one append, one sync if `sync` or
    /// `Options::sync`) and inserts them into the memtable, under the writer lock `w`.
    fn commit_locked(
        &self,
        w: &mut WriterState,
        group: &mut [EncodedWrite],
        bytes: usize,
        sync: bool,
    ) -> Result<()> {
        // Again under the lock: `close` syncs the log under it once `closed` is set, so a
        // write that passed its first check while `close` ran would land after that sync.
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let now = self.uptime.ms();
        self.last_write_ms.store(now, Ordering::Relaxed);
        self.make_room(w)?;
        self.append_locked(w, group, bytes, sync)
    }

    /// Stamps, appends (and syncs, if `sync` or `Options::sync`) the records of `group` and
    /// inserts them into the memtable; the caller holds the writer lock and made room.
    pub(super) fn append_locked(
        &self,
        w: &mut WriterState,
        group: &mut [EncodedWrite],
        bytes: usize,
        sync: bool,
    ) -> Result<()> {
        let records: usize = group.iter().map(|g| g.records()).sum();
        let first = w.next_seq;
        if first + records as u64 > key::MAX_SEQ {
            return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
        }
        let mut seq = first;
        for g in group.iter_mut() {
            g.stamp(seq);
            seq += g.records() as u64;
        }
        if w.vlog.needs_roll(bytes, self.opts.vlog_segment_bytes) {
            let id = self.versions.new_file_number();
            self.roll_log(w, id)?;
        }
        let appended = if let [one] = &*group {
            w.vlog.append(&one.buf)
        } else {
            w.buf.clear();
            for g in group.iter() {
                w.buf.extend_from_slice(&g.buf);
            }
            w.vlog.append(&w.buf)
        };
        let mut base = match appended {
            Ok(b) => {
                // In the log now, even if the sync fails (a later sync may keep them): their
                // seqnos are spent (reused, a replay met two writes of a key at one seqno).
                w.next_seq = seq;
                b
            }
            // The log is as it was: a full disk fails this write only (GC may give room).
            Err(AppendError::Clean(e)) if e.is_no_space() => {
                (self.bg).space_refused(self.uptime.ms(), self.opts.background_runner.as_ref());
                return Err(e);
            }
            Err(e) => {
                // An I/O error, or part of the records left at the log's end: accept no
                // more writes, so that part stays the torn tail that recovery drops.
                let e = e.into_error();
                self.bg.fail_job(&e);
                return Err(e);
            }
        };
        if sync || self.opts.sync {
            if let Err(e) = w.vlog.sync() {
                // A failed sync proves nothing about what reached the disk, and a later one
                // that succeeds would not either: the log is in doubt for good.
                self.bg.fail_job(&e);
                return Err(e);
            }
        }
        let segment = w.vlog.segment();
        // A guard, not a counted reference: no shared counter touched per group.
        let sv = self.versions.super_version_brief();
        let mem = &sv.mem;
        let indexes = self.indexes.read().clone();
        // After the super version: see `credit_holds`.
        let epoch = self.capacity_flush.epoch.load(Ordering::Acquire);
        let mut seq = first;
        // `nsid ++ key` of each record in turn, one buffer for the group.
        let mut user = Vec::new();
        for g in group.iter_mut() {
            // Checked before its own records go in, after the group's earlier ones.
            let credit = match credit_holds(&sv, g, epoch) {
                true => g.credit,
                false => 0,
            };
            let own = indexes.of(g.nsid);
            let buf = std::mem::take(&mut g.buf).freeze();
            let mut charged = 0u64;
            for s in Spans::over(&buf, g.records()) {
                let key = &buf[s.key.clone()];
                user.clear();
                user.extend_from_slice(&g.nsid.to_be_bytes());
                user.extend_from_slice(key);
                let put = s.kind == Kind::Put;
                // An empty range is an empty value, holding no buffer.
                let value = buf.slice(if put { s.value.clone() } else { 0..0 });
                let addr = key::ValueAddr {
                    segment,
                    offset: base + s.at as u64,
                    len: s.len as u32,
                };
                if put {
                    charged += (key.len() + value.len()) as u64;
                    charged += derive_entries(mem, own, key, &value, addr, seq);
                }
                // The value slices the records' buffer: the entry keeps its whole record.
                let v = MemValue {
                    kind: s.kind,
                    value,
                    addr,
                };
                mem.insert_holding(&user, seq, v, s.len);
                // Before `visible_seq` moves past `seq` (row_cache.rs: staleness).
                if let Some(rc) = self.row_cache {
                    rc.invalidate(g.nsid, key, seq);
                }
                seq += 1;
            }
            // A GC rewrite replaces itself, its index entries too: credited whole.
            let credit = match g.credit_at {
                None if g.credit > 0 => charged,
                _ => credit,
            };
            mem.charge(g.nsid, charged, credit);
            base += buf.len() as u64;
        }
        self.writes.visible_seq.store(seq - 1, Ordering::Release);
        Ok(())
    }

    /// Continues the value log in a new segment `id`. Failing to create it (a full disk)
    /// fails the write only; failing to sync the old one leaves the log in doubt for good.
    pub(super) fn roll_log(&self, w: &mut WriterState, id: u64) -> Result<()> {
        match w.vlog.roll(id) {
            Ok(()) => Ok(()),
            // The writer goes on in the old segment; a half-made new one holds no record.
            Err(RollError::Create(e)) => {
                if e.is_no_space() {
                    let runner = self.opts.background_runner.as_ref();
                    self.bg.space_refused(self.uptime.ms(), runner);
                }
                Err(e)
            }
            Err(RollError::Sync(e)) => {
                self.bg.fail_job(&e);
                Err(e)
            }
        }
    }

    /// What [`make_room`](Self::make_room) would do to a write made now.
    pub(super) fn write_pressure(&self) -> WritePressure {
        // Asked for every write an event loop considers: no shared counter touched.
        let sv = self.versions.super_version_brief();
        let o = &self.opts;
        let full = sv.memtable_full(o) && sv.frozen_at_limit(o);
        if full || o.auto_compaction && sv.tree_stops_writes(o) {
            WritePressure::Stop
        } else if o.auto_compaction && sv.tree_slows_writes(o) {
            WritePressure::Slowdown
        } else {
            WritePressure::None
        }
    }

    /// Makes sure the memtable has room, freezing it or waiting for background work.
    pub(super) fn make_room(&self, w: &mut WriterState) -> Result<()> {
        let mut slowed = false;
        // The only background run makes this write (a GC's rewrites): it flushes itself
        // rather than wait for a flush nobody else can run, and no compaction can be
        // waited for (the write is bounded; the run compacts once it is done).
        let alone = self.alone();
        loop {
            let sv = self.versions.super_version_brief();
            let o = &self.opts;
            let auto = o.auto_compaction && !alone;
            if auto && sv.tree_stops_writes(o) && !self.lone_gc_running() {
                Counters::add(&self.counters.local().write_stalls, 1);
                self.wait_for_background()?;
                continue;
            }
            if auto && sv.tree_slows_writes(o) && !slowed {
                Counters::add(&self.counters.local().write_slowdowns, 1);
                slowed = true;
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            if !sv.memtable_full(o) {
                return Ok(());
            }
            if sv.frozen_at_limit(o) {
                Counters::add(&self.counters.local().write_stalls, 1);
                drop(sv);
                match alone {
                    true => self.flusher().flush_oldest()?,
                    false => self.wait_for_background()?,
                }
                continue;
            }
            return self.freeze_memtable(w);
        }
    }

    /// Whether this thread is the only one that can run background work now (the one
    /// background thread, or an open that runs its own).
    fn alone(&self) -> bool {
        (self.opts.background_threads < 2 && on_job_thread())
            || self.opening_inline.load(Ordering::Acquire)
    }

    /// Freezes the memtable unless it is empty, once the frozen ones leave room (waiting for
    /// a flush as a write would, or flushing the oldest itself when alone).
    pub(super) fn freeze_when_room(&self, w: &mut WriterState) -> Result<()> {
        loop {
            let sv = self.versions.super_version_brief();
            if sv.mem.is_empty() {
                return Ok(());
            }
            if !sv.frozen_at_limit(self.opts) {
                drop(sv);
                return self.freeze_memtable(w);
            }
            drop(sv);
            match self.alone() {
                true => self.flusher().flush_oldest()?,
                false => self.wait_for_background()?,
            }
        }
    }

    pub(super) fn wait_for_background(&self) -> Result<()> {
        self.bg.wait(self.opts.background_runner.as_ref())
    }

    /// The single background run is collecting the value log: no compaction can run until
    /// it is done, and it waits for the writer lock this write holds (it compacts after).
    fn lone_gc_running(&self) -> bool {
        self.opts.background_threads < 2 && self.bg.state.lock().policy.gc_running()
    }

    /// The writer lock, for a write a background job makes. With a single background run,
    /// a writer holding the lock may be waiting for a flush only this run can make: it
    /// flushes while it waits.
    pub(super) fn writer_for_job(&self) -> Result<WriterGuard<'a>> {
        if self.opts.background_threads >= 2 || !on_job_thread() {
            return Ok(self.writes.writer.lock());
        }
        loop {
            let wait = Duration::from_millis(5);
            if let Some(guard) = self.writes.writer.try_lock_for(wait) {
                return Ok(guard);
            }
            if !self.versions.super_version_brief().imm.is_empty() {
                self.flusher().flush_oldest()?;
            }
            self.check_open()?;
        }
    }

    /// Turns the memtable into a frozen one and starts a new one.
    pub(super) fn freeze_memtable(&self, w: &mut WriterState) -> Result<()> {
        if self.versions.freeze(w, self.opts) {
            self.bg.wake_locked(self.opts.background_runner.as_ref());
        }
        Ok(())
    }

    pub(super) fn sync_log(&self) -> Result<()> {
        self.check_open()?;
        // Calls at once share a sync (`LogSyncs`): each holds every writer up.
        self.writes.syncs.coalesce(|| {
            let mut w = self.writes.writer.lock();
            // Again, under the lock: after a failed sync (of a call before this one) the
            // kernel may report the next one done though the data is lost.
            self.check_open()?;
            if let Err(e) = w.vlog.sync() {
                // What a failed sync left on disk is unknown, and a later sync could
                // succeed without it: stop writing, as a failed sync in the write path does.
                self.bg.fail_job(&e);
                return Err(e);
            }
            Ok(())
        })?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "write_memory_tests.rs"]
mod memory_tests;

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
