//! Consolidation: an idle namespace's whole tree (runs, L1 and deeper) merged into one sorted
//! run in its deepest non-empty level, so that each of its gets probes one filter.

use super::picker::{tree_bytes, CompactionTask};
use crate::key::{ikey_nsid, Nsid};
use crate::options::{Layout, Options};
use crate::version::{TableHandle, Version, RUNS};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The consolidation due next, if any: of the first namespace in `idle` (idle namespaces and
/// the last-write stamp of their idle period) that was not consolidated in this idle period
/// yet (`done`: namespace -> stamp of the period it was consolidated in), whose tree has data
/// in more than one place (levels and runs) and holds less than
/// [`Options::consolidation_bound`] bytes. Returns the namespace, the stamp and the task.
pub fn pick_consolidation(
    version: &Version,
    opts: &Options,
    idle: &[(Nsid, u64)],
    done: &BTreeMap<Nsid, u64>,
) -> Option<(Nsid, u64, CompactionTask)> {
    let bound = opts.consolidation_bound();
    if bound == 0 || opts.layout != Layout::PerNamespace {
        return None;
    }
    let mut candidates = idle
        .iter()
        .filter(|(ns, stamp)| done.get(ns) != Some(stamp))
        .peekable();
    candidates.peek()?;
    let trees = tree_bytes(version, opts.layout);
    let empty = vec![0; version.num_levels()];
    for &(ns, stamp) in candidates {
        let bytes = trees.get(&ns).unwrap_or(&empty);
        let runs = version.runs_of(ns);
        let levels = bytes.iter().filter(|&&b| b > 0).count();
        let total: u64 = bytes.iter().sum::<u64>() + runs.iter().map(|t| t.props.size).sum::<u64>();
        if runs.len() + levels < 2 || total >= bound {
            continue;
        }
        return Some((ns, stamp, task(version, ns, bytes)));
    }
    None
}

/// Every table of `ns` above its deepest non-empty level (runs first) merged with that
/// level's tables, into that level (L1 when it has only runs).
fn task(version: &Version, ns: Nsid, bytes: &[u64]) -> CompactionTask {
    let runs = version.runs_of(ns);
    let deepest = (1..bytes.len()).rev().find(|&l| bytes[l] > 0).unwrap_or(1);
    let of = |level: usize| -> Vec<Arc<TableHandle>> {
        version.levels[level]
            .iter()
            .filter(|t| ikey_nsid(&t.props.smallest) == ns)
            .cloned()
            .collect()
    };
    let mut inputs = runs.to_vec();
    for level in 1..deepest {
        inputs.extend(of(level));
    }
    let top = match runs.is_empty() {
        true => (1..deepest).find(|&l| bytes[l] > 0).unwrap_or(deepest),
        false => RUNS,
    };
    CompactionTask {
        level: top,
        output_level: deepest,
        inputs,
        overlapping: of(deepest),
        moves: false,
    }
}
