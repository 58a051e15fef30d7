//! Background work: the job loop, compaction slots, manual compactions, waiting for the tree to settle.

use super::background_state::{as_job, log_notice, outcome_of, BgState};
use super::dead_bytes::dead_bytes_by_segment;
use super::flush_table::output_params;
use super::gc_state::GcStats;
use super::inner::Inner;
use super::namespace_set::NsEntry;
use crate::background::{Choice, Job, View};
use crate::compaction::{self, CompactionTask};
use crate::error::{Error, IoContext, Result};
use crate::key::{self, Nsid};
use crate::options::{BackgroundStep, Layout};
use crate::stats::Counters;
use crate::version::{Version, VersionEdit, RUNS};
use crate::vlog;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Marks a compaction as running in its slots for as long as it lives.
pub(super) struct SlotGuard<'a> {
    pub(super) inner: &'a Inner,
    pub(super) slots: [bool; 2],
}

impl<'a> SlotGuard<'a> {
    pub(super) fn enter(inner: &'a Inner, task: &CompactionTask) -> SlotGuard<'a> {
        let split = task.output_level() == RUNS
            || (task.level == 0 && inner.opts.layout == Layout::PerNamespace);
        let tree = task.output_level() != RUNS;
        let slots = [split, tree];
        for (i, _) in slots.iter().enumerate().filter(|(_, on)| **on) {
            if inner.bg.in_slot[i].fetch_add(1, Ordering::AcqRel) > 0 {
                inner.bg.slot_overlaps.fetch_add(1, Ordering::Relaxed);
                tracing::error!("two compactions share a slot");
            }
        }
        SlotGuard { inner, slots }
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        for (i, _) in self.slots.iter().enumerate().filter(|(_, on)| **on) {
            self.inner.bg.in_slot[i].fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Both compaction slots, held by a manual job until dropped: released however the job ends,
/// a panic included (slots left taken would keep every later compaction out, and writers
/// waiting for room would wait for good).
pub(super) struct ManualSlots<'a>(&'a Inner);

impl Drop for ManualSlots<'_> {
    fn drop(&mut self) {
        self.0.release_compaction();
    }
}

impl Inner {
    /// No write for `idle_settle_ms`.
    pub(super) fn idle(&self) -> bool {
        let ms = self.opts.idle_settle_ms;
        let now = self.opened.elapsed().as_millis() as u64;
        ms > 0 && now.saturating_sub(self.last_write_ms.load(Ordering::Relaxed)) >= ms
    }

    /// A background job failed: for want of space it is retried later, anything else makes
    /// the database read-only.
    pub(super) fn fail_job(&self, e: &Error) {
        self.bg.fail_job(e);
    }

    /// What the policy looks at, with `version` the current one; `drain`: someone waits for
    /// the trees to settle (every namespace counts as idle).
    pub(super) fn view<'a>(&'a self, version: &'a Arc<Version>, drain: bool) -> View<'a> {
        View {
            version,
            opts: &self.opts,
            frozen: self.versions.super_version().imm.len(),
            idle: self.idle(),
            idle_ns: {
                let now = self.opened.elapsed().as_millis() as u64;
                self.namespaces.read().idle(&self.opts, now, drain)
            },
            now: std::time::Instant::now(),
        }
    }

    pub(super) fn gc_value_log(&self) -> Result<GcStats> {
        self.check_open()?;
        {
            let mut w = self.writes.writer.lock();
            if w.vlog.position().1 > vlog::SEGMENT_HEADER_LEN {
                let id = self.versions.new_file_number();
                self.write_path().roll_log(&mut w, id)?;
            }
        }
        self.flusher().flush()?;
        {
            // Nothing left in memory: replay can start at the head, sealing what is behind.
            let w = self.writes.writer.lock();
            let sv = self.versions.super_version();
            if sv.mem.is_empty() && sv.imm.is_empty() {
                let pos = w.vlog.position();
                if self.versions.lock().log_start < pos {
                    self.installer().install(
                        VersionEdit {
                            log_start: Some(pos),
                            ..VersionEdit::default()
                        },
                        None,
                    )?;
                }
            }
        }
        self.take_gc_slot()?;
        let result = self.gc_pass(0.0);
        self.release_gc_slot();
        let stats = result?;
        // The collected segments go once their rewrites are flushed: now, so the space is
        // back when this returns.
        if !self.gc.retire_after_flush.lock().is_empty() {
            self.flusher().flush()?;
            self.retire().if_all_flushed();
        }
        self.count_gc(&stats);
        Ok(stats)
    }

    fn count_gc(&self, stats: &GcStats) {
        let c = self.counters.local();
        Counters::add(&c.gc_segments_deleted, stats.segments_deleted as u64);
        Counters::add(&c.gc_bytes_rewritten, stats.bytes_rewritten);
    }

    /// Takes the GC slot for a collection called for by hand: waits until a running GC has
    /// ended (whatever errors or shutdown say meanwhile: a running job always ends, and two
    /// collections must never overlap). Fails, holding nothing, if the database is closed or
    /// read-only.
    fn take_gc_slot(&self) -> Result<()> {
        let mut bg = self.bg.state.lock();
        while bg.policy.gc_running() {
            self.bg.done_cv.wait_for(&mut bg, Duration::from_millis(50));
        }
        if let Some(e) = &bg.policy.error {
            return Err(Error::Background(e.clone()));
        }
        if bg.policy.shutdown {
            return Err(Error::Closed);
        }
        bg.policy.manual_gc(true);
        Ok(())
    }

    fn release_gc_slot(&self) {
        self.bg.state.lock().policy.manual_gc(false);
        self.bg.done_cv.notify_all();
    }

    /// Takes both compaction slots for a manual job: waits until the compaction and split
    /// running now have ended (whatever errors or shutdown say meanwhile: a running job
    /// always ends, and two must never overlap), and keeps automatic ones out until the
    /// returned slots are dropped. Fails, holding nothing, if the database is closed or
    /// read-only.
    pub(super) fn acquire_compaction(&self) -> Result<ManualSlots<'_>> {
        let mut bg = self.bg.state.lock();
        bg.policy.manual_wants_slots();
        while !bg.policy.manual_may_start() {
            self.bg.done_cv.wait_for(&mut bg, Duration::from_millis(50));
        }
        let refuse = if let Some(e) = &bg.policy.error {
            Some(Error::Background(e.clone()))
        } else if bg.policy.shutdown || self.closed.load(Ordering::Acquire) {
            Some(Error::Closed)
        } else {
            None
        };
        bg.policy.manual_stops_waiting(refuse.is_none());
        if let Some(e) = refuse {
            self.bg.done_cv.notify_all();
            return Err(e);
        }
        Ok(ManualSlots(self))
    }

    fn release_compaction(&self) {
        self.bg.state.lock().policy.manual_ended();
        self.wake_background();
        self.bg.done_cv.notify_all();
    }

    /// A manual compaction of `ns`, or of every live namespace.
    pub(super) fn compact_range(
        &self,
        ns: Option<Nsid>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        if let Some(ns) = ns {
            self.ns_entry(ns)?;
        }
        self.flusher().flush()?;
        let _slots = self.acquire_compaction()?;
        let mut all: Vec<Nsid> = match ns {
            Some(ns) => vec![ns],
            None => self.namespaces.read().live.keys().copied().collect(),
        };
        all.sort_unstable();
        for ns in all {
            self.manual_compaction(ns, start, end)?;
        }
        Ok(())
    }

    pub(super) fn manual_compaction(
        &self,
        ns: Nsid,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        let lo = key::user_part(ns, start.unwrap_or_default());
        let hi = match end {
            Some(e) => key::user_part(ns, e),
            // Every key of `ns` sorts below the next namespace's prefix.
            None => match ns.checked_add(1) {
                Some(n) => n.to_be_bytes().to_vec(),
                None => vec![0xff; 5],
            },
        };
        let version = self.versions.lock().current();
        let deepest = (1..version.num_levels())
            .rev()
            .find(|&l| !version.levels[l].is_empty())
            .unwrap_or(1);
        let steps = std::iter::once(0)
            .chain((self.opts.layout == Layout::PerNamespace).then_some(RUNS))
            .chain(1..deepest);
        for level in steps {
            let version = self.versions.lock().current();
            if let Some(task) =
                compaction::range_tasks(&version, self.opts.layout, level, &lo, &hi)?
            {
                self.run_compaction(&task, &version)?;
            }
        }
        // The deepest level is rewritten in place as well: what no snapshot reads any more
        // (versions kept for released snapshots, tombstones) goes, as a caller of
        // `compact_range` expects.
        let version = self.versions.lock().current();
        let inputs = version.overlapping(deepest, &lo, &hi);
        if deepest > 0 && !inputs.is_empty() {
            let task = CompactionTask {
                level: deepest,
                output_level: deepest,
                inputs,
                overlapping: Vec::new(),
                moves: false,
            };
            self.run_compaction(&task, &version)?;
        }
        Ok(())
    }

    /// Runs `task` and installs its outcome; returns the table bytes it wrote.
    pub(super) fn run_compaction(&self, task: &CompactionTask, version: &Version) -> Result<u64> {
        let _slots = SlotGuard::enter(self, task);
        // A split writes each namespace's part of L0 as one run.
        let target = match task.output_level() {
            RUNS => u64::MAX,
            _ => self.opts.target_table_bytes,
        };
        let params = output_params(&self.opts, target);
        // Per key space: a shared tree's or L0's tables mix namespaces, each kept for its own
        // snapshots.
        let floors = self.pins().floors();
        let alloc = || self.versions.new_file_number();
        let destroyed = self.namespaces.read().destroyed.clone();
        let cx = compaction::RunContext {
            storage: self.storage.as_ref(),
            params,
            floors: &floors,
            destroyed: &destroyed,
            new_file: &alloc,
        };
        let mut out = compaction::run(task, version, &cx)?;
        let (read, written) = (out.bytes_read, out.bytes_written);
        for &(ns, bytes) in &out.written_by_ns {
            if let Ok(e) = self.ns_entry(ns) {
                Counters::add(&e.counters.local().tree_bytes_written, bytes);
            }
        }
        self.storage.sync_dir().ctx("database directory")?;
        out.edit.vlog_dead = dead_bytes_by_segment(&out.dropped);
        self.installer().install(out.edit, None)?;
        self.gc.liveness.mark_dead(&out.dropped);
        Counters::add(&self.counters.local().compactions, 1);
        Counters::add(&self.counters.local().compaction_bytes_read, read);
        Counters::add(&self.counters.local().compaction_bytes_written, written);
        Ok(written)
    }

    /// Counts the bytes a background compaction wrote in its term of the write
    /// amplification: L0, run merges or levels.
    fn count_term(&self, task: &CompactionTask, written: u64) {
        let c = self.counters.local();
        let term = match task.level {
            0 => &c.l0_bytes_written,
            crate::version::RUNS => &c.run_merge_bytes_written,
            _ => &c.level_bytes_written,
        };
        Counters::add(term, written);
    }

    /// Wakes the background: the database's own threads, or the runner given in the options.
    pub(super) fn wake_background(&self) {
        self.bg.wake(self.opts.background_runner.as_ref());
    }

    /// The policy's choice: the next job, marked as running, or how long to wait.
    fn choose(&self, bg: &mut parking_lot::MutexGuard<'_, BgState>) -> Choice {
        loop {
            // Pins past their age go first: what they held may be collectable.
            let (gc, expired) = self.pins().expire();
            if gc {
                bg.policy.check_gc();
            }
            if !expired.is_empty() {
                // Their iterators' tables and memtables go now, not when the handles drop;
                // dropping them may delete files: not under the background's lock.
                parking_lot::MutexGuard::unlocked(bg, || expired.release());
            }
            let version = self.versions.lock().current();
            let view = self.view(&version, bg.policy.draining());
            let waited_for_space = bg.policy.no_space.is_some();
            let ratio = self.opts.vlog_gc_dead_ratio;
            let choice = bg.policy.choose(&view, &mut || self.gc_candidate(ratio));
            if waited_for_space && bg.policy.no_space.is_none() {
                self.bg.done_cv.notify_all();
            }
            match choice {
                // Awake again when the next pin expires.
                Ok(Choice::Wait(d)) => {
                    let until = self.pins().until_expiry();
                    return Choice::Wait(match (d, until) {
                        (Some(d), Some(u)) => Some(d.min(u)),
                        (d, u) => d.or(u),
                    });
                }
                Ok(choice) => return choice,
                Err(e) => parking_lot::MutexGuard::unlocked(bg, || self.fail_job(&e)),
            }
        }
    }

    pub(super) fn background_loop(self: Arc<Self>) {
        loop {
            let job = {
                let mut bg = self.bg.state.lock();
                loop {
                    match self.choose(&mut bg) {
                        Choice::Stop => return,
                        Choice::Run(job) => break job,
                        Choice::Wait(Some(d)) => {
                            self.bg.cv.wait_for(&mut bg, d);
                        }
                        Choice::Wait(None) => self.bg.cv.wait(&mut bg),
                    }
                }
            };
            self.run_job(job);
        }
    }

    pub(super) fn run_one_job(&self) -> BackgroundStep {
        let choice = self.choose(&mut self.bg.state.lock());
        match choice {
            Choice::Stop => BackgroundStep::Stopped,
            Choice::Wait(d) => BackgroundStep::Idle(d),
            Choice::Run(job) => {
                let kind = job.kind();
                self.run_job(job);
                BackgroundStep::Ran(kind)
            }
        }
    }

    /// Carries out `job` and tells the policy how it ended.
    fn run_job(&self, job: Job) {
        as_job(|| self.run_job_here(job));
    }

    fn run_job_here(&self, job: Job) {
        // A panic in a job must not leave its slots taken and writers waiting forever.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &job {
            // Each may have dropped the last entries of a destroyed id.
            Job::Flush => self
                .flusher()
                .flush_oldest()
                .map(|_| self.forget_destroyed_quietly()),
            Job::Compact { task, version } | Job::Split { task, version } => self
                .run_compaction(task, version)
                .map(|written| self.count_term(task, written))
                .map(|_| self.forget_destroyed_quietly()),
            Job::Consolidate { ns, task, version } => self.consolidate(*ns, task, version),
            Job::Gc { segment } => {
                let mut stats = GcStats::default();
                let r = self.collect_segment(*segment, self.opts.vlog_gc_dead_ratio, &mut stats);
                self.count_gc(&stats);
                r.map(|_| ())
            }
            Job::Backfill { ns, index } => self
                .ns_entry(*ns)
                .and_then(|e| self.backfill(&e, *index))
                .map(|_| ()),
        }))
        .unwrap_or_else(|_| Err(Error::Background("a background job panicked".into())));
        let outcome = outcome_of(&result);
        let notice = {
            let mut bg = self.bg.state.lock();
            let notice = bg
                .policy
                .finished(&job, &outcome, std::time::Instant::now());
            if let Job::Backfill { index, .. } = job {
                if let Some(waiting) = bg.backfilled.get_mut(&index) {
                    *waiting = Some(result);
                }
            }
            notice
        };
        log_notice(notice);
        self.wake_background();
        self.bg.done_cv.notify_all();
    }

    /// Backfills index `id` of `ns` as a background job (placed by the runner, if there is
    /// one) and waits for it to end. With a single background run, the backfill (which may
    /// wait for a flush) would hold the only one: it runs here instead.
    pub(super) fn backfill_in_background(&self, e: &NsEntry, id: Nsid) -> Result<()> {
        if self.opts.background_threads < 2 {
            return self.backfill(e, id);
        }
        let mut bg = self.bg.state.lock();
        bg.policy.queue_backfill(e.id, id);
        bg.backfilled.insert(id, None);
        // Background work stopped for want of space may not run the backfill for as long as
        // the disk is full: as a writer does, give up once a retry since this call failed too.
        let failures = bg.policy.no_space_failures;
        bg.policy.retry_now();
        self.wake_background();
        loop {
            if let Some(done) = bg.backfilled.get_mut(&id).and_then(Option::take) {
                bg.backfilled.remove(&id);
                return done;
            }
            let no_space = bg
                .policy
                .no_space
                .clone()
                .filter(|_| bg.policy.no_space_failures != failures);
            let gave_up = match (&bg.policy.error, bg.policy.shutdown, no_space) {
                (Some(msg), _, _) => Error::Background(msg.clone()),
                // Left unready: the next open backfills it.
                (None, true, _) => Error::Closed,
                (None, false, Some(why)) => Error::NoSpace {
                    file: "database".into(),
                    source: std::io::Error::new(std::io::ErrorKind::StorageFull, why),
                },
                (None, false, None) => {
                    self.bg
                        .done_cv
                        .wait_for(&mut bg, Duration::from_millis(100));
                    continue;
                }
            };
            bg.backfilled.remove(&id);
            bg.policy.cancel_backfill(id);
            return Err(gave_up);
        }
    }
}

#[cfg(test)]
#[path = "background_tests.rs"]
mod tests;
