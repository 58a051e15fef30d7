//! Queries on a snapshot of a namespace: planning and running them for the query calls of
//! [`Readable`](super::readable::Readable) (their reads: `records.rs`).

use super::background_state::Background;
use super::index_set::{IndexSet, QueryIndexes};
use super::namespace_set::NsEntry;
use super::records::{RecordSource, SnapshotRecords};
use crate::error::{Error, Result};
use crate::index::{AttrPath, Scalar};
use crate::key::{Nsid, SeqNo};
use crate::query::{
    self, Access, Aggregate, Continuation, Filter, Found, IndexChoice, PageRequest, Plan,
    QueryResult, QueryStats, Ranked, Records, TopSpec, DEFAULT_PAGE_BYTES,
};
use bytes::Bytes;
use parking_lot::RwLock;
use serde_json::Value;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Index entries an estimate counts at most: past this, an index is as good as unselective.
const ESTIMATE_CAP: usize = 256;

/// Records a ranked top-K walk may read at least before it gives up for the plan of a
/// filter on another indexed attribute (see `Queries::rank_index`).
const RANK_BUDGET_MIN: u64 = 1024;
/// Records a ranked top-K walk beside another index's plan reads first, before that plan's
/// entries are counted: most top-K find their records within it, and skip the count.
const RANK_FIRST_TRY: u64 = 256;
/// Records a ranked top-K walk may read before it gives up for a scan.
const RANK_BUDGET_SCAN: u64 = 65_536;

/// How many records a top-K's ranked walk may read (see `Queries::rank_index`).
enum RankBudget {
    /// No bound: no record is read, or the filter's plan reads the same index.
    Unbounded,
    /// At most this many.
    Records(u64),
    /// Beside a plan through another index: at most `cap`, counted lazily.
    BesideIndex { cap: u64 },
}

/// What a find asks for besides its filter.
#[derive(Clone, Debug)]
pub struct FindOptions {
    /// Attributes to return instead of whole values (as a JSON object keyed by path).
    pub projection: Option<Vec<String>>,
    /// Records to return at most, over all pages.
    pub limit: Option<u64>,
    /// Bytes of keys and values a page holds at most (at least one record per page).
    pub page_bytes: usize,
    /// Resume where the page before ended.
    pub continuation: Option<Vec<u8>>,
    /// Return pks only, each with an empty value (default false; not with a projection).
    /// Where the plan reads an index and every condition of the filter is on that index's
    /// attribute (`{"a": 5}`, `{"a": {"$gte": 1, "$lt": 9}}`, `{"a": {"$in": [...]}}`,
    /// `{"a": {"$prefix": "x"}}`, or several of these on `a`), the pks come from the index
    /// entries alone: no record is looked up or read. Any other filter (a condition on
    /// another attribute, or no index to read) still reads each record to check it.
    pub keys_only: bool,
}

/// What a top-K query ranks by (AnalyticOp).
#[derive(Clone, Debug, Default)]
pub struct TopOptions {
    /// The attribute ranked by; records without a scalar there are left out.
    pub by: String,
    /// Largest first (else smallest first).
    pub desc: bool,
    /// Records returned at most.
    pub k: usize,
    /// Attributes returned with each record.
    pub projection: Option<Vec<String>>,
}

impl Default for FindOptions {
    fn default() -> Self {
        FindOptions {
            projection: None,
            limit: None,
            page_bytes: DEFAULT_PAGE_BYTES,
            continuation: None,
            keys_only: false,
        }
    }
}

fn parse_paths(paths: &[String]) -> Result<Vec<AttrPath>> {
    paths
        .iter()
        .map(|p| AttrPath::parse(p).map_err(Error::InvalidQuery))
        .collect()
}

/// The parts a query touches: whether the database is open, the live indexes, and what its
/// reads take (`source`).
pub(super) struct Queries<'a, S> {
    pub(super) closed: &'a AtomicBool,
    pub(super) bg: &'a Background,
    pub(super) indexes: &'a RwLock<Arc<IndexSet>>,
    pub(super) source: &'a S,
    /// Run between a query's load of its super version and its second read of the index
    /// set (a test's pause point; nothing otherwise).
    pub(super) after_super_version: fn(&S),
}

impl<S: RecordSource> Queries<'_, S> {
    fn check_open(&self) -> Result<()> {
        self.bg.check_open(self.closed)
    }

    /// A query's reads of `ns` at `seq` (one super version) and the index set read on both
    /// sides of it ([`QueryIndexes`]).
    fn reads(&self, ns: Nsid, seq: SeqNo, work: Option<u64>) -> (SnapshotRecords<S>, QueryIndexes) {
        let before = self.indexes.read().clone();
        let r = SnapshotRecords::new(self.source, ns, seq, work);
        (self.after_super_version)(self.source);
        let after = self.indexes.read().clone();
        (r, QueryIndexes { before, after })
    }

    /// The indexes of `ns` a query at snapshot `seq` can read, as the planner takes them.
    fn index_choices(&self, ix: &QueryIndexes, ns: Nsid, seq: SeqNo) -> Vec<IndexChoice> {
        ix.usable(ns, seq)
            .map(|i| IndexChoice {
                id: i.def.id,
                attr: i.attr.clone(),
                kind: i.def.kind,
            })
            .collect()
    }

    fn plan_query(
        &self,
        r: &mut SnapshotRecords<S>,
        ix: &QueryIndexes,
        filter: &Filter,
        stats: &mut QueryStats,
    ) -> Result<Plan> {
        let choices = self.index_choices(ix, r.ns, r.seq);
        // Live entries, as the data decides them: counting superseded ones too made the plan,
        // and what a query under a work limit is charged, depend on the tree's shape.
        let plan = query::plan(filter, &choices, &mut |id, ranges| {
            let kind = choices
                .iter()
                .find(|c| c.id == id)
                .map_or(crate::index::IndexKind::Classic, |c| c.kind);
            let mut n = 0;
            for range in ranges {
                r.for_each_live_entry(id, kind, range, None, stats, &mut |_, _, _, _| {
                    n += 1;
                    Ok(n < ESTIMATE_CAP)
                })?;
                if n >= ESTIMATE_CAP {
                    break;
                }
            }
            Ok(n as u64)
        })?;
        // The estimate's reads are the query's too, but not entries it returns.
        stats.index_entries = 0;
        stats.plan = plan.describe();
        Ok(plan)
    }

    pub(super) fn find(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        work: Option<u64>,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<QueryResult<Vec<Found>>> {
        self.check_open()?;
        e.check_live()?;
        let projection = opts.projection.as_deref().map(parse_paths).transpose()?;
        let projection = projection.as_deref();
        if opts.keys_only && projection.is_some() {
            return Err(Error::InvalidQuery(
                "a keys-only find returns no values: it takes no projection".into(),
            ));
        }
        let (mut r, ix) = self.reads(e.id, seq, work);
        let mut stats = QueryStats::default();
        let resume = opts
            .continuation
            .as_deref()
            .map(Continuation::decode)
            .transpose()?;
        let (plan, remaining, after) = match resume {
            None => (
                self.plan_query(&mut r, &ix, filter, &mut stats)?,
                opts.limit,
                None,
            ),
            Some(c) => {
                if c.ns != e.id {
                    return Err(Error::InvalidQuery(format!(
                        "the continuation belongs to namespace {}, not {}",
                        c.ns, e.id
                    )));
                }
                if c.fingerprint != query::fingerprint(filter, projection) {
                    return Err(Error::InvalidQuery(
                        "the continuation belongs to another filter or projection".into(),
                    ));
                }
                let access = match c.index {
                    None => Access::Scan,
                    Some(id) => {
                        let choice = self
                            .index_choices(&ix, e.id, seq)
                            .into_iter()
                            .find(|i| i.id == id)
                            .ok_or_else(|| {
                                Error::UnknownIndex(
                                    "the index this continuation reads was dropped".into(),
                                )
                            })?;
                        let ranges =
                            query::index_ranges(filter, &choice.attr).ok_or_else(|| {
                                Error::InvalidQuery(
                                    "the continuation does not fit the filter".into(),
                                )
                            })?;
                        Access::Index {
                            id,
                            attr: choice.attr,
                            kind: choice.kind,
                            ranges,
                        }
                    }
                };
                let plan = Plan {
                    access,
                    estimate: None,
                };
                stats.plan = plan.describe();
                (plan, c.remaining, Some(c.position))
            }
        };
        let req = PageRequest {
            ns: e.id,
            filter,
            projection,
            keys_only: opts.keys_only,
            remaining,
            page_bytes: opts.page_bytes.max(1),
            after: after.as_deref(),
        };
        let mut page = query::find_page(&mut r, &plan, &req, stats)?;
        r.finish(&mut page.stats);
        Ok(page)
    }

    pub(super) fn get_by_secondary(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        work: Option<u64>,
        attr: &str,
        value: &Value,
        limit: Option<usize>,
    ) -> Result<QueryResult<Vec<Bytes>>> {
        self.check_open()?;
        let limit = limit.unwrap_or(usize::MAX);
        e.check_live()?;
        let path = AttrPath::parse(attr).map_err(Error::InvalidQuery)?;
        let sk = Scalar::from_json(value).ok_or_else(|| {
            Error::InvalidQuery("a secondary key is a JSON scalar, not an array or object".into())
        })?;
        let (mut r, ix) = self.reads(e.id, seq, work);
        let idx = ix
            .after
            .of(e.id)
            .iter()
            .find(|i| i.attr == path)
            .ok_or_else(|| Error::UnknownIndex(attr.to_string()))?;
        let ranges = crate::query::Condition::Eq(sk.clone()).key_ranges();
        if !ix.usable(e.id, seq).any(|i| i.def.id == idx.def.id) {
            // Being built, or built after this snapshot: the records say it themselves.
            let filter = Filter {
                conditions: vec![(path, crate::query::Condition::Eq(sk))],
            };
            let plan = Plan {
                access: Access::Scan,
                estimate: None,
            };
            let mut stats = QueryStats {
                plan: "scan (the index is younger than the snapshot or still being built)".into(),
                ..QueryStats::default()
            };
            let mut pks = Vec::new();
            if limit > 0 {
                query::for_each_match(
                    &mut r,
                    &filter,
                    &plan,
                    None,
                    Some(limit as u64),
                    query::Wants::default(),
                    &mut stats,
                    &mut |m| {
                        pks.push(Bytes::copy_from_slice(m.pk));
                        Ok(pks.len() < limit)
                    },
                )?;
            }
            stats.bytes_returned = pks.iter().map(|p| p.len() as u64).sum();
            r.finish(&mut stats);
            return Ok(QueryResult::complete(pks, stats));
        }
        let mut stats = QueryStats {
            plan: format!("{} index on {path}", idx.def.kind),
            ..QueryStats::default()
        };
        // Live entries are exact (stale ones are hidden by tombstones or caught in the
        // memtables): the pks need no read of their records.
        let mut pks = Vec::new();
        query::for_each_entry(
            &mut r,
            idx.def.id,
            idx.def.kind,
            &ranges,
            None,
            Some(limit as u64),
            false,
            &mut stats,
            &mut |_, e, _| {
                if pks.len() < limit {
                    pks.push(Bytes::copy_from_slice(e.pk));
                }
                Ok(pks.len() < limit)
            },
        )?;
        stats.bytes_returned = pks.iter().map(|p| p.len() as u64).sum();
        r.finish(&mut stats);
        Ok(QueryResult::complete(pks, stats))
    }

    pub(super) fn top(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        work: Option<u64>,
        filter: &Filter,
        opts: &TopOptions,
    ) -> Result<QueryResult<Vec<Ranked>>> {
        self.check_open()?;
        e.check_live()?;
        let spec = TopSpec {
            by: AttrPath::parse(&opts.by).map_err(Error::InvalidQuery)?,
            desc: opts.desc,
            k: opts.k,
            projection: opts.projection.as_deref().map(parse_paths).transpose()?,
        };
        let (mut r, ix) = self.reads(e.id, seq, work);
        let mut stats = QueryStats::default();
        let plan = self.plan_query(&mut r, &ix, filter, &mut stats)?;
        if let Some((index, budget)) = self.rank_index(&ix, filter, &plan, &spec, r.ns, r.seq) {
            let ranked = match budget {
                RankBudget::Unbounded => {
                    query::top_k_ranked(&mut r, filter, &index, &spec, None, &mut stats)?
                }
                RankBudget::Records(n) => {
                    query::top_k_ranked(&mut r, filter, &index, &spec, Some(n), &mut stats)?
                }
                RankBudget::BesideIndex { cap } => {
                    self.rank_beside_index(&mut r, filter, &plan, &index, &spec, cap, &mut stats)?
                }
            };
            let walk = format!("ranked walk of the index on {}", spec.by);
            match ranked {
                Some(out) => {
                    stats.plan = walk;
                    r.finish(&mut stats);
                    return Ok(QueryResult::complete(out, stats));
                }
                None => stats.plan = format!("{} ({walk} gave up)", stats.plan),
            }
        }
        let out = match r.split_plan(&plan)? {
            Some(pieces) => {
                let (f, sp) = (filter.clone(), spec.clone());
                let (mut best, theirs) = r.walk_both(pieces, &mut stats, move |r, p, stats| {
                    query::Best::of(r, &f, p, &sp, stats)
                })?;
                best.merge(theirs);
                best.finish(&mut stats)
            }
            None => query::top_k(&mut r, filter, &plan, &spec, &mut stats)?,
        };
        r.finish(&mut stats);
        Ok(QueryResult::complete(out, stats))
    }

    /// Whether a top-K should walk the index on the attribute it ranks by from the end the
    /// ranking starts at, and how many records it may read that way before the filter's plan
    /// is cheaper: no bound where the index decides the filter (no record is read) or the plan
    /// reads that index anyway; through another index, up to [`RANK_BUDGET_MIN`] or `32 k`
    /// ([`Queries::rank_beside_index`]); for a scan, [`RANK_BUDGET_SCAN`].
    fn rank_index(
        &self,
        ix: &QueryIndexes,
        filter: &Filter,
        plan: &Plan,
        spec: &TopSpec,
        ns: Nsid,
        seq: SeqNo,
    ) -> Option<(query::RankIndex, RankBudget)> {
        let choice = self
            .index_choices(ix, ns, seq)
            .into_iter()
            .find(|c| c.attr == spec.by)?;
        let ranges = query::index_ranges(filter, &spec.by).unwrap_or_else(|| {
            vec![query::KeyRange {
                start: Vec::new(),
                end: None,
            }]
        });
        let wants = query::Wants {
            record: spec.projection.is_some(),
            attrs: &[&spec.by],
        };
        let budget = match &plan.access {
            _ if query::index_decides(filter, &spec.by, &wants) => RankBudget::Unbounded,
            Access::Index { id, .. } if *id == choice.id => RankBudget::Unbounded,
            Access::Index { .. } => RankBudget::BesideIndex {
                cap: (spec.k as u64).saturating_mul(32).max(RANK_BUDGET_MIN),
            },
            Access::Scan => RankBudget::Records(RANK_BUDGET_SCAN),
        };
        let index = query::RankIndex {
            id: choice.id,
            kind: choice.kind,
            ranges,
        };
        Some((index, budget))
    }

    /// The ranked walk beside a plan through another index: first with
    /// [`RANK_FIRST_TRY`] records; if that is not enough, the plan's live entries are counted
    /// up to `cap`, and the walk runs again with the rest of `cap` if the plan reads at
    /// least as many, or with the plan's count if the first try's matches say the walk
    /// needs at most half of that (`None`: the plan is cheaper). Under a work limit the
    /// plan's entries are first counted up to [`RANK_FIRST_TRY`]: a plan reading fewer
    /// records than the first try may is run at once, where the try could spend the limit
    /// on records that rank but do not match. What is read, and so the answer's path,
    /// depends on the data alone: the records read stay within `cap` (and the plan's count
    /// twice over), and a walk from the top is charged what it visits, whatever its pieces.
    #[allow(clippy::too_many_arguments)]
    fn rank_beside_index(
        &self,
        r: &mut SnapshotRecords<S>,
        filter: &Filter,
        plan: &Plan,
        index: &query::RankIndex,
        spec: &TopSpec,
        cap: u64,
        stats: &mut QueryStats,
    ) -> Result<Option<Vec<Ranked>>> {
        let first = RANK_FIRST_TRY.min(cap);
        if r.limited() && live_entries_upto(r, plan, first, stats)? < first {
            return Ok(None);
        }
        let matched_before = stats.records_matched;
        if let Some(out) = query::top_k_ranked(r, filter, index, spec, Some(first), stats)? {
            return Ok(Some(out));
        }
        let matched = stats.records_matched - matched_before;
        let planned = live_entries_upto(r, plan, cap, stats)?;
        if planned >= cap {
            return query::top_k_ranked(r, filter, index, spec, Some(cap - first), stats);
        }
        // The plan reads fewer records than the budget. At the first try's share of
        // matches the walk needs `k / share` records: twice that, if no more than the plan
        // reads, is worth a walk of at most the plan's records (so a filter whose matches
        // thin out past the first try costs at most the plan twice, and one that matched
        // nothing there never walks again).
        let need = match matched {
            0 => u64::MAX,
            m => (spec.k as u64).saturating_mul(first).saturating_mul(2) / m,
        };
        if need > planned {
            return Ok(None);
        }
        query::top_k_ranked(r, filter, index, spec, Some(planned), stats)
    }

    pub(super) fn aggregate(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        work: Option<u64>,
        filter: &Filter,
        op: &Aggregate,
    ) -> Result<QueryResult<Value>> {
        self.check_open()?;
        e.check_live()?;
        let (mut r, ix) = self.reads(e.id, seq, work);
        let mut stats = QueryStats::default();
        let plan = self.plan_query(&mut r, &ix, filter, &mut stats)?;
        // A count the index answers alone cuts its own walk (`count_in_pieces`).
        let pieces = match query::counted_in_index(filter, &plan, op) {
            Some(_) => None,
            None => r.split_plan(&plan)?,
        };
        let v = match pieces {
            Some(pieces) => {
                let (f, o) = (filter.clone(), op.clone());
                let (mut tally, theirs) = r.walk_both(pieces, &mut stats, move |r, p, stats| {
                    query::Tally::of(r, &f, p, &o, stats)
                })?;
                tally.merge(theirs);
                tally.value(&mut stats)
            }
            None => query::aggregate(&mut r, filter, &plan, op, &mut stats)?,
        };
        r.finish(&mut stats);
        Ok(QueryResult::complete(v, stats))
    }
}

/// The live entries of `plan`'s index ranges, counted up to `cap` (0 for a plan through no
/// index).
fn live_entries_upto<S: RecordSource>(
    r: &mut SnapshotRecords<S>,
    plan: &Plan,
    cap: u64,
    stats: &mut QueryStats,
) -> Result<u64> {
    let Access::Index {
        id, kind, ranges, ..
    } = &plan.access
    else {
        return Ok(0);
    };
    let mut n = 0u64;
    for range in ranges {
        if n >= cap {
            break;
        }
        r.for_each_live_entry(*id, *kind, range, None, stats, &mut |_, _, _, _| {
            n += 1;
            Ok(n < cap)
        })?;
    }
    Ok(n)
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
