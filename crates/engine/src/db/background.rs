//! Background work carried out: the job loop, each job handed to the part that does it, and
//! the policy told how it ended.

use super::backfill::Backfiller;
use super::background_state::{as_job, log_notice, outcome_of, Background, BgState};
use super::compactions::Compactions;
use super::flush::Flusher;
use super::gc::ValueLogGc;
use super::gc_state::GcStats;
use super::namespaces::NamespaceAdmin;
use super::pin_keeper::PinKeeper;
use super::versions::Versions;
use crate::background::{Choice, Job};
use crate::error::Error;
use crate::options::{BackgroundStep, Options};

/// The parts that carry out background jobs, each built when a job needs it (the open
/// database hands them out: see inner.rs).
pub(super) trait JobParts {
    fn flusher(&self) -> Flusher<'_, impl Fn() + '_>;
    fn compactions(&self) -> Compactions<'_, impl Fn() + '_>;
    fn value_log_gc(&self) -> ValueLogGc<'_, impl Fn() + '_, impl Fn() + '_>;
    fn backfiller(&self) -> Backfiller<'_, impl Fn() + '_, impl Fn() + '_, impl Fn() + '_>;
    fn namespace_admin(&self) -> NamespaceAdmin<'_, impl Fn() + '_>;
    fn pins(&self) -> PinKeeper<'_>;
}

/// The job loop: asks the policy for the next job, has the part that does it carry it out,
/// and tells the policy how it ended.
pub(super) struct Jobs<'a, P> {
    pub(super) opts: &'a Options,
    pub(super) bg: &'a Background,
    pub(super) versions: &'a Versions,
    pub(super) parts: &'a P,
}

impl<P: JobParts> Jobs<'_, P> {
    /// The policy's choice: the next job, marked as running, or how long to wait.
    fn choose(&self, bg: &mut parking_lot::MutexGuard<'_, BgState>) -> Choice {
        loop {
            // Pins past their age go first: what they held may be collectable.
            let (gc, expired) = self.parts.pins().expire();
            if gc {
                bg.policy.check_gc();
            }
            if !expired.is_empty() {
                // Their iterators' tables and memtables go now, not when the handles drop;
                // dropping them may delete files: not under the background's lock.
                parking_lot::MutexGuard::unlocked(bg, || expired.release());
            }
            let version = self.versions.lock().current();
            let compactions = self.parts.compactions();
            let view = compactions.view(&version, bg.policy.draining());
            let waited_for_space = bg.policy.no_space.is_some();
            // A write refused for want of space since the last look: GC may give it back.
            if self.bg.take_space_refused() {
                bg.policy.space_wanted();
            }
            let gc = self.parts.value_log_gc();
            if !gc.namespaces.read().destroyed.is_empty() {
                bg.policy.destroyed_remain();
            }
            let ratio = self.opts.vlog_gc_dead_ratio;
            let choice = bg
                .policy
                .choose(&view, &mut |urgency| gc.gc_candidate(ratio, urgency));
            if waited_for_space && bg.policy.no_space.is_none() {
                self.bg.done_cv.notify_all();
            }
            match choice {
                // Awake again when the next pin expires.
                Ok(Choice::Wait(d)) => return Choice::Wait(self.parts.pins().plan_look(d)),
                Ok(choice) => {
                    // Its plan is void while it runs the job: a waiting thread plans for the
                    // pins instead (a runner's next step does, as it follows a job).
                    if matches!(choice, Choice::Run(_)) && self.parts.pins().plan_running() {
                        self.bg.cv.notify_one();
                    }
                    return choice;
                }
                Err(e) => parking_lot::MutexGuard::unlocked(bg, || self.bg.fail_job(&e)),
            }
        }
    }

    /// Runs jobs until the database closes (a background thread's whole life).
    pub(super) fn run_loop(&self) {
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

    /// Runs the next job, if any (a `background_runner`'s call).
    pub(super) fn run_one(&self) -> BackgroundStep {
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
            Job::Flush => self.parts.flusher().flush_oldest(),
            Job::Compact { task, version } | Job::Split { task, version } => {
                let compactions = self.parts.compactions();
                compactions
                    .run_compaction(task, version)
                    .map(|written| compactions.count_term(task, written))
            }
            Job::Consolidate { ns, task, version } => {
                self.parts.compactions().consolidate(*ns, task, version)
            }
            Job::Gc { segment, urgency } => {
                let mut stats = GcStats::default();
                let gc = self.parts.value_log_gc();
                let least = urgency.least_dead(self.opts.vlog_gc_dead_ratio);
                let r = gc.collect_segment(*segment, least, &mut stats);
                gc.count(&stats);
                r?;
                // A collected segment goes once its rewrites are flushed: its space cannot
                // wait for writes to fill the memtable (none may come, when they are refused
                // for want of that space).
                if stats.segments_deleted > 0 {
                    gc.flush_soon()?;
                }
                Ok(())
            }
            Job::Backfill { ns, index } => self
                .parts
                .namespace_admin()
                .ns_entry(*ns)
                .and_then(|e| self.parts.backfiller().backfill(&e, *index))
                .map(|_| ()),
        }))
        .unwrap_or_else(|_| Err(Error::Background("a background job panicked".into())));
        // Any job may have dropped the last entries of a destroyed id: a flush, a compaction
        // or a consolidation, and GC or a backfill through the flushes they make themselves.
        if result.is_ok() {
            self.parts.namespace_admin().forget_destroyed_quietly();
        }
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
        self.bg.wake(self.opts.background_runner.as_ref());
        self.bg.done_cv.notify_all();
    }
}

#[cfg(test)]
#[path = "background_tests.rs"]
mod tests;
