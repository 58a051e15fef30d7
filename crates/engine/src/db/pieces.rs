//! A walk over one index range on two cores: a range that spans many table blocks is cut at
//! a block end near its middle, and the upper piece is walked on a reader thread while the
//! caller walks the lower one (docs/queries.md, Count and Aggregates). Counts, aggregates and
//! top-K over the filter's plan walk this way; their pieces add up ([`crate::query::Tally`],
//! [`crate::query::Best`]).
//!
//! Each piece is the same walk at the same snapshot (one super version, one seqno), so the
//! pieces' answers together are the walk's in one piece. The caller takes the upper piece back
//! if no reader thread has started it by the time the lower one is done: a busy pool costs
//! nothing but the hand-off. A query under a work limit (the device's inline path) and a
//! storage with a timing model (its reads are not CPU) are never cut.

use super::records::{RecordSource, SnapshotRecords};
use crate::error::{Error, Result};
use crate::index::IndexKind;
use crate::key::Nsid;
use crate::query::{Access, KeyRange, Plan, QueryStats, Records};
use crate::table::Ends;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Whether the process may run on more than one core.
fn two_cores() -> bool {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get())) > 1
}

impl<S: RecordSource> SnapshotRecords<S> {
    /// [`crate::query::Records::count_entries`], in two pieces where it pays.
    pub(super) fn count_in_pieces(
        &mut self,
        index: Nsid,
        kind: IndexKind,
        range: &KeyRange,
        stats: &mut QueryStats,
    ) -> Result<u64> {
        let Some(pieces) = self.halves(index, range)? else {
            return self.count_live(index, kind, range, None, stats);
        };
        let (low, high) = self.walk_both(pieces, stats, move |r, piece, stats| {
            r.count_live(index, kind, piece, None, stats)
        })?;
        Ok(low + high)
    }

    /// `plan` in two pieces (each reading one half of its index range), where it pays: a
    /// plan through one range of an index that spans many table blocks.
    pub(super) fn split_plan(&self, plan: &Plan) -> Result<Option<(Plan, Plan)>> {
        let Access::Index { id, ranges, .. } = &plan.access else {
            return Ok(None);
        };
        let [range] = ranges.as_slice() else {
            return Ok(None);
        };
        let Some((low, high)) = self.halves(*id, range)? else {
            return Ok(None);
        };
        let with = |piece: KeyRange| {
            let mut p = plan.clone();
            if let Access::Index { ranges, .. } = &mut p.access {
                *ranges = vec![piece];
            }
            p
        };
        Ok(Some((with(low), with(high))))
    }

    /// `walk` over both `pieces`: the upper one on a reader thread (a fork of these records,
    /// its statistics added to `stats`) while this thread walks the lower one, or both here
    /// if no reader thread took it up in the meantime.
    pub(super) fn walk_both<P, T, F>(
        &mut self,
        (low, high): (P, P),
        stats: &mut QueryStats,
        walk: F,
    ) -> Result<(T, T)>
    where
        P: Send + Sync + 'static,
        T: Send + 'static,
        F: Fn(&mut SnapshotRecords<S>, &P, &mut QueryStats) -> Result<T> + Clone + Send + 'static,
    {
        #[cfg(test)]
        tests::CUTS.with(|c| c.set(c.get() + 1));
        let high = Arc::new(high);
        let claimed = Arc::new(AtomicBool::new(false));
        let (tx, rx) = crossbeam_channel::bounded(1);
        {
            let (mut helper, walk, high, claimed) =
                (self.fork(), walk.clone(), high.clone(), claimed.clone());
            self.source().prefetcher().run(move || {
                if claimed.swap(true, Ordering::AcqRel) {
                    return;
                }
                let mut stats = QueryStats::default();
                let r = walk(&mut helper, &high, &mut stats);
                let _ = tx.send((r, stats));
            });
        }
        let low = walk(self, &low, stats);
        // Taken back here, or left to the reader thread that started it.
        let theirs = claimed.swap(true, Ordering::AcqRel);
        let low = low?;
        let high = match theirs {
            false => walk(self, &high, stats)?,
            true => {
                let (r, theirs) = rx
                    .recv()
                    .map_err(|_| Error::Background("query reader stopped".into()))?;
                stats.absorb(&theirs);
                r?
            }
        };
        Ok((low, high))
    }

    /// `range` cut in two at a block end near its middle, where it pays: the query is under
    /// no work limit, reads are CPU (no timing model), two cores run, and the range spans
    /// enough blocks.
    fn halves(&self, index: Nsid, range: &KeyRange) -> Result<Option<(KeyRange, KeyRange)>> {
        if self.limited() || Records::reads_ahead(self) || !two_cores() {
            return Ok(None);
        }
        let Some(mut at) = self.cut(index, range)? else {
            return Ok(None);
        };
        // Up to and including the cut in the lower piece: the upper starts at its successor.
        at.push(0);
        let low = KeyRange {
            start: range.start.clone(),
            end: Some(at.clone()),
        };
        let high = KeyRange {
            start: at,
            end: range.end.clone(),
        };
        Ok(Some((low, high)))
    }

    /// A block end near the middle of `range` in the tables of index `index` (their blocks
    /// in the range pooled in key order), if the range spans at least
    /// `Options::count_split_blocks` (32 by default: below that the walk takes well under
    /// 0.1 ms, and the hand-off to another thread, a wake-up of ~10-50 us here, eats the gain).
    fn cut(&self, index: Nsid, range: &KeyRange) -> Result<Option<Vec<u8>>> {
        let min = self.source().count_split_blocks();
        if min == 0 {
            return Ok(None);
        }
        let v = self.version();
        let mut ends = Vec::new();
        for t in v.levels.iter().flatten().chain(v.runs_of(index)) {
            if !t.may_hold_namespace(index) {
                continue;
            }
            let reader = t.reader()?;
            let found = reader.block_ends_within(
                index,
                &range.start,
                range.end.as_deref(),
                Ends::All,
                self.counters(),
            )?;
            ends.extend(found);
        }
        if ends.len() < min {
            return Ok(None);
        }
        ends.sort_unstable();
        Ok(Some(ends.swap_remove(ends.len() / 2)))
    }
}

#[cfg(test)]
#[path = "pieces_tests.rs"]
mod tests;
