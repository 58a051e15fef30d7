//! Background work: the job loop, compaction slots, manual compactions, waiting for the tree to settle.

use super::*;
use crate::options::{BackgroundStep, JobKind};

/// What the background does next.
enum Pick {
    Job(Job),
    Wait(Option<Duration>),
    Stop,
}

/// Work for a background thread.
pub(super) enum Job {
    Flush,
    /// Per namespace: L0 into runs, beside a tree compaction.
    Split(CompactionTask, Arc<Version>),
    Compact(CompactionTask, Arc<Version>),
    /// Collect one value-log segment.
    Gc(u64),
    /// Fill index `.1` of namespace `.0` with the records stored before it was created.
    Backfill(Nsid, Nsid),
}

#[derive(Default)]
pub(super) struct BgState {
    pub(super) flushing: bool,
    /// An L0 split runs (per namespace), or a manual compaction owns L0.
    pub(super) splitting: bool,
    /// A compaction of the trees runs (in one shared tree, L0 too).
    pub(super) compacting: bool,
    /// Manual compactions running or waiting for the slots: automatic ones stay out of
    /// their way.
    pub(super) manual: usize,
    /// Holds both slots for a manual compaction (or a namespace's destruction).
    pub(super) manual_running: bool,
    pub(super) error: Option<String>,
    /// A background job failed for want of space: writes that must wait for background
    /// work fail with `NoSpace` instead, and jobs are retried from `retry_at` on.
    pub(super) no_space: Option<String>,
    pub(super) retry_at: Option<std::time::Instant>,
    /// Background jobs that failed for want of space, so far.
    pub(super) no_space_failures: u64,
    pub(super) shutdown: bool,
    pub(super) cursors: compaction::Cursors,
    /// Someone waits for the tree to settle: L0 and runs go down even below their triggers.
    pub(super) drain: bool,
    pub(super) gc_running: bool,
    /// Something may have made a segment worth collecting since the last look.
    pub(super) gc_check: bool,
    /// Index backfills asked for by `create_index`, (namespace, index), oldest first.
    pub(super) backfills: std::collections::VecDeque<(Nsid, Nsid)>,
    pub(super) backfilling: bool,
    /// Backfills whose `create_index` waits, by index: `None` until the backfill ends. A
    /// waiter that gives up (an error, a close) takes its entry out, so no answer outlives it.
    pub(super) backfilled: HashMap<Nsid, Option<Result<()>>>,
}

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
            if inner.in_slot[i].fetch_add(1, Ordering::AcqRel) > 0 {
                inner.slot_overlaps.fetch_add(1, Ordering::Relaxed);
                tracing::error!("two compactions share a slot");
            }
        }
        SlotGuard { inner, slots }
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        for (i, _) in self.slots.iter().enumerate().filter(|(_, on)| **on) {
            self.inner.in_slot[i].fetch_sub(1, Ordering::AcqRel);
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
        if e.is_no_space() {
            self.set_no_space(e);
        } else {
            self.set_bg_error(e);
        }
    }

    pub(super) fn wait_for_compactions(&self) -> Result<()> {
        self.flush()?;
        self.bg.lock().drain = true;
        let mut gc_seen = false;
        let result = (|| loop {
            {
                let bg = self.bg.lock();
                if let Some(e) = &bg.error {
                    return Err(Error::Background(e.clone()));
                }
                let idle = !bg.flushing
                    && !bg.compacting
                    && !bg.splitting
                    && self.super_version().imm.is_empty();
                if idle {
                    if !self.opts.auto_compaction {
                        return Ok(());
                    }
                    let version = self.versions.lock().current();
                    let mut cursors = bg.cursors.clone();
                    let split = compaction::pick_split(&version, &self.opts, true);
                    let ratio = self.opts.vlog_gc_dead_ratio;
                    // GC moves live values and so writes index entries: settled means it
                    // has nothing left to collect either.
                    let gc_due =
                        ratio > 0.0 && (bg.gc_running || self.gc_candidate(ratio)?.is_some());
                    gc_seen |= gc_due;
                    if split.is_none()
                        && !gc_due
                        && compaction::pick(&version, &self.opts, &mut cursors, true)?.is_none()
                    {
                        return Ok(());
                    }
                }
            }
            self.bg.lock().gc_check = true;
            self.wait_for_background()?;
            if std::mem::take(&mut gc_seen) {
                // What GC moved sits in the memtable: into the tree with the rest.
                self.flush()?;
            }
        })();
        self.bg.lock().drain = false;
        result
    }

    pub(super) fn gc_value_log(&self) -> Result<GcStats> {
        self.check_open()?;
        {
            let mut w = self.writer.lock();
            if w.vlog.position().1 > vlog::SEGMENT_HEADER_LEN {
                let id = self.new_file_number();
                self.roll_log(&mut w, id)?;
            }
        }
        self.flush()?;
        {
            // Nothing left in memory: replay can start at the head, sealing what is behind.
            let w = self.writer.lock();
            let sv = self.super_version();
            if sv.mem.is_empty() && sv.imm.is_empty() {
                let pos = w.vlog.position();
                if self.versions.lock().log_start < pos {
                    self.install(
                        VersionEdit {
                            log_start: Some(pos),
                            ..VersionEdit::default()
                        },
                        None,
                    )?;
                }
            }
        }
        self.set_gc_running(true);
        let result = self.gc_pass(0.0);
        self.set_gc_running(false);
        let stats = result?;
        // The collected segments go once their rewrites are flushed: now, so the space is
        // back when this returns.
        if !self.retire_after_flush.lock().is_empty() {
            self.flush()?;
            self.retire_if_all_flushed();
        }
        self.count_gc(&stats);
        Ok(stats)
    }

    fn count_gc(&self, stats: &GcStats) {
        let c = self.counters.local();
        Counters::add(&c.gc_segments_deleted, stats.segments_deleted as u64);
        Counters::add(&c.gc_bytes_rewritten, stats.bytes_rewritten);
    }

    /// Waits for a running GC, then marks one as running (or clears the mark).
    pub(super) fn set_gc_running(&self, on: bool) {
        let mut bg = self.bg.lock();
        if on {
            while bg.gc_running && bg.error.is_none() && !bg.shutdown {
                self.done_cv.wait_for(&mut bg, Duration::from_millis(50));
            }
        }
        bg.gc_running = on;
        self.done_cv.notify_all();
    }

    /// Takes both compaction slots for a manual job: waits until the compaction and split
    /// running now have ended (whatever errors or shutdown say meanwhile: a running job
    /// always ends, and two must never overlap), and keeps automatic ones out until the
    /// returned slots are dropped. Fails, holding nothing, if the database is closed or
    /// read-only.
    pub(super) fn acquire_compaction(&self) -> Result<ManualSlots<'_>> {
        let mut bg = self.bg.lock();
        bg.manual += 1;
        while bg.compacting || bg.splitting {
            self.done_cv.wait_for(&mut bg, Duration::from_millis(50));
        }
        bg.manual -= 1;
        let refuse = if let Some(e) = &bg.error {
            Some(Error::Background(e.clone()))
        } else if bg.shutdown || self.closed.load(Ordering::Acquire) {
            Some(Error::Closed)
        } else {
            None
        };
        if let Some(e) = refuse {
            self.done_cv.notify_all();
            return Err(e);
        }
        bg.compacting = true;
        bg.splitting = true;
        bg.manual_running = true;
        Ok(ManualSlots(self))
    }

    fn release_compaction(&self) {
        let mut bg = self.bg.lock();
        debug_assert!(bg.manual_running && bg.compacting && bg.splitting);
        bg.compacting = false;
        bg.splitting = false;
        bg.manual_running = false;
        self.wake_background();
        self.done_cv.notify_all();
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
        self.flush()?;
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
                self.run_compaction(&task, &version, false)?;
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
            };
            self.run_compaction(&task, &version, false)?;
        }
        Ok(())
    }

    pub(super) fn run_compaction(
        &self,
        task: &CompactionTask,
        version: &Version,
        allow_move: bool,
    ) -> Result<()> {
        let _slots = SlotGuard::enter(self, task);
        // A split writes each namespace's part of L0 as one run.
        let target = match task.output_level() {
            RUNS => u64::MAX,
            _ => self.opts.target_table_bytes,
        };
        let params = output_params(&self.opts, target);
        // Per key space: a shared tree's or L0's tables mix namespaces, each kept for its own
        // snapshots.
        let floors = self.snapshot_floors();
        let alloc = || self.new_file_number();
        let dead = self.namespaces.read().dead.clone();
        let cx = compaction::RunContext {
            storage: self.storage.as_ref(),
            params,
            floors: &floors,
            allow_move,
            dead: &dead,
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
        self.install(out.edit, None)?;
        self.liveness.mark_dead(&out.dropped);
        Counters::add(&self.counters.local().compactions, 1);
        Counters::add(&self.counters.local().compaction_bytes_read, read);
        Counters::add(&self.counters.local().compaction_bytes_written, written);
        Ok(())
    }

    /// The most urgent background job, if any, marked as running: a flush first, then a
    /// compaction, then value-log GC.
    pub(super) fn next_job(&self, bg: &mut BgState) -> Result<Option<Job>> {
        if !bg.flushing && !self.super_version().imm.is_empty() {
            bg.flushing = true;
            return Ok(Some(Job::Flush));
        }
        if bg.manual == 0 && self.opts.auto_compaction {
            let drain = bg.drain || self.idle();
            let version = self.versions.lock().current();
            if !bg.splitting {
                if let Some(task) = compaction::pick_split(&version, &self.opts, drain) {
                    // A merge straight into L1 touches a tree: it needs the tree slot too.
                    let tree = task.output_level() != RUNS;
                    if !tree || !bg.compacting {
                        bg.splitting = true;
                        bg.compacting |= tree;
                        return Ok(Some(Job::Split(task, version)));
                    }
                }
            }
            if !bg.compacting {
                if let Some(task) = compaction::pick(&version, &self.opts, &mut bg.cursors, drain)?
                {
                    bg.compacting = true;
                    return Ok(Some(Job::Compact(task, version)));
                }
            }
        }
        // A backfill and a GC may both wait for a flush: never both at once, so that one of
        // the (at least two) runs stays free for the flush.
        if !bg.backfilling && !bg.gc_running {
            if let Some((ns, id)) = bg.backfills.pop_front() {
                bg.backfilling = true;
                return Ok(Some(Job::Backfill(ns, id)));
            }
        }
        let ratio = self.opts.vlog_gc_dead_ratio;
        if bg.gc_check && !bg.gc_running && !bg.backfilling && ratio > 0.0 {
            bg.gc_check = false;
            if let Some(seg) = self.gc_candidate(ratio)? {
                bg.gc_running = true;
                return Ok(Some(Job::Gc(seg)));
            }
        }
        Ok(None)
    }

    /// Wakes the background: the database's own threads, or the runner given in the options.
    pub(super) fn wake_background(&self) {
        self.bg_cv.notify_all();
        if let Some(r) = &self.opts.background_runner {
            (r.0)();
        }
    }

    /// The next job, marked as running, or how long to wait before looking again.
    fn pick(&self, bg: &mut parking_lot::MutexGuard<'_, BgState>) -> Pick {
        loop {
            if bg.shutdown {
                return Pick::Stop;
            }
            let now = std::time::Instant::now();
            let backoff = bg.retry_at.filter(|t| *t > now);
            if bg.error.is_none() && backoff.is_none() {
                match self.next_job(bg) {
                    Ok(Some(job)) => return Pick::Job(job),
                    Ok(None) => {
                        // Nothing waits for space any more.
                        if bg.no_space.take().is_some() {
                            bg.retry_at = None;
                            self.done_cv.notify_all();
                        }
                    }
                    Err(e) => {
                        parking_lot::MutexGuard::unlocked(bg, || self.fail_job(&e));
                        continue;
                    }
                }
            }
            return Pick::Wait(match (self.opts.idle_settle_ms, backoff) {
                (_, Some(t)) => Some(t - now),
                (0, None) => None,
                // Look again to notice that writes stopped.
                (ms, None) => Some(Duration::from_millis(ms)),
            });
        }
    }

    pub(super) fn background_loop(self: Arc<Self>) {
        loop {
            let job = {
                let mut bg = self.bg.lock();
                loop {
                    match self.pick(&mut bg) {
                        Pick::Stop => return,
                        Pick::Job(job) => break job,
                        Pick::Wait(Some(d)) => {
                            self.bg_cv.wait_for(&mut bg, d);
                        }
                        Pick::Wait(None) => self.bg_cv.wait(&mut bg),
                    }
                }
            };
            self.run_job(job);
        }
    }

    pub(super) fn run_one_job(&self) -> BackgroundStep {
        let pick = self.pick(&mut self.bg.lock());
        match pick {
            Pick::Stop => BackgroundStep::Stopped,
            Pick::Wait(d) => BackgroundStep::Idle(d),
            Pick::Job(job) => {
                let kind = match &job {
                    Job::Flush => JobKind::Flush,
                    Job::Split(..) | Job::Compact(..) => JobKind::Compaction,
                    Job::Gc(_) => JobKind::Gc,
                    Job::Backfill(..) => JobKind::Backfill,
                };
                self.run_job(job);
                BackgroundStep::Ran(kind)
            }
        }
    }

    fn run_job(&self, job: Job) {
        // A panic in a job must not leave its flag set and writers waiting forever.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &job {
            Job::Flush => self.flush_oldest(),
            Job::Compact(task, version) | Job::Split(task, version) => {
                self.run_compaction(task, version, true)
            }
            Job::Gc(seg) => {
                let mut stats = GcStats::default();
                let r = self.gc_segment(*seg, self.opts.vlog_gc_dead_ratio, &mut stats);
                self.count_gc(&stats);
                r
            }
            Job::Backfill(ns, id) => self.ns_entry(*ns).and_then(|e| self.backfill(&e, *id)),
        }))
        .unwrap_or_else(|_| Err(Error::Background("a background job panicked".into())));
        let result = result.map(|_| ());
        // A backfill's failure is its `create_index`'s error, not the database's: the index
        // stays unready (queries scan the records) and the next open tries again.
        if let (Err(e), false) = (&result, matches!(job, Job::Backfill(..))) {
            self.fail_job(e);
        }
        let mut bg = self.bg.lock();
        if result.is_ok() && bg.no_space.take().is_some() {
            tracing::info!("space is back: background work goes on");
            bg.retry_at = None;
        }
        match job {
            Job::Flush => bg.flushing = false,
            Job::Compact(..) => bg.compacting = false,
            Job::Split(task, _) => {
                bg.splitting = false;
                if task.output_level() != RUNS {
                    bg.compacting = false;
                }
            }
            Job::Gc(_) => bg.gc_running = false,
            Job::Backfill(_, id) => {
                bg.backfilling = false;
                if let Some(waiting) = bg.backfilled.get_mut(&id) {
                    *waiting = Some(result);
                }
            }
        }
        bg.gc_check = true;
        self.wake_background();
        self.done_cv.notify_all();
    }

    /// Backfills index `id` of `ns` as a background job (placed by the runner, if there is
    /// one) and waits for it to end. With a single background run, the backfill (which may
    /// wait for a flush) would hold the only one: it runs here instead.
    pub(super) fn backfill_in_background(&self, e: &NsEntry, id: Nsid) -> Result<()> {
        if self.opts.background_threads < 2 {
            return self.backfill(e, id);
        }
        let mut bg = self.bg.lock();
        bg.backfills.push_back((e.id, id));
        bg.backfilled.insert(id, None);
        // Background work stopped for want of space may not run the backfill for as long as
        // the disk is full: as a writer does, give up once a retry since this call failed too.
        let failures = bg.no_space_failures;
        bg.retry_at = None;
        self.wake_background();
        loop {
            if let Some(done) = bg.backfilled.get_mut(&id).and_then(Option::take) {
                bg.backfilled.remove(&id);
                return done;
            }
            let no_space = bg
                .no_space
                .clone()
                .filter(|_| bg.no_space_failures != failures);
            let gave_up = match (&bg.error, bg.shutdown, no_space) {
                (Some(msg), _, _) => Error::Background(msg.clone()),
                // Left unready: the next open backfills it.
                (None, true, _) => Error::Closed,
                (None, false, Some(why)) => Error::NoSpace {
                    file: "database".into(),
                    source: std::io::Error::new(std::io::ErrorKind::StorageFull, why),
                },
                (None, false, None) => {
                    self.done_cv.wait_for(&mut bg, Duration::from_millis(100));
                    continue;
                }
            };
            bg.backfilled.remove(&id);
            bg.backfills.retain(|&(_, i)| i != id);
            return Err(gave_up);
        }
    }
}
