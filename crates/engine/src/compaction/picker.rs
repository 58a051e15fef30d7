//! Chooses what to compact next.

use crate::options::Options;
use crate::version::{TableHandle, Version};
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

/// The most urgent compaction, if any level is over its limit. `cursor[level]` remembers
/// where the last compaction of that level stopped, so levels are compacted round-robin.
pub fn pick(version: &Version, opts: &Options, cursor: &mut [Vec<u8>]) -> Option<CompactionTask> {
    let last = version.num_levels() - 1;
    let mut best: Option<(f64, usize)> = None;
    for level in 0..last {
        let score = if level == 0 {
            version.levels[0].len() as f64 / opts.l0_compaction_trigger as f64
        } else {
            version.level_bytes(level) as f64 / max_bytes_for_level(opts, level) as f64
        };
        if score >= 1.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, level));
        }
    }
    let (_, level) = best?;
    if level == 0 {
        return Some(task_for(version, 0, version.levels[0].clone()));
    }
    let tables = &version.levels[level];
    let start = cursor
        .get(level)
        .map(|c| tables.partition_point(|t| t.largest_user() <= c.as_slice()))
        .unwrap_or(0);
    let t = tables.get(start).or_else(|| tables.first())?.clone();
    if let Some(c) = cursor.get_mut(level) {
        *c = t.largest_user().to_vec();
    }
    Some(task_for(version, level, vec![t]))
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
    level: usize,
    lo: &[u8],
    hi: &[u8],
) -> Option<CompactionTask> {
    // L0 tables overlap each other: moving only some of them could put an older version of a
    // key below a newer one left behind, so L0 always goes down whole.
    let inputs = if level == 0 {
        version.levels[0].clone()
    } else {
        version.overlapping(level, lo, hi)
    };
    if inputs.is_empty() {
        return None;
    }
    Some(task_for(version, level, inputs))
}
