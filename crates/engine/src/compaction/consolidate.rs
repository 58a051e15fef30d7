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
    while output < last && total > max_bytes_for_level(opts, output) {
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
