//! Top-K: the records meeting a filter with the largest (or smallest) values of an attribute.

use super::exec::{for_each_match, QueryStats, Records, Wants};
use super::plan::Plan;
use super::Filter;
use crate::error::Result;
use crate::index::{AttrPath, AttrValue, Scalar};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
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
        let by_key = if self.desc {
            other.key.cmp(&self.key)
        } else {
            self.key.cmp(&other.key)
        };
        by_key.then_with(|| self.pk.cmp(&other.pk))
    }
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

/// The `k` records meeting `filter` with the smallest (or, `desc`, largest) scalar at `by`,
/// ties broken by pk; records without a scalar there are left out.
pub fn top_k(
    records: &mut dyn Records,
    filter: &Filter,
    plan: &Plan,
    spec: &TopSpec,
    stats: &mut QueryStats,
) -> Result<Vec<Ranked>> {
    let TopSpec {
        by,
        desc,
        k,
        projection,
    } = spec;
    let (desc, k, projection) = (*desc, *k, projection.as_deref());
    // Never sized from `k` alone: `k` comes from a client, and a heap of 10^15 entries aborts
    // the process on allocation (`catch_unwind` cannot catch that). The heap grows only with
    // the records that actually match.
    let mut heap: BinaryHeap<Candidate> =
        BinaryHeap::with_capacity(k.min(TOP_PREALLOC).saturating_add(1));
    // The key ranked by is read with the filter's attributes; without a projection, through
    // an index on it that decides the whole filter, no record is read.
    let wants = Wants {
        record: projection.is_some(),
        attrs: &[by],
    };
    if k > 0 {
        for_each_match(records, filter, plan, None, None, wants, stats, &mut |m| {
            if let Some(Some(AttrValue::Scalar(key))) = m.attrs.first() {
                let mut e = Candidate {
                    key: key.clone(),
                    pk: Bytes::copy_from_slice(m.pk),
                    desc,
                    projection: None,
                };
                let full = heap.len() >= k;
                if full && heap.peek().is_none_or(|worst| e >= *worst) {
                    return Ok(true);
                }
                // Projected only once it takes a place (most records of a big scan do not).
                e.projection = projection.zip(m.doc).map(|(p, doc)| doc.project(p));
                if full {
                    heap.pop();
                }
                heap.push(e);
            }
            Ok(true)
        })?;
    }
    let out: Vec<Ranked> = heap
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
    Ok(out)
}
