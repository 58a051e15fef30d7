//! Top-K: the records meeting a filter with the largest (or smallest) values of an attribute.

use super::exec::for_each_match;
use super::filter::{Filter, KeyRange};
use super::from_top::matches_from_top;
use super::matcher::{Match, Wants};
use super::plan::{Access, Plan};
use super::records::{EntryBatch, EntryVisitor, Records};
use super::stats::QueryStats;
use crate::error::Result;
use crate::index::{AttrPath, AttrValue, IndexKind, Scalar};
use crate::key::{Nsid, SeqNo, ValueAddr};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A record of a top-K result: its pk, the value it was ranked by, and its projection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranked {
    /// The record's key.
    #[serde(serialize_with = "serialize_bytes")]
    pub pk: Bytes,
    /// The value at the attribute ranked by.
    pub key: Value,
    /// The projection's attributes, if one was asked for.
    pub projection: Option<Value>,
}

fn serialize_bytes<S: serde::Serializer>(b: &Bytes, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(b))
}

/// Heap entry: ordered so that the heap's top is the first to give up its place.
struct Candidate {
    key: Scalar,
    pk: Bytes,
    desc: bool,
    projection: Option<Value>,
}

impl Candidate {
    /// Rank order: smaller ranks first (ascending key, or descending), ties by pk.
    fn rank_cmp(&self, other: &Self) -> Ordering {
        rank(self.desc, (&self.key, &self.pk), (&other.key, &other.pk))
    }
}

/// The rank order of two (key, pk) pairs: smaller ranks first (ascending key, or descending),
/// ties by pk.
fn rank(desc: bool, (a, a_pk): (&Scalar, &[u8]), (b, b_pk): (&Scalar, &[u8])) -> Ordering {
    let by_key = match desc {
        true => b.cmp(a),
        false => a.cmp(b),
    };
    by_key.then_with(|| a_pk.cmp(b_pk))
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.rank_cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank_cmp(other)
    }
}

/// What a top-K query ranks by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopSpec {
    /// The attribute ranked by.
    pub by: AttrPath,
    /// Largest first (else smallest first).
    pub desc: bool,
    /// Records kept at most.
    pub k: usize,
    /// Attributes returned with each record.
    pub projection: Option<Vec<AttrPath>>,
}

/// Heap entries a top-K reserves at most before it has seen a record.
const TOP_PREALLOC: usize = 1024;

/// The `k` best records seen so far: of a whole walk, or of a piece of it that
/// [`merge`](Self::merge) joins with the others.
pub struct Best {
    heap: BinaryHeap<Candidate>,
    desc: bool,
    k: usize,
    projection: Option<Vec<AttrPath>>,
}

impl Best {
    fn new(spec: &TopSpec) -> Self {
        Best {
            // Never sized from `k` alone: `k` comes from a client, and a heap of 10^15
            // entries aborts the process on allocation (`catch_unwind` cannot catch that).
            // The heap grows only with the records that actually match.
            heap: BinaryHeap::with_capacity(spec.k.min(TOP_PREALLOC).saturating_add(1)),
            desc: spec.desc,
            k: spec.k,
            projection: spec.projection.clone(),
        }
    }

    /// The best of the records `plan` reaches that meet `filter`, ranked as `spec` says.
    pub fn of(
        records: &mut dyn Records,
        filter: &Filter,
        plan: &Plan,
        spec: &TopSpec,
        stats: &mut QueryStats,
    ) -> Result<Best> {
        let mut best = Best::new(spec);
        // The key ranked by is read with the filter's attributes; without a projection,
        // through an index on it that decides the whole filter, no record is read.
        let by = [&spec.by];
        if spec.k > 0 {
            let wants = best.wants(&by);
            for_each_match(records, filter, plan, None, None, wants, stats, &mut |m| {
                best.offer(&m);
                Ok(true)
            })?;
        }
        Ok(best)
    }

    /// Joins the best of another piece of the same walk: the best `k` of both.
    pub fn merge(&mut self, other: Best) {
        for e in other.heap {
            if self.heap.len() >= self.k {
                if self.heap.peek().is_none_or(|worst| e >= *worst) {
                    continue;
                }
                self.heap.pop();
            }
            self.heap.push(e);
        }
    }

    /// What a walk reads of each record: the key ranked by, with the filter's attributes;
    /// the record itself only for a projection.
    fn wants<'b>(&self, by: &'b [&'b AttrPath]) -> Wants<'b> {
        Wants {
            record: self.projection.is_some(),
            attrs: by,
        }
    }

    /// Takes `m` if it ranks among the best `k` so far.
    fn offer(&mut self, m: &Match<'_>) {
        // The null rule (docs/queries.md): a `null` is no value, as a missing attribute.
        let Some(Some(AttrValue::Scalar(key))) = m.attrs.first() else {
            return;
        };
        if matches!(key, Scalar::Null) {
            return;
        }
        // Ranked before a copy is made: most records of a big scan take no place.
        let full = self.heap.len() >= self.k;
        let ranks_before = |w: &Candidate| rank(self.desc, (key, m.pk), (&w.key, &w.pk)).is_lt();
        if full && !self.heap.peek().is_some_and(ranks_before) {
            return;
        }
        let mut e = Candidate {
            key: key.clone(),
            pk: Bytes::copy_from_slice(m.pk),
            desc: self.desc,
            projection: None,
        };
        // Projected only once it takes a place (most records of a big scan do not).
        e.projection = self
            .projection
            .as_deref()
            .zip(m.doc)
            .map(|(p, doc)| doc.project(p));
        if full {
            self.heap.pop();
        }
        self.heap.push(e);
    }

    /// Whether no entry of the index past `bound` (an entry key; below it when ranking
    /// largest first, at or above it otherwise) can take a place: `k` are kept and the
    /// worst of them ranks before every secondary key there.
    fn settled_past(&self, bound: &[u8]) -> bool {
        let Some(worst) = self.heap.peek().filter(|_| self.heap.len() >= self.k) else {
            return false;
        };
        let Some((sk, _)) = Scalar::decode(bound) else {
            return false;
        };
        // Below `bound` a key equal to its secondary key may come with a smaller pk, which
        // ranks first among equals: only a strictly smaller key is out. At or above it, an
        // equal key comes with a larger pk than any kept one of that key.
        match self.desc {
            true => sk < worst.key,
            false => sk >= worst.key,
        }
    }

    /// The records kept, best first (their bytes counted in `stats`).
    pub fn finish(self, stats: &mut QueryStats) -> Vec<Ranked> {
        let out: Vec<Ranked> = self
            .heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| Ranked {
                pk: e.pk,
                key: e.key.to_json(),
                projection: e.projection,
            })
            .collect();
        stats.bytes_returned += out
            .iter()
            .map(|r| r.pk.len() + r.projection.as_ref().map_or(0, |p| p.to_string().len()))
            .sum::<usize>() as u64;
        out
    }
}

/// The `k` records meeting `filter` with the smallest (or, `desc`, largest) scalar at `by`,
/// ties broken by pk; records without a scalar other than `null` there are left out.
pub fn top_k(
    records: &mut dyn Records,
    filter: &Filter,
    plan: &Plan,
    spec: &TopSpec,
    stats: &mut QueryStats,
) -> Result<Vec<Ranked>> {
    Ok(Best::of(records, filter, plan, spec, stats)?.finish(stats))
}

/// An index on the attribute a top-K ranks by.
#[derive(Clone, Debug)]
pub struct RankIndex {
    pub id: Nsid,
    pub kind: IndexKind,
    /// Its ranges the walk reads: those of the filter's condition on the attribute, or
    /// every secondary key.
    pub ranges: Vec<KeyRange>,
}

/// Piece bounds a ranked walk asks each table for at first (about a table block of entries
/// each), and the factor each later ask grows by: most top-K end within the first pieces.
const RANK_BOUNDS: (usize, usize) = (16, 4);
/// Blocks of entries in a ranked walk's largest piece (its first piece has one).
const RANK_PIECE_MAX: usize = 64;

/// [`top_k`] through the index on the attribute ranked by, walked from the end the ranking
/// starts at, in pieces of the index's key space (one table block of entries first, then
/// doubling), until no entry left can take a place: a top-K of a few records reads about
/// as many records as it takes to find them, not every record meeting the filter. Records
/// are read only where the index does not decide the filter; at most `budget` of them
/// (`None`: no bound), else it gives up and says so (`Ok(None)`): the filter's own plan
/// then costs less.
pub fn top_k_ranked(
    records: &mut dyn Records,
    filter: &Filter,
    index: &RankIndex,
    spec: &TopSpec,
    budget: Option<u64>,
    stats: &mut QueryStats,
) -> Result<Option<Vec<Ranked>>> {
    // Shared by the walk from a piece's top, which asks whether an entry can still take a
    // place before it reads the entry's record, and the offers of the records it reads.
    let best = RefCell::new(Best::new(spec));
    if spec.k == 0 || index.ranges.is_empty() {
        return Ok(Some(best.into_inner().finish(stats)));
    }
    let mut bounds = PieceBounds::new(index, spec.desc);
    // Set once the record budget is spent: the walk from a piece's top stops there too.
    let spent = Cell::new(false);
    let mut budgeted = Budgeted {
        inner: records,
        left: budget,
        exhausted: &spent,
    };
    let by = [&spec.by];
    let wants = best.borrow().wants(&by);
    // The piece's far end: `None` is the end of the ranges.
    let mut from: Option<Vec<u8>> = None;
    let (mut taken, mut step) = (0, 1);
    loop {
        if taken + step > bounds.got.len() {
            bounds.more(budgeted.inner, stats)?;
        }
        // Fewer bounds than the step: the piece ends at the last, and the next asks again.
        let end = (taken + step).min(bounds.got.len());
        let to = (end > taken).then(|| bounds.got[end - 1].clone());
        taken = end;
        step = (step * 2).min(RANK_PIECE_MAX);
        let (lo, hi) = match spec.desc {
            true => (to.as_deref(), from.as_deref()),
            false => (from.as_deref(), to.as_deref()),
        };
        let plan = Plan {
            access: Access::Index {
                id: index.id,
                attr: spec.by.clone(),
                kind: index.kind,
                ranges: clip(&index.ranges, lo, hi),
            },
            estimate: None,
        };
        let offer = &mut |m: Match<'_>| {
            let mut best = best.borrow_mut();
            best.offer(&m);
            // Smallest first, matches come in rank order (secondary key, then pk): the
            // first `k` are the answer.
            Ok(spec.desc || best.heap.len() < spec.k)
        };
        let through = match spec.desc {
            // Largest first: each piece from its top, and no record read for an entry that
            // can take no place (`from_top.rs`). The last piece (no bound below it) holds
            // what is left of every table and memtable past their last given ends: at most
            // a table block or a memtable's sample gap each.
            true => {
                let go_on = &mut |key: &[u8]| !spent.get() && !best.borrow().settled_past(key);
                matches_from_top(&mut budgeted, filter, &plan, wants, stats, go_on, offer)?
            }
            false => {
                for_each_match(
                    &mut budgeted,
                    filter,
                    &plan,
                    None,
                    None,
                    wants,
                    stats,
                    offer,
                )?;
                true
            }
        };
        if spent.get() {
            return Ok(None);
        }
        match to {
            Some(b) if through && !best.borrow().settled_past(&b) => from = Some(b),
            _ => return Ok(Some(best.into_inner().finish(stats))),
        }
    }
}

/// The bounds of a ranked walk's pieces, in walk order, asked for a stage at a time.
struct PieceBounds<'a> {
    index: &'a RankIndex,
    desc: bool,
    got: Vec<Vec<u8>>,
    per_table: usize,
    /// No bound is left past the last.
    done: bool,
}

impl<'a> PieceBounds<'a> {
    fn new(index: &'a RankIndex, desc: bool) -> Self {
        PieceBounds {
            index,
            desc,
            got: Vec::new(),
            per_table: RANK_BOUNDS.0,
            done: false,
        }
    }

    /// Asks for the next stage of bounds past the last (within the walk's ranges).
    fn more(&mut self, records: &mut dyn Records, stats: &mut QueryStats) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let ranges = &self.index.ranges;
        let (first, last) = (&ranges[0], &ranges[ranges.len() - 1]);
        // Past the last bound, or at first the end of the ranges the walk starts from.
        let beyond = match (self.got.last(), self.desc) {
            (Some(b), _) => Some(b.clone()),
            (None, true) => last.end.clone(),
            (None, false) => Some(first.start.clone()),
        };
        let mut more: Vec<Vec<u8>> = records
            .piece_bounds(
                self.index.id,
                self.desc,
                beyond.as_deref(),
                self.per_table,
                stats,
            )?
            .into_iter()
            .filter(|b| {
                b.as_slice() > first.start.as_slice()
                    && last
                        .end
                        .as_ref()
                        .is_none_or(|e| b.as_slice() < e.as_slice())
                    && beyond
                        .as_ref()
                        .is_none_or(|x| (b < x) == self.desc && b != x)
            })
            .collect();
        if self.desc {
            more.reverse();
        }
        self.done = more.is_empty();
        self.got.extend(more);
        self.per_table = self.per_table.saturating_mul(RANK_BOUNDS.1);
        Ok(())
    }
}

/// `ranges` (in order, disjoint) cut to `[lo, hi)` (`None`: no bound on that side).
fn clip(ranges: &[KeyRange], lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<KeyRange> {
    ranges
        .iter()
        .filter_map(|r| {
            let start = match lo {
                Some(lo) if lo > r.start.as_slice() => lo.to_vec(),
                _ => r.start.clone(),
            };
            let end = match (&r.end, hi) {
                (Some(e), Some(hi)) => Some(e.as_slice().min(hi).to_vec()),
                (e, hi) => e.clone().or(hi.map(<[u8]>::to_vec)),
            };
            end.as_ref()
                .is_none_or(|e| start.as_slice() < e.as_slice())
                .then_some(KeyRange { start, end })
        })
        .collect()
}

/// A store whose record reads are counted down from a budget: once spent, no record is read
/// and the walk ends (its index reads come back empty).
struct Budgeted<'a> {
    inner: &'a mut dyn Records,
    left: Option<u64>,
    exhausted: &'a Cell<bool>,
}

impl Budgeted<'_> {
    /// Whether one more record may be read (and counts it).
    fn take(&mut self) -> bool {
        match &mut self.left {
            None => true,
            Some(0) => {
                self.exhausted.set(true);
                false
            }
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }
}

impl Records for Budgeted<'_> {
    fn index_entries(
        &mut self,
        index: Nsid,
        range: &KeyRange,
        after: Option<&[u8]>,
        max: usize,
        out: &mut EntryBatch,
        stats: &mut QueryStats,
    ) -> Result<()> {
        if self.exhausted.get() {
            out.clear();
            return Ok(());
        }
        self.inner
            .index_entries(index, range, after, max, out, stats)
    }

    fn superseded(&mut self, pk: &[u8], seq: SeqNo, stats: &mut QueryStats) -> Result<bool> {
        self.inner.superseded(pk, seq, stats)
    }

    fn examine_entry(&mut self) -> Result<()> {
        // Spent: the walk is given up, what is left of its batch is not examined.
        match self.exhausted.get() {
            true => Ok(()),
            false => self.inner.examine_entry(),
        }
    }

    fn get(&mut self, pk: &[u8], stats: &mut QueryStats) -> Result<Option<Bytes>> {
        match self.take() {
            true => self.inner.get(pk, stats),
            false => Ok(None),
        }
    }

    fn reads_ahead(&self) -> bool {
        self.inner.reads_ahead()
    }

    fn prefetch(&mut self, reads: &[(Bytes, ValueAddr)]) {
        // No read ahead past the budget: those values would never be used.
        let left = self.left.map_or(reads.len(), |n| n as usize);
        if !self.exhausted.get() {
            self.inner.prefetch(&reads[..reads.len().min(left)])
        }
    }

    fn read_at(&mut self, pk: &[u8], addr: ValueAddr, stats: &mut QueryStats) -> Result<Bytes> {
        match self.take() {
            true => self.inner.read_at(pk, addr, stats),
            // Not JSON: meets no filter and holds no key to rank by.
            false => Ok(Bytes::new()),
        }
    }

    fn for_each_live_entry(
        &mut self,
        index: Nsid,
        kind: IndexKind,
        range: &KeyRange,
        after: Option<&[u8]>,
        stats: &mut QueryStats,
        f: &mut EntryVisitor<'_>,
    ) -> Result<bool> {
        self.inner
            .for_each_live_entry(index, kind, range, after, stats, f)
    }

    fn count_entries(
        &mut self,
        index: Nsid,
        kind: IndexKind,
        range: &KeyRange,
        stats: &mut QueryStats,
    ) -> Result<u64> {
        self.inner.count_entries(index, kind, range, stats)
    }

    fn piece_bounds(
        &mut self,
        index: Nsid,
        from_top: bool,
        beyond: Option<&[u8]>,
        per_table: usize,
        stats: &mut QueryStats,
    ) -> Result<Vec<Vec<u8>>> {
        self.inner
            .piece_bounds(index, from_top, beyond, per_table, stats)
    }

    fn scan(
        &mut self,
        after: Option<&[u8]>,
        max: usize,
        stats: &mut QueryStats,
    ) -> Result<Vec<(Bytes, Bytes)>> {
        self.inner.scan(after, max, stats)
    }
}
