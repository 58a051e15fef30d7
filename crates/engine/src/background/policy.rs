//! The background policy: from what the engine looks like now, the job that runs next.
//!
//! It is pure: no I/O, no lock, no clock of its own (time comes in the [`View`]). The database
//! keeps one [`Policy`] under its background lock, asks it for the next job
//! ([`Policy::choose`]), runs the job, and tells it how the job ended ([`Policy::finished`]).
//! The simulator (tests) drives the same policy over synthetic workloads.

use super::job::{GcUrgency, Job, Outcome, Slots};
use crate::compaction::{self, CompactionTask, Cursors, IdleNs};
use crate::error::Result;
use crate::key::Nsid;
use crate::options::Options;
use crate::version::Version;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// After a job failed for want of space, how long before background work is tried again.
pub const NO_SPACE_RETRY: Duration = Duration::from_millis(200);

/// What the policy looks at.
pub struct View<'a> {
    pub version: &'a Arc<Version>,
    pub opts: &'a Options,
    /// Frozen memtables waiting for a flush.
    pub frozen: usize,
    /// No write for `idle_settle_ms`: L0 and runs drain into the trees.
    pub idle: bool,
    /// Namespaces without a write for `idle_settle_ms`, by id.
    pub idle_ns: Vec<IdleNs>,
    pub now: Instant,
}

/// What the background does next.
pub enum Choice {
    /// Run this job; it is marked as running.
    Run(Job),
    /// Nothing is due: look again after this long at the latest (`None`: when woken).
    Wait(Option<Duration>),
    /// The database is closing.
    Stop,
}

/// A change of the engine's health worth a log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The first job that failed for want of space.
    OutOfSpace(String),
    /// A job ran after failures for want of space.
    SpaceBack,
    /// The first failure of another kind: the database is read-only from now on.
    ReadOnly(String),
}

/// The background's state: what runs, what is queued, where compactions stopped, and the
/// engine's health.
#[derive(Default)]
pub struct Policy {
    running: Slots,
    /// Manual compactions waiting for the slots: automatic ones stay out of their way.
    manual_waiting: usize,
    /// Where the last compaction of each (tree, level) stopped.
    cursors: Cursors,
    /// How many wait for the tree to settle: while any does, L0 and runs go down even below
    /// their triggers (a count, so that the first waiter to return ends no other's drain).
    pub drainers: usize,
    /// Something may have made a segment worth collecting since the last look.
    gc_check: bool,
    /// A destroyed namespace's values are garbage (until its remains are gone): segments
    /// past the dead ratio go whatever the log holds, until none is left (`db/gc.rs`).
    gc_reclaim: bool,
    /// A write was refused for want of space: any segment with garbage may go.
    gc_space: bool,
    /// Per idle namespace consolidated in its current idle period: that period's stamp (a
    /// consolidation runs once per idle period, not again until the namespace writes).
    consolidated: BTreeMap<Nsid, u64>,
    /// Index backfills asked for by `create_index`, (namespace, index), oldest first.
    backfills: VecDeque<(Nsid, Nsid)>,
    /// A failure that made the database read-only.
    pub error: Option<String>,
    /// A job failed for want of space: writes that must wait for background work fail with
    /// `NoSpace` instead, and jobs are retried from `retry_at` on.
    pub no_space: Option<String>,
    retry_at: Option<Instant>,
    /// Jobs that failed for want of space, so far.
    pub no_space_failures: u64,
    pub shutdown: bool,
}

impl Policy {
    pub fn new() -> Policy {
        Policy {
            // Dead bytes recovered from the manifest may already make a segment worth it.
            gc_check: true,
            ..Policy::default()
        }
    }

    /// Someone waits for the tree to settle (`Db::wait_for_compactions`).
    pub fn draining(&self) -> bool {
        self.drainers > 0
    }

    /// A flush, a split or a compaction runs.
    pub fn busy(&self) -> bool {
        self.running
            .meets(Slots::FLUSH.union(Slots::SPLIT).union(Slots::TREE))
    }

    pub fn gc_running(&self) -> bool {
        self.running.meets(Slots::GC)
    }

    /// Something may have made a value-log segment worth collecting.
    pub fn check_gc(&mut self) {
        self.gc_check = true;
    }

    /// A destroy made garbage (see `gc_reclaim`): a look now.
    pub fn reclaim_gc(&mut self) {
        self.gc_check = true;
        self.gc_reclaim = true;
    }

    /// A destroyed namespace still has remains (entries in memtables or tables, which a flush
    /// or compaction marks dead later): the next look reclaims, whenever it comes.
    pub fn destroyed_remain(&mut self) {
        self.gc_reclaim = true;
    }

    /// A write was refused for want of space: a look now, at [`GcUrgency::Space`].
    pub fn space_wanted(&mut self) {
        self.gc_check = true;
        self.gc_space = true;
    }

    /// How much the next look for a segment to collect wants space back.
    pub fn gc_urgency(&self) -> GcUrgency {
        if self.no_space.is_some() || self.gc_space {
            GcUrgency::Space
        } else if self.gc_reclaim {
            GcUrgency::Reclaim
        } else {
            GcUrgency::Wait
        }
    }

    pub fn queue_backfill(&mut self, ns: Nsid, index: Nsid) {
        self.backfills.push_back((ns, index));
    }

    /// Takes a backfill that has not started out of the queue.
    pub fn cancel_backfill(&mut self, index: Nsid) {
        self.backfills.retain(|&(_, i)| i != index);
    }

    /// Have background work tried again now, whatever a failure for want of space said.
    pub fn retry_now(&mut self) {
        self.retry_at = None;
    }

    /// The next job, marked as running, or how long to wait. An error (from the picker or
    /// from `gc_candidate`, which names a value-log segment worth collecting at the
    /// [urgency](Self::gc_urgency) given) leaves nothing marked: the caller records it with
    /// [`Policy::failed`] and asks again.
    pub fn choose(
        &mut self,
        view: &View<'_>,
        gc_candidate: &mut dyn FnMut(GcUrgency) -> Result<Option<u64>>,
    ) -> Result<Choice> {
        if self.shutdown {
            return Ok(Choice::Stop);
        }
        let backoff = self.retry_at.filter(|t| *t > view.now);
        if self.error.is_none() && backoff.is_none() {
            if let Some(job) = self.next_job(view, gc_candidate)? {
                self.running = self.running.union(job.slots());
                return Ok(Choice::Run(job));
            }
            // Nothing waits for space any more.
            if self.no_space.take().is_some() {
                self.retry_at = None;
            }
        }
        Ok(Choice::Wait(match (view.opts.idle_settle_ms, backoff) {
            (_, Some(t)) => Some(t - view.now),
            (0, None) => None,
            // Look again to notice that writes stopped.
            (ms, None) => Some(Duration::from_millis(ms)),
        }))
    }

    /// The most urgent job: a flush first, then an L0 split, a compaction of a tree, an index
    /// backfill, value-log GC.
    fn next_job(
        &mut self,
        view: &View<'_>,
        gc_candidate: &mut dyn FnMut(GcUrgency) -> Result<Option<u64>>,
    ) -> Result<Option<Job>> {
        let free = |s: Slots| !self.running.meets(s);
        if free(Slots::FLUSH) && view.frozen > 0 {
            return Ok(Some(Job::Flush));
        }
        if self.manual_waiting == 0 && view.opts.auto_compaction {
            let drain = self.draining() || view.idle;
            let version = view.version;
            if free(Slots::SPLIT) {
                if let Some(task) = compaction::pick_split(version, view.opts, drain) {
                    let job = Job::Split {
                        task: decide_move(task),
                        version: version.clone(),
                    };
                    if free(job.slots()) {
                        return Ok(Some(job));
                    }
                }
            }
            if free(Slots::TREE) {
                if let Some(task) = compaction::pick(version, view.opts, &mut self.cursors, drain)?
                {
                    return Ok(Some(Job::Compact {
                        task: decide_move(task),
                        version: version.clone(),
                    }));
                }
                if !self.draining() {
                    if let Some(job) = consolidation(&mut self.consolidated, view, false) {
                        return Ok(Some(job));
                    }
                }
            }
        }
        // A backfill and a GC may both wait for a flush: never both at once, so that one of
        // the (at least two) background threads stays free for the flush.
        let gc_or_backfill = Slots::GC.union(Slots::BACKFILL);
        if free(gc_or_backfill) {
            if let Some((ns, index)) = self.backfills.pop_front() {
                return Ok(Some(Job::Backfill { ns, index }));
            }
        }
        let ratio = view.opts.vlog_gc_dead_ratio;
        if self.gc_check && free(gc_or_backfill) && ratio > 0.0 {
            self.gc_check = false;
            let urgency = self.gc_urgency();
            if let Some(segment) = gc_candidate(urgency)? {
                return Ok(Some(Job::Gc { segment, urgency }));
            }
            // Nothing left to collect at that urgency: what could be given back is.
            self.gc_reclaim = false;
            self.gc_space = false;
        }
        // While draining, trees are consolidated once GC has nothing left to rewrite: its
        // rewrites reach the trees as runs, and each made a consolidated tree consolidate
        // again (8 x 200,000 keys on the NAND model: 293 consolidations, 900 MB, in one
        // settle step).
        if self.draining() && free(Slots::TREE) && !self.gc_running() {
            if let Some(job) = consolidation(&mut self.consolidated, view, true) {
                return Ok(Some(job));
            }
        }
        Ok(None)
    }

    /// `job` ended: its slots are free again, and its outcome updates the health.
    pub fn finished(&mut self, job: &Job, outcome: &Outcome, now: Instant) -> Option<Notice> {
        debug_assert!(self.running.contains(job.slots()));
        self.running = self.running.without(job.slots());
        self.gc_check = true;
        if let (Job::Consolidate { ns, .. }, false) = (job, *outcome == Outcome::Done) {
            // Not done: tried again (after a failure for want of space, once space is back).
            self.consolidated.remove(ns);
        }
        match outcome {
            Outcome::Done => self.no_space.take().map(|_| {
                self.retry_at = None;
                Notice::SpaceBack
            }),
            // A backfill's failure is its `create_index`'s error, not the database's: the
            // index stays unready (queries scan the records) and the next open tries again.
            _ if matches!(job, Job::Backfill { .. }) => None,
            failure => self.failed(failure, now),
        }
    }

    /// A failure outside a job's end (the picker's, a write's): for want of space, work is
    /// retried later; anything else makes the database read-only.
    pub fn failed(&mut self, outcome: &Outcome, now: Instant) -> Option<Notice> {
        match outcome {
            Outcome::Done => None,
            Outcome::NoSpace(why) => {
                // GC may give the space back, whatever the log's garbage.
                self.gc_check = true;
                let first = self.no_space.is_none();
                self.no_space = Some(why.clone());
                self.no_space_failures += 1;
                self.retry_at = Some(now + NO_SPACE_RETRY);
                first.then(|| Notice::OutOfSpace(why.clone()))
            }
            Outcome::Failed(why) => {
                if self.error.is_some() {
                    return None;
                }
                self.error = Some(why.clone());
                Some(Notice::ReadOnly(why.clone()))
            }
        }
    }

    /// A collection called for by hand takes (`on`) or gives back the GC slot.
    pub fn manual_gc(&mut self, on: bool) {
        self.running = if on {
            self.running.union(Slots::GC)
        } else {
            self.running.without(Slots::GC)
        };
    }

    /// A manual compaction (or a namespace's destruction) waits for both compaction slots.
    pub fn manual_wants_slots(&mut self) {
        self.manual_waiting += 1;
    }

    /// The split and the compaction that ran when it asked have ended.
    pub fn manual_may_start(&self) -> bool {
        !self.running.meets(Slots::SPLIT.union(Slots::TREE))
    }

    /// Stops waiting: with `start`, takes both slots (until [`Policy::manual_ended`]).
    pub fn manual_stops_waiting(&mut self, start: bool) {
        self.manual_waiting -= 1;
        if start {
            debug_assert!(self.manual_may_start());
            self.running = self.running.union(Slots::SPLIT.union(Slots::TREE));
        }
    }

    pub fn manual_ended(&mut self) {
        self.running = self.running.without(Slots::SPLIT.union(Slots::TREE));
    }

    /// Nothing runs and nothing is due: L0, runs and trees are at rest (with `drain`, L0 and
    /// the runs are empty), and GC has nothing to collect (`gc_due` says whether it has).
    pub fn settled(&self, view: &View<'_>, gc_due: bool) -> Result<bool> {
        if self.busy() || view.frozen > 0 {
            return Ok(false);
        }
        if !view.opts.auto_compaction {
            return Ok(true);
        }
        let drain = self.draining() || view.idle;
        let mut cursors = self.cursors.clone();
        let none = BTreeMap::new();
        let done = if self.draining() {
            &none
        } else {
            &self.consolidated
        };
        let consolidation =
            || compaction::pick_consolidation(view.version, view.opts, &view.idle_ns, done);
        Ok(
            compaction::pick_split(view.version, view.opts, drain).is_none()
                && !gc_due
                && compaction::pick(view.version, view.opts, &mut cursors, drain)?.is_none()
                && consolidation().is_none(),
        )
    }
}

/// The lowest-priority tree job: an idle namespace's tree into one sorted run, if one is due
/// and was not done in this idle period of the namespace (`done`: namespace -> stamp of the
/// idle period it was consolidated in). With `drain` (someone waits for the settled shape)
/// a tree consolidated in this period is consolidated again if it is in two places again:
/// its last writes, left in the active memtable then, reached it later through other
/// tenants' flushes (a consolidated tree is in one place, so this cannot loop).
fn consolidation(done: &mut BTreeMap<Nsid, u64>, view: &View<'_>, drain: bool) -> Option<Job> {
    // A namespace that wrote since is in another idle period: its old one is forgotten.
    let idle = &view.idle_ns;
    done.retain(|ns, period| idle.iter().any(|i| i.ns == *ns && i.period == *period));
    if view.frozen > 0 {
        // Its last writes may be in a memtable about to be flushed: after the flush.
        return None;
    }
    let none = BTreeMap::new();
    let seen = if drain { &none } else { &*done };
    let (idle, task) = compaction::pick_consolidation(view.version, view.opts, idle, seen)?;
    done.insert(idle.ns, idle.period);
    Some(Job::Consolidate {
        ns: idle.ns,
        task,
        version: view.version.clone(),
    })
}

/// Inputs with nothing to merge with move down without a rewrite.
fn decide_move(mut task: CompactionTask) -> CompactionTask {
    task.moves = task.is_trivial_move();
    task
}
