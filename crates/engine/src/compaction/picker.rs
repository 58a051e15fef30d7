//! Chooses what to compact next.
//!
//! Per namespace (the default layout) the tree has three parts, and each has its own rule:
//! - **L0 is shared.** An L0 compaction *splits* all of L0 by namespace into one run per
//!   namespace, without merging with anything below: it reads and writes L0's bytes only,
//!   whatever the namespaces' trees hold, so L0 empties fast and writers do not stall behind
//!   the trees of other tenants.
//! - **Runs are per namespace.** Once a namespace has `run_compaction_trigger` runs, they are
//!   merged with that namespace's L1 (only the overlapping tables). The namespace's L1 is
//!   rewritten for its own data only, and once per several L0 compactions.
//! - **L1 and deeper are per namespace**, each level sized as usual, each tree picked by its
//!   own score, table by table round-robin per tree.
//!
//! In one shared tree (`Layout::Shared`) there are no runs: L0 merges into L1 as in LevelDB.

use crate::error::Result;
use crate::key::Nsid;
use crate::options::{Layout, Options};
use crate::version::{TableHandle, Version, RUNS};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A decision: merge `inputs` (from `level`) with `overlapping` (from `output_level`), or
/// move `inputs` down unchanged when nothing overlaps.
pub struct CompactionTask {
    /// 0, [`RUNS`] or a sorted level.
    pub level: usize,
    /// [`RUNS`] for an L0 split, else the level below `level`.
    pub output_level: usize,
    pub inputs: Vec<Arc<TableHandle>>,
    pub overlapping: Vec<Arc<TableHandle>>,
    /// The inputs move down unchanged instead of being rewritten: decided by the background
    /// policy, only for a [trivial move](CompactionTask::is_trivial_move).
    pub moves: bool,
}

impl CompactionTask {
    pub fn output_level(&self) -> usize {
        self.output_level
    }

    /// Inputs with nothing to merge with move down without being rewritten: one table of a
    /// sorted level, or a namespace's runs when they do not overlap each other or its L1.
    pub fn is_trivial_move(&self) -> bool {
        if self.level == 0 || !self.overlapping.is_empty() {
            return false;
        }
        if self.level != RUNS {
            return self.inputs.len() == 1;
        }
        let mut sorted: Vec<&Arc<TableHandle>> = self.inputs.iter().collect();
        sorted.sort_by(|a, b| a.smallest_user().cmp(b.smallest_user()));
        sorted
            .windows(2)
            .all(|w| w[0].largest_user() < w[1].smallest_user())
    }

    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .chain(&self.overlapping)
            .map(|t| t.props.size)
            .sum()
    }
}

/// The fixed budget of `level` in a tree whose L1 may hold `level1` bytes
/// ([`tree_level1_bytes`]).
pub fn max_bytes_for_level(opts: &Options, level1: u64, level: usize) -> u64 {
    let mut b = level1;
    for _ in 1..level {
        b = b.saturating_mul(opts.level_size_ratio);
    }
    b
}

/// The L1 budget of a tree that is being written (it has runs) when there are `trees`. One
/// shared tree has `level1_bytes`. Per namespace, such a tree gets its share of it among all
/// `trees` (at least one table, at most all of it): each namespace's runs carry about 1/`trees` of an L0
/// split, so an L1 of the whole budget was rewritten for a run a fraction of its size at every
/// run merge (8 tenants of 50,000 keys on the paper's profile: 49 bytes written by run merges
/// per key byte put, puts at 0.90x the shared tree's). Divided, a run meets an L1 in the
/// proportion L0 meets L1 in one shared tree, and the levels below take the rest at
/// `level_size_ratio` each, as they do there. A tree without runs keeps the whole budget: no
/// other tenant's arrival or writes ever make an idle tree due for a compaction.
pub fn tree_level1_bytes(opts: &Options, trees: usize) -> u64 {
    match opts.layout {
        Layout::Shared => opts.level1_bytes,
        Layout::PerNamespace => (opts.level1_bytes / trees.max(1) as u64)
            .max(opts.target_table_bytes)
            .min(opts.level1_bytes),
    }
}

/// Bytes per level (index = level; L0 and the last level included) of every tree with a
/// table in L1 or deeper.
pub fn tree_bytes(version: &Version, layout: Layout) -> BTreeMap<Nsid, Vec<u64>> {
    let mut trees: BTreeMap<Nsid, Vec<u64>> = BTreeMap::new();
    for (level, tables) in version.levels.iter().enumerate().skip(1) {
        for t in tables {
            let bytes = trees
                .entry(tree_of(t, layout))
                .or_insert_with(|| vec![0; version.num_levels()]);
            bytes[level] += t.props.entry_bytes();
        }
    }
    trees
}

/// The score (bytes over target) of every tree's level from L1 to the one above the last,
/// as (score, level, tree). With fixed sizing a level's target is
/// [`max_bytes_for_level`] of the tree's L1 budget ([`tree_level1_bytes`] while it has runs).
/// With dynamic sizing (per-namespace trees, the default) it is
/// derived from the tree's deepest non-empty level `d` (RocksDB's
/// `level_compaction_dynamic_level_bytes`): a level `l` above it may hold
/// `bytes(d) / ratio^(d-l)`, so the levels above the last shrink with it and a tree whose
/// last level just grew pushes its upper levels down instead of keeping a half-full L1 over
/// it; `d` itself keeps its fixed budget, past which it spills into a new level below.
pub fn level_scores(version: &Version, opts: &Options) -> Vec<(f64, usize, Nsid)> {
    let last = version.num_levels() - 1;
    let dynamic = opts.dynamic_level_bytes && opts.layout == Layout::PerNamespace;
    let mut scores = Vec::new();
    let trees = tree_bytes(version, opts.layout);
    let writing = tree_level1_bytes(opts, trees.len());
    for (tree, bytes) in trees {
        let level1 = match version.runs_of(tree).is_empty() {
            true => opts.level1_bytes,
            false => writing,
        };
        let deepest = (1..=last).rev().find(|&l| bytes[l] > 0).unwrap_or(1);
        for (level, &b) in bytes.iter().enumerate().take(last).skip(1) {
            if b == 0 {
                continue;
            }
            let limit = if dynamic && level < deepest {
                let ratio = opts
                    .level_size_ratio
                    .saturating_pow((deepest - level) as u32);
                (bytes[deepest] / ratio).max(1)
            } else {
                max_bytes_for_level(opts, level1, level)
            };
            scores.push((b as f64 / limit as f64, level, tree));
        }
    }
    scores
}

/// Which tree a table of level 1 or deeper belongs to: its namespace under the
/// per-namespace layout, the one shared tree (0) otherwise.
fn tree_of(t: &TableHandle, layout: Layout) -> Nsid {
    match layout {
        Layout::PerNamespace => crate::key::ikey_nsid(&t.props.smallest),
        Layout::Shared => 0,
    }
}

/// A debt (a tree's level, or a namespace's runs, over its limit) that has waited this many
/// picks goes before any higher score: a busy tenant's debts, always the largest, would
/// otherwise keep a quiet tenant's runs waiting for as long as the busy one writes.
pub const AGING_PICKS: u64 = 8;

/// What the picker remembers between picks: where the last compaction of each (tree, level)
/// stopped, so that a tree's level is compacted table by table round-robin whatever the
/// other trees do, and since when each debt waits.
#[derive(Clone, Debug, Default)]
pub struct Cursors {
    stopped_at: BTreeMap<(Nsid, usize), Vec<u8>>,
    /// Per (tree, level) in debt: the pick at which it was first seen in debt.
    waiting_since: BTreeMap<(Nsid, usize), u64>,
    picks: u64,
}

/// The debt to pay next: the one that waited longest if it waited [`AGING_PICKS`], else
/// the largest score (`debts` are (score, level, tree), every score >= 1).
fn most_urgent(debts: &[(f64, usize, Nsid)], cursors: &mut Cursors) -> Option<(usize, Nsid)> {
    let picks = cursors.picks;
    cursors
        .waiting_since
        .retain(|key, _| debts.iter().any(|&(_, l, t)| (t, l) == *key));
    let mut oldest: Option<(u64, usize, Nsid)> = None;
    let mut largest: Option<(f64, usize, Nsid)> = None;
    for &(score, level, tree) in debts {
        let since = *cursors.waiting_since.entry((tree, level)).or_insert(picks);
        if oldest.is_none_or(|(s, ..)| since < s) {
            oldest = Some((since, level, tree));
        }
        if largest.is_none_or(|(s, ..)| score > s) {
            largest = Some((score, level, tree));
        }
    }
    let chosen = match oldest {
        Some((since, level, tree)) if picks - since >= AGING_PICKS => Some((level, tree)),
        _ => largest.map(|(_, level, tree)| (level, tree)),
    }?;
    cursors.waiting_since.remove(&(chosen.1, chosen.0));
    cursors.picks += 1;
    Some(chosen)
}

/// Per namespace: the split of L0 into runs, if L0 is over its trigger (with `drain`: if it
/// holds anything). It reads and writes L0's bytes only and touches no tree, so it may run
/// beside a [`pick`]ed compaction. When all of L0 belongs to one namespace (one tenant
/// writing, or the default namespace alone) and its runs would be merged at once anyway, L0
/// merges straight into that namespace's L1 instead: a run written only to be merged again
/// would be pure write amplification. That task touches the tree (`output_level` 1).
pub fn pick_split(version: &Version, opts: &Options, drain: bool) -> Option<CompactionTask> {
    let l0 = version.levels[0].len();
    let due = l0 >= opts.l0_compaction_trigger || (drain && l0 > 0);
    if opts.layout != Layout::PerNamespace || !due {
        return None;
    }
    let first = version.levels[0][0].only_namespace();
    let single = first.filter(|&ns| {
        version.levels[0]
            .iter()
            .all(|t| t.only_namespace() == Some(ns))
    });
    if let Some(ns) = single {
        let runs = version.runs_of(ns);
        if drain || runs.len() + 1 >= opts.run_compaction_trigger {
            let mut inputs = version.levels[0].clone();
            inputs.extend(runs.iter().cloned());
            return Some(CompactionTask {
                overlapping: l1_within(version, &inputs),
                level: 0,
                output_level: 1,
                inputs,
                moves: false,
            });
        }
    }
    Some(l0_task(version, opts.layout))
}

/// The L1 tables within the whole key range of `inputs`, so that no L1 table is left inside
/// the span of an output.
fn l1_within(version: &Version, inputs: &[Arc<TableHandle>]) -> Vec<Arc<TableHandle>> {
    let lo = inputs.iter().map(|t| t.smallest_user()).min();
    let hi = inputs.iter().map(|t| t.largest_user()).max();
    match (lo, hi) {
        (Some(lo), Some(hi)) => version.overlapping(1, lo, hi),
        _ => Vec::new(),
    }
}

/// The most urgent compaction of a tree, if a namespace's runs or any tree's level is over
/// its limit (in one shared tree, L0 too): the largest debt, unless one has waited
/// [`AGING_PICKS`] picks. With `drain`, runs count as over their limit as
/// soon as there is one: an idle engine moves everything into the namespaces' own trees.
pub fn pick(
    version: &Version,
    opts: &Options,
    cursors: &mut Cursors,
    drain: bool,
) -> Result<Option<CompactionTask>> {
    let per_ns = opts.layout == Layout::PerNamespace;
    if !per_ns && version.levels[0].len() >= opts.l0_compaction_trigger {
        return Ok(Some(l0_task(version, opts.layout)));
    }
    let mut debts: Vec<(f64, usize, Nsid)> = Vec::new();
    let mut consider = |score: f64, level: usize, tree: Nsid| {
        if score >= 1.0 {
            debts.push((score, level, tree));
        }
    };
    if per_ns {
        let mut i = 0;
        while i < version.runs.len() {
            let ns = crate::key::ikey_nsid(&version.runs[i].props.smallest);
            let n = version.runs_of(ns).len();
            let trigger = if drain {
                1
            } else {
                opts.run_compaction_trigger
            };
            consider(n as f64 / trigger as f64, RUNS, ns);
            i += n.max(1);
        }
    }
    for (score, level, tree) in level_scores(version, opts) {
        consider(score, level, tree);
    }
    let Some((level, tree)) = most_urgent(&debts, cursors) else {
        return Ok(None);
    };
    if level == RUNS {
        return Ok(Some(runs_task(version, tree)));
    }
    let tables: Vec<&Arc<TableHandle>> = version.levels[level]
        .iter()
        .filter(|t| tree_of(t, opts.layout) == tree)
        .collect();
    let cursor = cursors.stopped_at.entry((tree, level)).or_default();
    let start = tables.partition_point(|t| t.largest_user() <= cursor.as_slice());
    let Some(t) = tables
        .get(start)
        .or_else(|| tables.first())
        .map(|t| (*t).clone())
    else {
        return Ok(None);
    };
    *cursor = t.largest_user().to_vec();
    Ok(Some(task_for(version, level, vec![t])))
}

/// All of L0. Per namespace: split into runs. In one shared tree: merged with everything in
/// L1 within L0's key range (an output may span gaps between L0's keys).
fn l0_task(version: &Version, layout: Layout) -> CompactionTask {
    let inputs = version.levels[0].clone();
    if layout == Layout::Shared {
        return task_for(version, 0, inputs);
    }
    CompactionTask {
        level: 0,
        output_level: RUNS,
        inputs,
        overlapping: Vec::new(),
        moves: false,
    }
}

/// All runs of `ns` into its L1, with every L1 table within the runs' span: a merge writes
/// outputs that may span the gaps between runs, so an L1 table in a gap, which no run
/// overlaps, must be merged too. With no L1 table there and runs that do not overlap each
/// other, the runs alone (a move, where moves are allowed).
fn runs_task(version: &Version, ns: Nsid) -> CompactionTask {
    let inputs = version.runs_of(ns).to_vec();
    let overlapping = l1_within(version, &inputs);
    CompactionTask {
        level: RUNS,
        output_level: 1,
        inputs,
        overlapping,
        moves: false,
    }
}

fn task_for(version: &Version, level: usize, inputs: Vec<Arc<TableHandle>>) -> CompactionTask {
    let lo = inputs
        .iter()
        .map(|t| t.smallest_user())
        .min()
        .unwrap_or_default();
    let hi = inputs
        .iter()
        .map(|t| t.largest_user())
        .max()
        .unwrap_or_default();
    let overlapping = version.overlapping(level + 1, lo, hi);
    CompactionTask {
        level,
        output_level: level + 1,
        inputs,
        overlapping,
        moves: false,
    }
}

/// One task for a manual compaction of `[lo, hi]` (user parts) at `level` (0, [`RUNS`] or
/// a sorted level), if that level holds anything there.
pub fn range_tasks(
    version: &Version,
    layout: Layout,
    level: usize,
    lo: &[u8],
    hi: &[u8],
) -> Result<Option<CompactionTask>> {
    // L0 tables overlap each other: moving only some of them could put an older version of a
    // key below a newer one left behind, so L0 always goes down whole.
    if level == 0 {
        if version.levels[0].is_empty() {
            return Ok(None);
        }
        return Ok(Some(l0_task(version, layout)));
    }
    if level == RUNS {
        // Runs of the namespaces `[lo, hi]` reaches into, each whole.
        let ns = crate::key::ikey_nsid(lo);
        if version.runs_of(ns).is_empty() {
            return Ok(None);
        }
        return Ok(Some(runs_task(version, ns)));
    }
    let inputs = version.overlapping(level, lo, hi);
    if inputs.is_empty() {
        return Ok(None);
    }
    Ok(Some(task_for(version, level, inputs)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{push_trailer, user_part, Kind};
    use crate::stats::Counters;
    use crate::storage::MemStorage;
    use crate::table::{BlockCache, TableProps};
    use crate::version::{TableCtx, VersionEdit};

    fn props(id: u64, ns: Nsid, first: &[u8], last: &[u8]) -> TableProps {
        let ikey = |k: &[u8]| {
            let mut v = user_part(ns, k);
            push_trailer(&mut v, id, Kind::Put);
            v
        };
        TableProps {
            id,
            size: 1000,
            entries: 10,
            smallest: ikey(first),
            largest: ikey(last),
            min_seq: id,
            max_seq: id,
            aux_bytes: 0,
        }
    }

    /// Runs `[a, c]` and `[g, z]` with an L1 table `[d, f]` between them: no run overlaps it,
    /// but a merge of the runs writes outputs across the gap, so it must be merged too (a
    /// manual compaction, which never moves, once put an output over it).
    #[test]
    fn runs_merge_with_the_l1_tables_in_their_gaps() {
        let ctx = TableCtx::new(
            Arc::new(MemStorage::new()),
            Arc::new(BlockCache::new(0)),
            Arc::new(Counters::default()),
            16,
        );
        let edit = VersionEdit {
            added: vec![
                (RUNS, props(1, 7, b"a", b"c")),
                (RUNS, props(2, 7, b"g", b"z")),
                (1, props(3, 7, b"d", b"f")),
            ],
            ..VersionEdit::default()
        };
        let (version, _) = Version::new(4).apply(&edit, &ctx);
        let task = range_tasks(
            &version,
            Layout::PerNamespace,
            RUNS,
            &user_part(7, b""),
            &8u32.to_be_bytes(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(task.inputs.len(), 2);
        let merged: Vec<u64> = task.overlapping.iter().map(|t| t.id()).collect();
        assert_eq!(merged, vec![3]);
        assert!(!task.is_trivial_move());
    }

    /// Two namespaces' trees divide L1's budget (1,000) while they are written (have runs):
    /// 500 each, at least a table; a tree without runs keeps the whole budget.
    #[test]
    fn written_trees_divide_the_level1_budget() {
        let ctx = TableCtx::new(
            Arc::new(MemStorage::new()),
            Arc::new(BlockCache::new(0)),
            Arc::new(Counters::default()),
            16,
        );
        let table = |level, id, ns, size| {
            let mut t = props(id, ns, b"a", b"z");
            t.size = size;
            (level, t)
        };
        let one = VersionEdit {
            added: vec![table(1, 1, 7, 600), table(RUNS, 3, 7, 10)],
            ..VersionEdit::default()
        };
        let (alone, _) = Version::new(5).apply(&one, &ctx);
        let two = VersionEdit {
            added: vec![table(1, 2, 8, 600)],
            ..VersionEdit::default()
        };
        let (both, _) = alone.apply(&two, &ctx);
        let mut opts = Options {
            level1_bytes: 1_000,
            level_size_ratio: 4,
            num_levels: 5,
            target_table_bytes: 100,
            dynamic_level_bytes: false,
            ..Options::default()
        };
        let scores = |v: &Version, o: &Options| -> Vec<(f64, Nsid)> {
            level_scores(v, o)
                .into_iter()
                .map(|(s, _, t)| (s, t))
                .collect()
        };
        assert_eq!(scores(&alone, &opts), vec![(0.6, 7)]);
        // 7 is written, 8 is idle: 8 is never due because 7 is there.
        assert_eq!(scores(&both, &opts), vec![(1.2, 7), (0.6, 8)]);
        opts.target_table_bytes = 750;
        assert_eq!(scores(&both, &opts), vec![(0.8, 7), (0.6, 8)]);
        // One shared tree keeps the whole budget.
        opts.layout = Layout::Shared;
        assert_eq!(scores(&both, &opts), vec![(1.2, 0)]);
    }

    /// L1 800 bytes over L2 2,000 (ratio 4): within L1's fixed budget (1,000), but over its
    /// dynamic one (2,000 / 4); the deepest level keeps its fixed budget (4,000).
    #[test]
    fn dynamic_targets_come_from_the_deepest_level() {
        let ctx = TableCtx::new(
            Arc::new(MemStorage::new()),
            Arc::new(BlockCache::new(0)),
            Arc::new(Counters::default()),
            16,
        );
        let mut l1 = props(1, 7, b"a", b"m");
        l1.size = 800;
        let mut l2 = props(2, 7, b"a", b"z");
        l2.size = 2_000;
        let edit = VersionEdit {
            added: vec![(1, l1), (2, l2)],
            ..VersionEdit::default()
        };
        let (version, _) = Version::new(5).apply(&edit, &ctx);
        let mut opts = Options {
            level1_bytes: 1_000,
            level_size_ratio: 4,
            num_levels: 5,
            ..Options::default()
        };
        let scores = |o: &Options| -> Vec<(f64, usize)> {
            level_scores(&version, o)
                .into_iter()
                .map(|(s, l, _)| (s, l))
                .collect()
        };
        assert_eq!(scores(&opts), vec![(1.6, 1), (0.5, 2)]);
        opts.dynamic_level_bytes = false;
        assert_eq!(scores(&opts), vec![(0.8, 1), (0.5, 2)]);
    }
}
