//! A count the index answers alone, on two cores: a range that spans many table blocks is
//! cut at a block end near its middle, and the upper piece is walked on a reader thread
//! while the caller walks the lower one (docs/queries.md, Count).
//!
//! Each piece is the same walk at the same snapshot (one super version, one seqno), so the
//! two counts add up to the walk's in one piece. The caller takes the upper piece back if no
//! reader thread has started it by the time the lower one is done: a busy pool costs
//! nothing but the hand-off. A query under a work limit (the device's inline path) and a
//! storage with a timing model (its reads are not CPU) are never cut.

use super::records::SnapshotRecords;
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

impl SnapshotRecords {
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
            self.inner().prefetcher().run(move || {
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
        let min = self.inner().opts.count_split_blocks;
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
mod tests {
    use crate::storage::{MemStorage, StorageRef};
    use crate::{Aggregate, Db, Filter, IndexKind, Options, Readable};
    use serde_json::json;
    use std::cell::Cell;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    thread_local! {
        /// Counts cut on this thread.
        pub(super) static CUTS: Cell<u64> = const { Cell::new(0) };
    }

    /// A filter and which values of `a` meet it.
    type Case = (serde_json::Value, fn(i64) -> bool);

    fn expected(model: &BTreeMap<u32, i64>, keep: impl Fn(i64) -> bool) -> u64 {
        model.values().filter(|a| keep(**a)).count() as u64
    }

    #[test]
    fn counts_cut_in_two_equal_the_records_at_every_snapshot() {
        let o = Options {
            block_size: 256,
            memtable_bytes: 64 << 10,
            target_table_bytes: 16 << 10,
            ..Options::default()
        };
        let storage: StorageRef = Arc::new(MemStorage::new());
        let db = Db::builder(o).open_storage(storage).unwrap();
        for kind in [IndexKind::Classic, IndexKind::Vas] {
            let ns = db.create_namespace(&format!("c-{kind:?}")).unwrap();
            ns.create_index("a", kind).unwrap();
            let mut model = BTreeMap::new();
            let put = |model: &mut BTreeMap<u32, i64>, i: u32, a: i64| {
                let v = json!({"a": a, "pad": "p".repeat((i % 17) as usize)});
                ns.put(
                    format!("k{i:06}").as_bytes(),
                    &serde_json::to_vec(&v).unwrap(),
                )
                .unwrap();
                model.insert(i, a);
            };
            for i in 0..6_000u32 {
                put(&mut model, i, i64::from(i % 4));
            }
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
            let before = ns.snapshot();
            let old = model.clone();
            // Newer versions in the memtable: values moved, records deleted.
            for i in (0..6_000u32).step_by(7) {
                put(&mut model, i, 9 - i64::from(i % 4));
            }
            for i in (3..6_000u32).step_by(11) {
                ns.delete(format!("k{i:06}").as_bytes()).unwrap();
                model.remove(&i);
            }
            let filters: [Case; 4] = [
                (json!({"a": 1}), |a| a == 1),
                (json!({"a": {"$gte": 1}}), |a| a >= 1),
                (json!({"a": {"$lt": 3}}), |a| a < 3),
                (json!({"a": {"$in": [0, 2, 7]}}), |a| {
                    a == 0 || a == 2 || a == 7
                }),
            ];
            let cuts = CUTS.with(Cell::get);
            for (f, keep) in filters {
                let filter = Filter::parse(&f).unwrap();
                let now = ns.aggregate(&filter, &Aggregate::Count).unwrap().value;
                assert_eq!(now, json!(expected(&model, keep)), "{f} now ({kind:?})");
                let then = before.aggregate(&filter, &Aggregate::Count).unwrap().value;
                assert_eq!(
                    then,
                    json!(expected(&old, keep)),
                    "{f} at the snapshot ({kind:?})"
                );
            }
            assert!(CUTS.with(Cell::get) > cuts, "no count was cut ({kind:?})");
        }
    }
}
