//! A simulator: the background [`Policy`] over synthetic workloads, without I/O. Tables are
//! key ranges with a size; a job's effect is applied to the version when the simulator
//! decides that the job ends, in any order, as concurrent threads would end them. The
//! property tests below check what the policy promises.

use super::job::{Job, Outcome, Slots};
use super::policy::{Choice, Policy, View};
use crate::compaction::{level_scores, CompactionTask, IdleNs, AGING_PICKS};
use crate::key::{ikey_nsid, push_trailer, user_part, Kind, Nsid};
use crate::options::{Layout, Options};
use crate::stats::Counters;
use crate::storage::MemStorage;
use crate::table::{BlockCache, TableProps};
use crate::version::{TableCtx, TableHandle, Version, VersionEdit, RUNS};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Keys `lo..=hi` of namespace `ns`, `bytes` of them.
#[derive(Clone, Copy, Debug)]
struct Piece {
    ns: Nsid,
    lo: u64,
    hi: u64,
    bytes: u64,
}

/// What a workload does between the policy's decisions.
#[derive(Clone, Debug)]
enum Action {
    /// A memtable's worth of writes, frozen: keys `lo..lo+span` of each namespace given.
    Write(Vec<(Nsid, u64, u64)>),
    /// The `n`th running job ends (modulo how many run).
    Finish(usize),
    /// The `n`th running job fails for want of space.
    FailNoSpace(usize),
    /// Time passes.
    Advance(u64),
    Idle(bool),
    /// A value-log segment becomes worth collecting.
    GcDue,
    /// `create_index` on a namespace.
    Backfill(Nsid),
    /// A manual compaction asks for the slots.
    Manual,
}

/// A job that runs, and the tables (level, id) it reads and replaces.
struct Running {
    job: Option<Job>,
    slots: Slots,
    consumed: Vec<(usize, u64)>,
}

struct Sim {
    opts: Options,
    ctx: TableCtx,
    version: Arc<Version>,
    policy: Policy,
    content: HashMap<u64, Vec<Piece>>,
    frozen: VecDeque<Vec<Piece>>,
    running: Vec<Running>,
    next_id: u64,
    now: Instant,
    idle: bool,
    gc_due: VecDeque<u64>,
    backfills_asked: HashSet<Nsid>,
    backfills_done: HashSet<Nsid>,
    manual_waiting: usize,
    /// Compactions of trees started so far.
    picks: u64,
    /// Per tree and level: the pick at which its debt (score >= 1) was first seen.
    debt_since: BTreeMap<(Nsid, usize), u64>,
    longest_wait: u64,
    /// Per namespace: writes so far (which names its idle period) and the seqno of the
    /// flush that took its last write (`u64::MAX` before). Idle, every namespace is idle.
    writes: BTreeMap<Nsid, (u64, u64)>,
    /// Consolidations started, per namespace.
    consolidations: BTreeMap<Nsid, u64>,
}

fn ikey(ns: Nsid, k: u64, seq: u64) -> Vec<u8> {
    let mut v = user_part(ns, &k.to_be_bytes());
    push_trailer(&mut v, seq, Kind::Put);
    v
}

impl Sim {
    fn new(opts: Options) -> Sim {
        let ctx = TableCtx::new(
            Arc::new(MemStorage::new()),
            Arc::new(BlockCache::new(0)),
            Arc::new(Counters::default()),
            16,
        );
        Sim {
            version: Arc::new(Version::new(opts.num_levels)),
            opts,
            ctx,
            policy: Policy::new(),
            content: HashMap::new(),
            frozen: VecDeque::new(),
            running: Vec::new(),
            next_id: 1,
            now: Instant::now(),
            idle: false,
            gc_due: VecDeque::new(),
            backfills_asked: HashSet::new(),
            backfills_done: HashSet::new(),
            manual_waiting: 0,
            picks: 0,
            debt_since: BTreeMap::new(),
            longest_wait: 0,
            writes: BTreeMap::new(),
            consolidations: BTreeMap::new(),
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A table of `pieces` (sorted, one namespace each).
    fn table(&mut self, pieces: Vec<Piece>, seqs: (u64, u64)) -> TableProps {
        let id = self.id();
        let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
        let props = TableProps {
            id,
            size: pieces.iter().map(|p| p.bytes).sum(),
            entries: pieces.len() as u64,
            smallest: ikey(first.ns, first.lo, seqs.1),
            largest: ikey(last.ns, last.hi, seqs.0),
            min_seq: seqs.0,
            max_seq: seqs.1,
            aux_bytes: 0,
        };
        self.content.insert(id, pieces);
        props
    }

    fn apply(&mut self, edit: &VersionEdit) {
        let (v, _) = self.version.apply(edit, &self.ctx);
        self.version = Arc::new(v);
    }

    fn act(&mut self, action: &Action) {
        match action {
            Action::Write(spans) => {
                // A writer stalls while the frozen memtables are at their limit.
                if self.frozen.len() < self.opts.max_immutable_memtables {
                    let pieces = spans
                        .iter()
                        .map(|&(ns, lo, span)| Piece {
                            ns,
                            lo,
                            hi: lo + span,
                            bytes: 100 * (span + 1),
                        })
                        .collect();
                    self.frozen.push_back(pieces);
                    self.idle = false;
                    for &(ns, ..) in spans {
                        let w = self.writes.entry(ns).or_default();
                        *w = (w.0 + 1, u64::MAX);
                    }
                }
            }
            Action::Finish(n) => self.finish(*n, Outcome::Done),
            Action::FailNoSpace(n) => self.finish(*n, Outcome::NoSpace("full".into())),
            Action::Advance(ms) => self.now += Duration::from_millis(*ms),
            Action::Idle(on) => self.idle = *on,
            Action::GcDue => {
                let segment = self.id();
                self.gc_due.push_back(segment);
                self.policy.check_gc();
            }
            Action::Backfill(ns) => {
                let index = self.id() as Nsid;
                self.backfills_asked.insert(index);
                self.policy.queue_backfill(*ns, index);
            }
            Action::Manual => {
                self.manual_waiting += 1;
                self.policy.manual_wants_slots();
            }
        }
        self.pump();
    }

    /// The policy's choice now (the simulator's GC candidate: the oldest segment due).
    fn choose(&mut self) -> Choice {
        let view = View {
            version: &self.version,
            opts: &self.opts,
            frozen: self.frozen.len(),
            idle: self.idle,
            idle_ns: match self.idle {
                true => self
                    .writes
                    .iter()
                    .map(|(&ns, &(period, last_seq))| IdleNs {
                        ns,
                        period,
                        last_seq,
                    })
                    .collect(),
                false => Vec::new(),
            },
            now: self.now,
        };
        let gc = self.gc_due.front().copied();
        let choice = self.policy.choose(&view, &mut |_| Ok(gc));
        choice.expect("the simulator's picks do not fail")
    }

    /// Starts what the policy chooses while background threads are free.
    fn pump(&mut self) {
        while self.manual_waiting > 0 && self.policy.manual_may_start() {
            self.manual_waiting -= 1;
            self.policy.manual_stops_waiting(true);
            self.start(None, Slots::SPLIT.union(Slots::TREE));
        }
        while self.running.len() < self.opts.background_threads {
            match self.choose() {
                Choice::Run(job) => {
                    let slots = job.slots();
                    self.start(Some(job), slots);
                }
                Choice::Wait(_) | Choice::Stop => break,
            }
        }
    }

    fn start(&mut self, job: Option<Job>, slots: Slots) {
        let held = self
            .running
            .iter()
            .fold(Slots::default(), |s, r| s.union(r.slots));
        assert!(!held.meets(slots), "a job started in a slot that is held");
        let consumed = job.as_ref().map(|j| self.consumed(j)).unwrap_or_default();
        for r in &self.running {
            for t in &consumed {
                assert!(!r.consumed.contains(t), "two compactions read table {t:?}");
            }
        }
        if let Some(Job::Compact { task, .. }) = &job {
            self.paid(task);
            self.picks += 1;
        }
        if let Some(Job::Consolidate { ns, .. }) = &job {
            *self.consolidations.entry(*ns).or_default() += 1;
        }
        self.running.push(Running {
            job,
            slots,
            consumed,
        });
    }

    /// The tables a compaction replaces, by the level they are in.
    fn consumed(&self, job: &Job) -> Vec<(usize, u64)> {
        let Some((task, version)) = job.task() else {
            return Vec::new();
        };
        // An input is in `task.level`, except runs taken along by an L0 merge into L1 and
        // the levels a consolidation takes at once.
        let level_of = |id: u64| {
            std::iter::once((RUNS, &version.runs))
                .chain(version.levels.iter().enumerate().skip(1))
                .find(|(_, ts)| ts.iter().any(|t| t.id() == id))
                .map_or(task.level, |(l, _)| l)
        };
        let mut out: Vec<(usize, u64)> = task
            .inputs
            .iter()
            .map(|t| (level_of(t.id()), t.id()))
            .collect();
        out.extend(task.overlapping.iter().map(|t| (task.output_level, t.id())));
        out
    }

    fn finish(&mut self, n: usize, outcome: Outcome) {
        if self.running.is_empty() {
            return;
        }
        let r = self.running.remove(n % self.running.len());
        let Some(job) = r.job else {
            self.policy.manual_ended();
            return;
        };
        if outcome == Outcome::Done {
            self.carry_out(&job, &r.consumed);
        }
        if let Job::Backfill { index, .. } = job {
            self.backfills_done.insert(index);
        }
        self.policy.finished(&job, &outcome, self.now);
    }

    fn carry_out(&mut self, job: &Job, consumed: &[(usize, u64)]) {
        let mut edit = VersionEdit::default();
        match job {
            Job::Flush => {
                let pieces = self.frozen.pop_front().expect("a flush has a memtable");
                let mut pieces = merge_pieces(pieces);
                pieces.sort_by_key(|p| (p.ns, p.lo));
                let seq = self.id();
                for p in &pieces {
                    if let Some(w) = self.writes.get_mut(&p.ns) {
                        // Flushes go oldest memtable first: the latest holds its last write.
                        w.1 = seq;
                    }
                }
                edit.added.push((0, self.table(pieces, (seq, seq))));
            }
            Job::Gc { segment, .. } => self.gc_due.retain(|s| s != segment),
            Job::Backfill { .. } => {}
            Job::Split { task, .. } | Job::Compact { task, .. } | Job::Consolidate { task, .. } => {
                for &(level, id) in consumed {
                    let present = self.level(level).iter().any(|t| t.id() == id);
                    assert!(
                        present,
                        "table {id} of level {level} is gone: jobs overlapped"
                    );
                    edit.deleted.push((level, id));
                }
                self.outputs(task, consumed, &mut edit);
            }
        }
        self.apply(&edit);
    }

    fn level(&self, level: usize) -> &[Arc<TableHandle>] {
        if level == RUNS {
            &self.version.runs
        } else {
            &self.version.levels[level]
        }
    }

    /// What a merge writes: per namespace its key ranges, cut into tables of the target size
    /// (runs: one table per namespace); a move keeps the tables as they are.
    fn outputs(
        &mut self,
        task: &CompactionTask,
        consumed: &[(usize, u64)],
        edit: &mut VersionEdit,
    ) {
        let out = task.output_level;
        if task.moves {
            for t in &task.inputs {
                edit.added.push((out, t.props.clone()));
            }
            return;
        }
        let seqs = consumed
            .iter()
            .filter_map(|&(level, id)| self.level(level).iter().find(|t| t.id() == id))
            .fold((u64::MAX, 0), |(lo, hi), t| {
                (lo.min(t.props.min_seq), hi.max(t.props.max_seq))
            });
        let pieces: Vec<Piece> = consumed
            .iter()
            .flat_map(|(_, id)| self.content[id].clone())
            .collect();
        let target = if out == RUNS {
            u64::MAX
        } else {
            self.opts.target_table_bytes
        };
        let per_ns = self.opts.layout == Layout::PerNamespace;
        let mut table: Vec<Piece> = Vec::new();
        for p in merge_pieces(pieces) {
            let parts = p.bytes.div_ceil(target).clamp(1, p.hi - p.lo + 1);
            let width = (p.hi - p.lo + 1) / parts;
            for i in 0..parts {
                let lo = p.lo + i * width;
                let hi = if i + 1 == parts { p.hi } else { lo + width - 1 };
                let part = Piece {
                    ns: p.ns,
                    lo,
                    hi,
                    bytes: p.bytes / parts,
                };
                let full = table.iter().map(|p| p.bytes).sum::<u64>() >= target;
                let other_ns = table.last().is_some_and(|l| l.ns != part.ns);
                if full || (other_ns && (per_ns || out == RUNS)) {
                    let props = self.table(std::mem::take(&mut table), seqs);
                    edit.added.push((out, props));
                }
                table.push(part);
            }
        }
        if !table.is_empty() {
            let props = self.table(table, seqs);
            edit.added.push((out, props));
        }
    }

    /// Per tree and level: bytes over the level's limit (runs: their count over the trigger).
    fn debts(&self) -> Vec<((Nsid, usize), f64)> {
        let mut scores = Vec::new();
        let mut runs: BTreeMap<Nsid, usize> = BTreeMap::new();
        for t in &self.version.runs {
            *runs.entry(ikey_nsid(&t.props.smallest)).or_default() += 1;
        }
        for (ns, n) in runs {
            scores.push((
                (ns, RUNS),
                n as f64 / self.opts.run_compaction_trigger as f64,
            ));
        }
        for (score, level, tree) in level_scores(&self.version, &self.opts) {
            scores.push(((tree, level), score));
        }
        scores
    }

    /// Notes the debts seen now (how long each waits is measured in picks).
    fn watch_debts(&mut self) {
        let debts: Vec<(Nsid, usize)> = self
            .debts()
            .into_iter()
            .filter(|(_, score)| *score >= 1.0)
            .map(|(tree, _)| tree)
            .collect();
        // A debt paid another way (a split that merges L0 and a namespace's runs into its
        // L1) waits no more.
        self.debt_since.retain(|tree, _| debts.contains(tree));
        for tree in debts {
            self.debt_since.entry(tree).or_insert(self.picks);
        }
    }

    fn paid(&mut self, task: &CompactionTask) {
        let ns = task.inputs.first().map(|t| ikey_nsid(&t.props.smallest));
        let tree = match (self.opts.layout, ns) {
            (Layout::PerNamespace, Some(ns)) => ns,
            _ => 0,
        };
        if let Some(since) = self.debt_since.remove(&(tree, task.level)) {
            self.longest_wait = self.longest_wait.max(self.picks - since);
        }
    }

    /// Ends jobs oldest first, as long as there are any, letting time pass when the policy
    /// waits (after a failure for want of space); at most `limit` steps.
    fn settle(&mut self, limit: usize) -> bool {
        for _ in 0..limit {
            self.pump();
            if self.running.is_empty() {
                match self.choose() {
                    Choice::Wait(Some(d)) if self.policy.no_space.is_some() => self.now += d,
                    Choice::Run(job) => {
                        let slots = job.slots();
                        self.start(Some(job), slots);
                    }
                    _ => return true,
                }
            } else {
                self.watch_debts();
                self.finish(0, Outcome::Done);
            }
        }
        false
    }
}

/// Overlapping pieces of one namespace become one, sorted. A key written twice is stored
/// once after a merge: a piece holds at most 100 bytes a key.
fn merge_pieces(mut pieces: Vec<Piece>) -> Vec<Piece> {
    pieces.sort_by_key(|p| (p.ns, p.lo));
    let mut out: Vec<Piece> = Vec::new();
    for p in pieces {
        match out.last_mut() {
            Some(l) if l.ns == p.ns && p.lo <= l.hi => {
                l.hi = l.hi.max(p.hi);
                l.bytes = (l.bytes + p.bytes).min(100 * (l.hi - l.lo + 1));
            }
            _ => out.push(p),
        }
    }
    out
}

#[cfg(test)]
mod tests;
