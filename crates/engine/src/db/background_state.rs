//! The background's state: the scheduling policy behind its lock, the condition variables
//! its runners and waiters sleep on, the compaction slots, and which thread runs a job.

use crate::background::{Notice, Outcome, Policy};
use crate::compaction::CompactionTask;
use crate::error::{Error, Result};
use crate::key::Nsid;
use crate::options::{BackgroundRunner, Layout};
use crate::version::RUNS;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How long a writer waits for a background retry before it fails with `NoSpace`.
pub(super) const NO_SPACE_WAIT: Duration = Duration::from_secs(2);

/// The background's state under its lock: the policy, and the `create_index` calls waiting
/// for their backfills.
pub(super) struct BgState {
    pub(super) policy: Policy,
    /// Backfills whose `create_index` waits, by index: `None` until the backfill ends. A
    /// waiter that gives up (an error, a close) takes its entry out, so no answer outlives it.
    pub(super) backfilled: HashMap<Nsid, Option<Result<()>>>,
}

impl Default for BgState {
    fn default() -> Self {
        BgState {
            policy: Policy::new(),
            backfilled: HashMap::new(),
        }
    }
}

/// Background work's shared state: its state under the lock, the wake-ups of the threads
/// that run it and of those that wait for it, and the check on compaction slots.
#[derive(Default)]
pub(super) struct Background {
    pub(super) state: Mutex<BgState>,
    /// Wakes background threads.
    pub(super) cv: Condvar,
    /// Wakes threads waiting for background work to finish.
    pub(super) done_cv: Condvar,
    /// Compactions running in each slot (split, tree), counted where they run: a check
    /// that the slots' bookkeeping never lets two share a slot.
    pub(super) in_slot: [AtomicU64; 2],
    /// Times a compaction started while another held its slot (a bug if ever above 0).
    pub(super) slot_overlaps: AtomicU64,
    /// A write was refused for want of space since the background last looked: GC may give
    /// the space back (its gate waits for the log's garbage otherwise).
    space_refused: AtomicBool,
    /// When a refusal last woke the background: the database's uptime in milliseconds, plus
    /// 1 (0: never).
    space_refused_at: AtomicU64,
}

/// Least time between two wakes of the background by refused writes: a client that keeps
/// writing to a full disk makes it look (list the segments, ask the free space) this often
/// at most, as the free space is asked again this often.
const SPACE_REFUSED_EVERY_MS: u64 = 50;

/// Marks a compaction as running in its slots for as long as it lives.
pub(super) struct SlotGuard<'a> {
    bg: &'a Background,
    slots: [bool; 2],
}

impl<'a> SlotGuard<'a> {
    pub(super) fn enter(bg: &'a Background, layout: Layout, task: &CompactionTask) -> Self {
        let split =
            task.output_level() == RUNS || (task.level == 0 && layout == Layout::PerNamespace);
        let tree = task.output_level() != RUNS;
        let slots = [split, tree];
        for (i, _) in slots.iter().enumerate().filter(|(_, on)| **on) {
            if bg.in_slot[i].fetch_add(1, Ordering::AcqRel) > 0 {
                bg.slot_overlaps.fetch_add(1, Ordering::Relaxed);
                tracing::error!("two compactions share a slot");
            }
        }
        SlotGuard { bg, slots }
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        for (i, _) in self.slots.iter().enumerate().filter(|(_, on)| **on) {
            self.bg.in_slot[i].fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Background {
    pub(super) fn slot_overlaps(&self) -> u64 {
        self.slot_overlaps.load(Ordering::Relaxed)
    }

    /// Waits a while for background work to be done (a job, or the retry of a write that
    /// found no space), waking it first; the background's error, or `Closed`, if it stopped.
    pub(super) fn wait(&self, runner: Option<&BackgroundRunner>) -> Result<()> {
        let mut bg = self.state.lock();
        if let Some(e) = &bg.policy.error {
            return Err(Error::Background(e.clone()));
        }
        if bg.policy.shutdown {
            return Err(Error::Closed);
        }
        if bg.policy.no_space.is_some() {
            // Space may be back: have the background retry now, and give up only if that
            // attempt fails too (or none comes soon).
            let failures = bg.policy.no_space_failures;
            bg.policy.retry_now();
            self.wake(runner);
            let deadline = std::time::Instant::now() + NO_SPACE_WAIT;
            while bg.policy.no_space.is_some()
                && bg.policy.no_space_failures == failures
                && bg.policy.error.is_none()
                && !bg.policy.shutdown
                && std::time::Instant::now() < deadline
            {
                self.done_cv.wait_for(&mut bg, Duration::from_millis(20));
            }
            if let Some(why) = &bg.policy.no_space {
                return Err(Error::NoSpace {
                    file: "database".into(),
                    source: std::io::Error::new(std::io::ErrorKind::StorageFull, why.clone()),
                });
            }
            return Ok(());
        }
        self.wake(runner);
        self.done_cv.wait_for(&mut bg, Duration::from_millis(50));
        Ok(())
    }

    /// [`wake`](Self::wake), the notify under the background's lock: a thread about to
    /// sleep either saw the work before or is woken. The runner is called after the lock
    /// goes (a runner may run a step on the calling thread, which takes the lock; and a
    /// caller should not wait behind a look).
    pub(super) fn wake_locked(&self, runner: Option<&BackgroundRunner>) {
        drop(self.state.lock());
        self.cv.notify_all();
        if let Some(r) = runner {
            (r.0)();
        }
    }

    /// `Closed` once the database is `closed`, the background's error once it failed.
    pub(super) fn check_open(&self, closed: &AtomicBool) -> Result<()> {
        if closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(e) = &self.state.lock().policy.error {
            return Err(Error::Background(e.clone()));
        }
        Ok(())
    }

    /// A background job (or the write path) failed: for want of space it is retried later,
    /// anything else makes the database read-only.
    pub(super) fn fail_job(&self, e: &Error) {
        let outcome = failure(e);
        let notice = (self.state.lock().policy).failed(&outcome, std::time::Instant::now());
        log_notice(notice);
        self.done_cv.notify_all();
    }

    /// Takes the GC slot for a collection called for by hand: waits until a running GC has
    /// ended (whatever errors or shutdown say meanwhile: a running job always ends, and two
    /// collections must never overlap). Fails, holding nothing, if the database is closed or
    /// read-only.
    pub(super) fn take_gc_slot(&self) -> Result<()> {
        let mut bg = self.state.lock();
        while bg.policy.gc_running() {
            self.done_cv.wait_for(&mut bg, Duration::from_millis(50));
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

    pub(super) fn release_gc_slot(&self) {
        self.state.lock().policy.manual_gc(false);
        self.done_cv.notify_all();
    }

    /// A write was refused for want of space (the reserve reached, or the storage full): the
    /// background looks for a segment to collect, once per [`SPACE_REFUSED_EVERY_MS`] at most
    /// however many writes are refused. `now_ms`: the database's uptime.
    pub(super) fn space_refused(&self, now_ms: u64, runner: Option<&BackgroundRunner>) {
        let now = now_ms + 1;
        let last = self.space_refused_at.load(Ordering::Acquire);
        if last != 0 && now.saturating_sub(last) < SPACE_REFUSED_EVERY_MS {
            return;
        }
        let won = self
            .space_refused_at
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if won && !self.space_refused.swap(true, Ordering::AcqRel) {
            self.wake_locked(runner);
        }
    }

    /// Whether a write was refused for want of space since the last call.
    pub(super) fn take_space_refused(&self) -> bool {
        self.space_refused.swap(false, Ordering::AcqRel)
    }

    /// Wakes the background: the database's own threads, or `runner` (the options').
    pub(super) fn wake(&self, runner: Option<&BackgroundRunner>) {
        self.cv.notify_all();
        if let Some(r) = runner {
            (r.0)();
        }
    }
}

/// How a job's result reads to the policy.
pub(super) fn outcome_of(result: &Result<()>) -> Outcome {
    match result {
        Ok(()) => Outcome::Done,
        Err(e) => failure(e),
    }
}

pub(super) fn failure(e: &Error) -> Outcome {
    if e.is_no_space() {
        Outcome::NoSpace(e.to_string())
    } else {
        Outcome::Failed(e.to_string())
    }
}

pub(super) fn log_notice(notice: Option<Notice>) {
    match notice {
        Some(Notice::OutOfSpace(e)) => tracing::warn!(
            error = %e,
            "out of space: writes that need background work fail until space returns"
        ),
        Some(Notice::SpaceBack) => tracing::info!("space is back: background work goes on"),
        Some(Notice::ReadOnly(e)) => {
            tracing::error!(error = %e, "background error: database is now read-only")
        }
        None => {}
    }
}

thread_local! {
    /// The thread is carrying out a background job.
    static ON_JOB: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread runs a background job: with a single background run, no other job
/// can run meanwhile, so a write it makes (a GC's rewrites) must not wait for one.
pub(super) fn on_job_thread() -> bool {
    ON_JOB.with(|c| c.get())
}

/// Runs `job` marked as a background job on this thread (see [`on_job_thread`]).
pub(super) fn as_job<R>(job: impl FnOnce() -> R) -> R {
    let was = ON_JOB.with(|c| c.replace(true));
    let r = job();
    ON_JOB.with(|c| c.set(was));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uptime::Uptime;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// Refused writes wake the background once per period, however many there are and
    /// however fast it looks: a client writing to a full disk in a loop cannot keep it busy.
    #[test]
    fn refused_writes_wake_the_background_once_a_period() {
        let bg = Background::default();
        let wakes = Arc::new(AtomicUsize::new(0));
        let w = wakes.clone();
        let runner = BackgroundRunner(Arc::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        }));
        let clock = Uptime::new();
        let start = std::time::Instant::now();
        let mut looks = 0;
        for _ in 0..10_000 {
            bg.space_refused(clock.ms(), Some(&runner));
            // The background looks at once, every time.
            looks += usize::from(bg.take_space_refused());
        }
        // Whole milliseconds: a period may look a millisecond short.
        let periods = start.elapsed().as_millis() as usize / SPACE_REFUSED_EVERY_MS as usize + 2;
        let wakes = wakes.load(Ordering::Relaxed);
        assert!(
            wakes >= 1 && wakes <= periods,
            "{wakes} wakes in {periods} periods"
        );
        assert_eq!(looks, wakes);
        std::thread::sleep(Duration::from_millis(SPACE_REFUSED_EVERY_MS + 10));
        bg.space_refused(clock.ms(), Some(&runner));
        assert!(
            bg.take_space_refused(),
            "a refusal a period later wakes it again"
        );
    }
}
