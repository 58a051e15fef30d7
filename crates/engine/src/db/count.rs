//! A count the index answers alone, on two cores: a range that spans many table blocks is
//! cut at a block end near its middle, and the upper piece is walked on a reader thread
//! while the caller walks the lower one (docs/queries.md, Count).
//!
//! Each piece is the same walk at the same snapshot (one super version, one seqno), so the
//! two counts add up to the walk's in one piece. The caller takes the upper piece back if no
//! reader thread has started it by the time the lower one is done: a busy pool costs
//! nothing but the hand-off. A query under a work limit (the device's inline path) and a
//! storage with a timing model (its reads are not CPU) are never cut.

use super::records::{RecordSource, SnapshotRecords};
use crate::error::{Error, Result};
use crate::index::IndexKind;
use crate::key::Nsid;
use crate::query::{KeyRange, QueryStats, Records};
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
        let alone = self.limited() || Records::reads_ahead(self) || !two_cores();
        let cut = match alone {
            true => None,
            false => self.cut(index, range)?,
        };
        let Some(cut) = cut else {
            return self.count_live(index, kind, range, None, stats);
        };
        #[cfg(test)]
        tests::CUTS.with(|c| c.set(c.get() + 1));
        // Up to and including `cut`: the range ends at its successor.
        let mut lower_end = cut.clone();
        lower_end.push(0);
        let lower = KeyRange {
            start: range.start.clone(),
            end: Some(lower_end),
        };
        let claimed = Arc::new(AtomicBool::new(false));
        let (tx, rx) = crossbeam_channel::bounded(1);
        {
            let (mut helper, upper, cut, claimed) =
                (self.fork(), range.clone(), cut.clone(), claimed.clone());
            self.source().prefetcher().run(move || {
                if claimed.swap(true, Ordering::AcqRel) {
                    return;
                }
                let mut stats = QueryStats::default();
                let n = helper.count_live(index, kind, &upper, Some(&cut), &mut stats);
                let _ = tx.send((n, stats));
            });
        }
        let low = self.count_live(index, kind, &lower, None, stats);
        let high = match claimed.swap(true, Ordering::AcqRel) {
            false => match &low {
                Ok(_) => self.count_live(index, kind, range, Some(&cut), stats)?,
                Err(_) => 0,
            },
            true => {
                let (n, theirs) = rx
                    .recv()
                    .map_err(|_| Error::Background("count reader stopped".into()))?;
                stats.index_entries += theirs.index_entries;
                stats.secondary_search_ns += theirs.secondary_search_ns;
                n?
            }
        };
        Ok(low? + high)
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
#[path = "count_tests.rs"]
mod tests;
