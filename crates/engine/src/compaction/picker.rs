//! Chooses what to compact next.

use crate::error::Result;
use crate::key::Nsid;
use crate::options::{Layout, Options};
use crate::version::{TableHandle, Version};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A decision: merge `inputs` (from `level`) with `overlapping` (from `level + 1`).
pub struct CompactionTask {
    pub level: usize,
    pub inputs: Vec<Arc<TableHandle>>,
    pub overlapping: Vec<Arc<TableHandle>>,
}

impl CompactionTask {
    pub fn output_level(&self) -> usize {
        self.level + 1
    }

    /// A single table with nothing to merge with moves down without being rewritten.
    pub fn is_trivial_move(&self) -> bool {
        self.level > 0 && self.inputs.len() == 1 && self.overlapping.is_empty()
    }

    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .chain(&self.overlapping)
            .map(|t| t.props.size)
            .sum()
    }
}

pub fn max_bytes_for_level(opts: &Options, level: usize) -> u64 {
    let mut b = opts.level1_bytes;
    for _ in 1..level {
        b = b.saturating_mul(opts.level_size_ratio);
    }
    b
}

/// Which tree a table of level 1 or deeper belongs to: its namespace under the
/// per-namespace layout, the one shared tree (0) otherwise.
fn tree_of(t: &TableHandle, layout: Layout) -> Nsid {
    match layout {
        Layout::PerNamespace => crate::key::ikey_nsid(&t.props.smallest),
        Layout::Shared => 0,
    }
}

/// The most urgent compaction, if L0 or any tree's level is over its limit. Every tree has
/// the full level sizes: per namespace, each tenant's tree is as shallow as its own data makes
/// it. `cursor[level]` remembers where the last compaction of that level stopped, so a level's
/// tables are compacted round-robin.
pub fn pick(
    version: &Version,
    opts: &Options,
    cursor: &mut [Vec<u8>],
) -> Result<Option<CompactionTask>> {
    let last = version.num_levels() - 1;
    let mut best: Option<(f64, usize, Nsid)> = None;
    let l0 = version.levels[0].len() as f64 / opts.l0_compaction_trigger as f64;
    if l0 >= 1.0 {
        best = Some((l0, 0, 0));
    }
    for level in 1..last {
        let mut bytes: BTreeMap<Nsid, u64> = BTreeMap::new();
        for t in &version.levels[level] {
            *bytes.entry(tree_of(t, opts.layout)).or_default() += t.props.size;
        }
        let limit = max_bytes_for_level(opts, level) as f64;
        for (tree, b) in bytes {
            let score = b as f64 / limit;
            if score >= 1.0 && best.is_none_or(|(s, ..)| score > s) {
                best = Some((score, level, tree));
            }
        }
    }
    let Some((_, level, tree)) = best else {
        return Ok(None);
    };
    if level == 0 {
        return l0_task(version, opts.layout).map(Some);
    }
    let tables: Vec<&Arc<TableHandle>> = version.levels[level]
        .iter()
        .filter(|t| tree_of(t, opts.layout) == tree)
        .collect();
    let start = cursor
        .get(level)
        .map(|c| tables.partition_point(|t| t.largest_user() <= c.as_slice()))
        .unwrap_or(0);
    let Some(t) = tables
        .get(start)
        .or_else(|| tables.first())
        .map(|t| (*t).clone())
    else {
        return Ok(None);
    };
    if let Some(c) = cursor.get_mut(level) {
        *c = t.largest_user().to_vec();
    }
    Ok(Some(task_for(version, level, vec![t])))
}

/// All of L0 into L1. Per namespace, the L1 tables to merge with are found from the L0
/// tables' NSTables, so a namespace absent from L0 is not rewritten even when its keys sit
/// between two namespaces that are there (outputs never span namespaces, so they cannot
/// cover the untouched tables in between). In one shared tree an output may span the gap,
/// so everything in L0's whole key range is merged.
fn l0_task(version: &Version, layout: Layout) -> Result<CompactionTask> {
    let inputs = version.levels[0].clone();
    if layout == Layout::Shared {
        return Ok(task_for(version, 0, inputs));
    }
    // Per namespace, one contiguous range over all of L0: the union of the tables' own
    // ranges may have gaps, and an output table could span a gap over an untouched table.
    let mut ranges: BTreeMap<Nsid, (Vec<u8>, Vec<u8>)> = BTreeMap::new();
    for t in &inputs {
        for r in t.reader()?.nstable() {
            let e = ranges
                .entry(r.nsid)
                .or_insert_with(|| (r.min_key.clone(), r.max_key.clone()));
            if r.min_key < e.0 {
                e.0 = r.min_key.clone();
            }
            if r.max_key > e.1 {
                e.1 = r.max_key.clone();
            }
        }
    }
    let mut overlapping: Vec<Arc<TableHandle>> = Vec::new();
    for (ns, (lo, hi)) in &ranges {
        let lo = crate::key::user_part(*ns, lo);
        let hi = crate::key::user_part(*ns, hi);
        overlapping.extend(version.overlapping(1, &lo, &hi));
    }
    overlapping.sort_by(|a, b| crate::key::cmp_ikey(&a.props.smallest, &b.props.smallest));
    Ok(CompactionTask {
        level: 0,
        inputs,
        overlapping,
    })
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
        inputs,
        overlapping,
    }
}

/// One task per level from `level` for a manual compaction of `[lo, hi]` (user parts): all of
/// that level's overlapping tables go one level down.
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
        return l0_task(version, layout).map(Some);
    }
    let inputs = version.overlapping(level, lo, hi);
    if inputs.is_empty() {
        return Ok(None);
    }
    Ok(Some(task_for(version, level, inputs)))
}
