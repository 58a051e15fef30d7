//! Background work carried out: the job loop, a job dispatched to the part that does it, manual GC and backfills waited for.

use super::background_state::{as_job, log_notice, outcome_of, BgState};
use super::gc_state::GcStats;
use super::inner::Inner;
use super::namespace_set::NsEntry;
use crate::background::{Choice, Job};
use crate::error::{Error, Result};
use crate::key::Nsid;
use crate::options::BackgroundStep;
use crate::stats::Counters;
use crate::version::VersionEdit;
use crate::vlog;
use std::sync::Arc;
use std::time::Duration;

impl Inner {
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
        self.bg.take_gc_slot()?;
        let result = self.value_log_gc().gc_pass(0.0);
        self.bg.release_gc_slot();
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
            let compactions = self.compactions();
            let view = compactions.view(&version, bg.policy.draining());
            let waited_for_space = bg.policy.no_space.is_some();
            let ratio = self.opts.vlog_gc_dead_ratio;
            let choice = bg
                .policy
                .choose(&view, &mut || self.value_log_gc().gc_candidate(ratio));
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
                Err(e) => parking_lot::MutexGuard::unlocked(bg, || self.bg.fail_job(&e)),
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
                .map(|_| self.namespace_admin().forget_destroyed_quietly()),
            Job::Compact { task, version } | Job::Split { task, version } => {
                let compactions = self.compactions();
                compactions
                    .run_compaction(task, version)
                    .map(|written| compactions.count_term(task, written))
                    .map(|_| self.namespace_admin().forget_destroyed_quietly())
            }
            Job::Consolidate { ns, task, version } => {
                self.compactions().consolidate(*ns, task, version)
            }
            Job::Gc { segment } => {
                let mut stats = GcStats::default();
                let r = self.value_log_gc().collect_segment(
                    *segment,
                    self.opts.vlog_gc_dead_ratio,
                    &mut stats,
                );
                self.count_gc(&stats);
                r.map(|_| ())
            }
            Job::Backfill { ns, index } => self
                .namespace_admin()
                .ns_entry(*ns)
                .and_then(|e| self.backfiller().backfill(&e, *index))
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
            return self.backfiller().backfill(e, id);
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
