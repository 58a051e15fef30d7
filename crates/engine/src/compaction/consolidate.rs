//! Consolidation: an idle namespace's whole tree (runs, L1 and deeper) merged into one sorted
//! run in its deepest non-empty level, so that each of its gets probes one filter.

use super::picker::{max_bytes_for_level, tree_bytes, CompactionTask};
use crate::key::{ikey_nsid, Nsid, SeqNo};
use crate::options::{Layout, Options};
use crate::version::{TableHandle, Version, RUNS};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A namespace without a write for `idle_settle_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct IdleNs {
    pub ns: Nsid,
    /// When it last wrote: names its idle period.
    pub period: u64,
    /// A seqno at or above that of its last write: an L0 table whose entries are all newer
    /// holds none of its entries.
    pub last_seq: SeqNo,
}

/// The consolidation due next, if any: of the first namespace in `idle` that was not
/// consolidated in this idle period yet (`done`: namespace -> the period it was consolidated
/// in), none of whose entries may still be in L0 (they would reach its tree after the
/// consolidation, as a run), whose tree has data in more than one place (levels and runs)
/// and holds less than [`Options::consolidation_bound`] bytes.
pub fn pick_consolidation(
    version: &Version,
    opts: &Options,
    idle: &[IdleNs],
    done: &BTreeMap<Nsid, u64>,
) -> Option<(IdleNs, CompactionTask)> {
    let bound = opts.consolidation_bound();
    if bound == 0 || opts.layout != Layout::PerNamespace {
        return None;
    }
    let in_l0 = |i: &IdleNs| {
        version.levels[0]
            .iter()
            .any(|t| t.props.min_seq <= i.last_seq && t.may_hold_namespace(i.ns))
    };
    let mut candidates = idle
        .iter()
        .filter(|i| done.get(&i.ns) != Some(&i.period) && !in_l0(i))
        .peekable();
    candidates.peek()?;
    let trees = tree_bytes(version, opts.layout);
    let empty = vec![0; version.num_levels()];
    for &idle in candidates {
        let ns = idle.ns;
        let bytes = trees.get(&ns).unwrap_or(&empty);
        let runs = version.runs_of(ns);
        let levels = bytes.iter().filter(|&&b| b > 0).count();
        let total: u64 = bytes.iter().sum::<u64>() + runs.iter().map(|t| t.props.size).sum::<u64>();
        if runs.len() + levels < 2 || total >= bound {
            continue;
        }
        return Some((idle, task(version, opts, ns, bytes, total)));
    }
    None
}

/// Every table of `ns` above its deepest non-empty level (runs first) merged with that
/// level's tables, into that level (L1 when it has only runs); or, when the `total` bytes
/// are over that level's budget, into the first level below whose budget holds them (the
/// level would spill into it at once otherwise, leaving two levels).
fn task(version: &Version, opts: &Options, ns: Nsid, bytes: &[u64], total: u64) -> CompactionTask {
    let runs = version.runs_of(ns);
    let deepest = (1..bytes.len()).rev().find(|&l| bytes[l] > 0).unwrap_or(1);
    let top = match runs.is_empty() {
        true => (1..deepest).find(|&l| bytes[l] > 0).unwrap_or(deepest),
        false => RUNS,
    };
    let last = version.num_levels() - 1;
    let mut output = deepest;
    // An idle tree has the whole L1 budget (`tree_level1_bytes`). A level at its budget is
    // in debt (score 1): the output would spill at once.
    while output < last && total >= max_bytes_for_level(opts, opts.level1_bytes, output) {
        output += 1;
    }
    let of = |level: usize| -> Vec<Arc<TableHandle>> {
        version.levels[level]
            .iter()
            .filter(|t| ikey_nsid(&t.props.smallest) == ns)
            .cloned()
            .collect()
    };
    let mut inputs = runs.to_vec();
    // Below the deepest level the output level is empty: the deepest is an input then.
    for level in (1..=deepest).filter(|&l| l != output) {
        inputs.extend(of(level));
    }
    CompactionTask {
        level: top,
        output_level: output,
        inputs,
        overlapping: of(output),
        moves: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{push_trailer, user_part, Kind};
    use crate::stats::Counters;
    use crate::storage::MemStorage;
    use crate::table::{BlockCache, TableProps};
    use crate::version::{TableCtx, VersionEdit};

    fn props(id: u64, ns: Nsid, range: (&[u8], &[u8]), seq: u64, size: u64) -> TableProps {
        let ikey = |k: &[u8]| {
            let mut v = user_part(ns, k);
            push_trailer(&mut v, seq, Kind::Put);
            v
        };
        TableProps {
            id,
            size,
            entries: 10,
            smallest: ikey(range.0),
            largest: ikey(range.1),
            min_seq: seq,
            max_seq: seq,
            aux_bytes: 0,
        }
    }

    fn version(added: Vec<(usize, TableProps)>) -> Version {
        let ctx = TableCtx::new(
            Arc::new(MemStorage::new()),
            Arc::new(BlockCache::new(0)),
            Arc::new(Counters::default()),
            16,
        );
        let edit = VersionEdit {
            added,
            ..VersionEdit::default()
        };
        Version::new(5).apply(&edit, &ctx).0
    }

    fn opts() -> Options {
        Options {
            level1_bytes: 1_000,
            level_size_ratio: 4,
            num_levels: 5,
            ..Options::default()
        }
    }

    /// Namespace 7 with tables in L1 and L2, idle since seqno 20.
    fn tree(l0: Option<TableProps>) -> Version {
        let mut added = vec![
            (1, props(1, 7, (b"a", b"m"), 15, 500)),
            (2, props(2, 7, (b"a", b"z"), 5, 3_000)),
            (2, props(3, 8, (b"a", b"z"), 5, 3_000)),
        ];
        added.extend(l0.map(|t| (0, t)));
        version(added)
    }

    const IDLE: IdleNs = IdleNs {
        ns: 7,
        period: 100,
        last_seq: 20,
    };

    #[test]
    fn an_idle_tree_of_two_levels_merges_into_its_deepest() {
        let v = tree(None);
        let (idle, task) = pick_consolidation(&v, &opts(), &[IDLE], &BTreeMap::new()).unwrap();
        assert_eq!(idle, IDLE);
        assert_eq!((task.level, task.output_level), (1, 2));
        let ids = |ts: &[Arc<TableHandle>]| ts.iter().map(|t| t.id()).collect::<Vec<_>>();
        assert_eq!(ids(&task.inputs), vec![1]);
        // Namespace 8's table is not touched.
        assert_eq!(ids(&task.overlapping), vec![2]);
        // Once per idle period.
        let done = BTreeMap::from([(7, 100)]);
        assert!(pick_consolidation(&v, &opts(), &[IDLE], &done).is_none());
        let next = IdleNs {
            period: 200,
            ..IDLE
        };
        assert!(pick_consolidation(&v, &opts(), &[next], &done).is_some());
        // Over the bound, or the bound 0: never.
        let mut small = opts();
        small.consolidate_below_bytes = Some(3_500);
        assert!(pick_consolidation(&v, &small, &[IDLE], &BTreeMap::new()).is_none());
        small.consolidate_below_bytes = Some(0);
        assert!(pick_consolidation(&v, &small, &[IDLE], &BTreeMap::new()).is_none());
    }

    #[test]
    fn it_waits_while_l0_may_hold_the_namespaces_last_writes() {
        let none = BTreeMap::new();
        let older = tree(Some(props(9, 7, (b"a", b"b"), 18, 100)));
        assert!(pick_consolidation(&older, &opts(), &[IDLE], &none).is_none());
        // Written after its last write: none of its entries.
        let newer = tree(Some(props(9, 7, (b"a", b"b"), 25, 100)));
        assert!(pick_consolidation(&newer, &opts(), &[IDLE], &none).is_some());
    }

    #[test]
    fn a_tree_over_its_deepest_budget_goes_one_level_down() {
        // 500 + 4,500 bytes: over L2's budget (4,000), within L3's (16,000).
        let v = version(vec![
            (1, props(1, 7, (b"a", b"m"), 15, 500)),
            (2, props(2, 7, (b"a", b"z"), 5, 4_500)),
        ]);
        let (_, task) = pick_consolidation(&v, &opts(), &[IDLE], &BTreeMap::new()).unwrap();
        assert_eq!(task.output_level, 3);
        assert_eq!(task.inputs.len(), 2);
        assert!(task.overlapping.is_empty());
    }

    #[test]
    fn a_tree_exactly_at_its_deepest_budget_goes_one_level_down() {
        // 500 + 3,500 bytes: L2's budget exactly, where the picker sees a debt (score 1)
        // and would spill the consolidated level into L3 (found by the simulator).
        let v = version(vec![
            (1, props(1, 7, (b"a", b"m"), 15, 500)),
            (2, props(2, 7, (b"a", b"z"), 5, 3_500)),
        ]);
        let (_, task) = pick_consolidation(&v, &opts(), &[IDLE], &BTreeMap::new()).unwrap();
        assert_eq!(task.output_level, 3);
    }
}
