//! Running a plan: the records that meet a filter, read through an index or a scan, as pages
//! of found records, top-K by an attribute, or an aggregate.
//!
//! Every candidate an index gives is checked against the whole filter on the record's current
//! value, and its entry's secondary key against the record's: an entry a later write made
//! stale (the record's attribute changed, or it was deleted) drops out here. Where the index
//! entries decide the whole filter and the caller needs nothing else of the record (the index
//! holds the answer), no record is read at all ([`Wants`]).

use super::doc::Doc;
use super::filter::{Filter, KeyRange};
use super::matcher::{Checker, EntryMatcher, Match, RecordMatcher, Wants};
use super::plan::{Access, Plan};
use super::records::{Entry, EntryBatch, Records, MAX_BATCH};
use super::stats::QueryStats;
use crate::error::{Error, Result};
use crate::index::{decode_payload, split_entry_key, AttrPath, IndexKind};
use bytes::Bytes;

/// Candidates asked of an index or a scan at a time: few at first (a query with a limit
/// may need only a few), doubling up to `MAX_BATCH`.
const FIRST_BATCH: usize = 16;

/// The first batch of a walk whose caller expects to take `expect` candidates (a limit).
fn first_batch(expect: Option<u64>) -> usize {
    expect.map_or(FIRST_BATCH, |n| n.clamp(1, MAX_BATCH as u64) as usize)
}

/// Calls `f` with every live entry of index `id` in `ranges`, in key order, after `after`;
/// stops when `f` returns false. An entry is live unless a newer version of its pk is still in
/// a memtable (once flushed, the newer version's tombstone hides the entry from the scan).
/// With `read_values`, a VAS index's value reads for each batch are issued at once, so they
/// overlap (on the dies of a device, or the prefetch threads on files).
#[allow(clippy::too_many_arguments)]
pub fn for_each_entry(
    records: &mut dyn Records,
    id: crate::key::Nsid,
    kind: IndexKind,
    ranges: &[KeyRange],
    after: Option<&[u8]>,
    expect: Option<u64>,
    read_values: bool,
    stats: &mut QueryStats,
    f: &mut dyn FnMut(&mut dyn Records, Entry<'_>, &mut QueryStats) -> Result<bool>,
) -> Result<()> {
    let malformed = || Error::corruption("index", 0, "malformed secondary index entry");
    for range in ranges {
        let Some(from) = resume_in(range, after) else {
            continue;
        };
        let mut from: Option<Vec<u8>> = from.map(<[u8]>::to_vec);
        let mut batch = first_batch(expect);
        let mut entries = EntryBatch::default();
        loop {
            records.index_entries(id, range, from.as_deref(), batch, &mut entries, stats)?;
            if read_values && kind == IndexKind::Vas && records.reads_ahead() {
                let mut reads = Vec::with_capacity(entries.len());
                for (key, payload) in entries.iter() {
                    let (_, pk) = split_entry_key(key).ok_or_else(malformed)?;
                    if let (Some(addr), _) = decode_payload(kind, payload).ok_or_else(malformed)? {
                        reads.push((Bytes::copy_from_slice(pk), addr));
                    }
                }
                records.prefetch(&reads);
            }
            for (key, payload) in entries.iter() {
                let (sk, pk) = split_entry_key(key).ok_or_else(malformed)?;
                let (addr, seq) = decode_payload(kind, payload).ok_or_else(malformed)?;
                if records.superseded(pk, seq, stats)? {
                    continue;
                }
                records.examine_entry()?;
                if !f(records, Entry { key, sk, pk, addr }, stats)? {
                    return Ok(());
                }
            }
            if entries.len() < batch {
                break;
            }
            from = entries.last_key().map(<[u8]>::to_vec);
            batch = (batch * 2).min(MAX_BATCH);
        }
    }
    Ok(())
}

/// Whether a walk through the index on `attr` can answer from its entries alone: every
/// condition of `filter` is on `attr` (a live entry's secondary key is the record's scalar
/// there), and the caller wants no more of the record than that scalar.
pub fn index_decides(filter: &Filter, attr: &AttrPath, wants: &Wants<'_>) -> bool {
    !wants.record
        && filter.conditions.iter().all(|(p, _)| p == attr)
        && wants.attrs.iter().all(|p| *p == attr)
}

/// Calls `f` with every record meeting `filter`, in the plan's order (index order, or pk
/// order), starting after `after`; stops when `f` returns false. `expect`: how many the
/// caller will take at most, if it knows (the size of the first read). Each match carries
/// what `wants` asks for; through an index that decides the whole filter ([`index_decides`]),
/// and with nothing wanted beyond its attribute, no record is read.
#[allow(clippy::too_many_arguments)]
pub fn for_each_match(
    records: &mut dyn Records,
    filter: &Filter,
    plan: &Plan,
    after: Option<&[u8]>,
    expect: Option<u64>,
    wants: Wants<'_>,
    stats: &mut QueryStats,
    f: &mut dyn FnMut(Match<'_>) -> Result<bool>,
) -> Result<()> {
    let Access::Index {
        id,
        attr,
        kind,
        ranges,
    } = &plan.access
    else {
        return scan_matches(records, filter, after, expect, wants, stats, f);
    };
    if index_decides(filter, attr, &wants) {
        return entry_matches(records, filter, plan, after, wants, stats, f);
    }
    let matcher = RecordMatcher::new(filter, attr, &wants);
    let mut visit = |records: &mut dyn Records, e: Entry<'_>, stats: &mut QueryStats| {
        matcher.visit(records, e, stats, f)
    };
    for_each_entry(
        records, *id, *kind, ranges, after, expect, true, stats, &mut visit,
    )
}

/// The matches of a walk the index entries answer alone ([`index_decides`]): conditions after
/// the first on the index's attribute, and the attributes wanted, read off the secondary key.
fn entry_matches(
    records: &mut dyn Records,
    filter: &Filter,
    plan: &Plan,
    after: Option<&[u8]>,
    wants: Wants<'_>,
    stats: &mut QueryStats,
    f: &mut dyn FnMut(Match<'_>) -> Result<bool>,
) -> Result<()> {
    let Access::Index {
        id, kind, ranges, ..
    } = &plan.access
    else {
        return Err(Error::InvalidQuery("no index to answer from".into()));
    };
    let mut matcher = EntryMatcher::new(filter, &wants);
    let mut visit = |key: &[u8], sk: &[u8], pk: &[u8], stats: &mut QueryStats| {
        matcher.visit(key, sk, pk, stats, f)
    };
    // Entries visited where the walk finds them: nothing is read ahead, nothing copied out.
    for range in ranges {
        let Some(from) = resume_in(range, after) else {
            continue;
        };
        if !records.for_each_live_entry(*id, *kind, range, from, stats, &mut visit)? {
            break;
        }
    }
    Ok(())
}

/// Where a walk of `range` resumes after `after`: `Some(None)` from its start, `Some(Some(a))`
/// after `a`, `None` if the range lies wholly before `after` (ranges come in key order).
fn resume_in<'a>(range: &KeyRange, after: Option<&'a [u8]>) -> Option<Option<&'a [u8]>> {
    match (after, &range.end) {
        (Some(a), Some(end)) if a >= end.as_slice() => None,
        (Some(a), _) if a >= range.start.as_slice() => Some(Some(a)),
        _ => Some(None),
    }
}

/// The matches of a scan, in pk order.
fn scan_matches(
    records: &mut dyn Records,
    filter: &Filter,
    after: Option<&[u8]>,
    expect: Option<u64>,
    wants: Wants<'_>,
    stats: &mut QueryStats,
    f: &mut dyn FnMut(Match<'_>) -> Result<bool>,
) -> Result<()> {
    let checker = Checker::new(filter, None, &wants);
    let mut from = after.map(<[u8]>::to_vec);
    let mut size = first_batch(expect);
    loop {
        let batch = records.scan(from.as_deref(), size, stats)?;
        for (pk, value) in &batch {
            let doc = Doc::new(value.clone());
            let Some(attrs) = checker.check(stats, &doc, None) else {
                continue;
            };
            stats.records_matched += 1;
            let m = Match {
                position: pk,
                pk,
                doc: Some(&doc),
                attrs: &attrs,
            };
            if !f(m)? {
                return Ok(());
            }
        }
        match batch.last() {
            Some((pk, _)) if batch.len() == size => from = Some(pk.to_vec()),
            _ => return Ok(()),
        }
        size = (size * 2).min(MAX_BATCH);
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
