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
use super::plan::{Access, Plan};
use super::stats::QueryStats;
use crate::error::{Error, Result};
use crate::index::Scalar;
use crate::index::{decode_payload, split_entry_key, AttrPath, AttrValue, IndexKind, PathSet};
use crate::key::{SeqNo, ValueAddr};
use bytes::Bytes;
/// What [`Records::for_each_live_entry`] calls with each live entry: its key, secondary key
/// and pk; false stops the walk.
pub type EntryVisitor<'a> = dyn FnMut(&[u8], &[u8], &[u8], &mut QueryStats) -> Result<bool> + 'a;

/// The reads a query makes, at one snapshot of one namespace.
pub trait Records {
    /// Up to `max` entries (key and value) of index `index` in `[start, end)`, after `after`
    /// if given, in order, in place of what `out` held.
    fn index_entries(
        &mut self,
        index: crate::key::Nsid,
        range: &KeyRange,
        after: Option<&[u8]>,
        max: usize,
        out: &mut EntryBatch,
        stats: &mut QueryStats,
    ) -> Result<()>;

    /// Whether a version of `pk` newer than `seq` is still in a memtable: the flush that
    /// will put a tombstone on the entry of the older version has not happened yet.
    fn superseded(&mut self, pk: &[u8], seq: SeqNo, stats: &mut QueryStats) -> Result<bool>;

    /// One live entry (not [`Records::superseded`]) of a batch of
    /// [`Records::index_entries`] is examined: a unit of the query's work limit, if it has
    /// one (an error stops the query). Entries a batch holds past where the walk stops, and
    /// superseded ones, are not charged. A store that wraps another forwards this.
    fn examine_entry(&mut self) -> Result<()> {
        Ok(())
    }

    /// The value of `pk`, or `None` (deleted): a primary lookup.
    fn get(&mut self, pk: &[u8], stats: &mut QueryStats) -> Result<Option<Bytes>>;

    /// Whether `prefetch` reads ahead (else a query need not list what it will read).
    fn reads_ahead(&self) -> bool {
        false
    }

    /// Starts reading these values (VAS entries' addresses) ahead of `read_at`.
    fn prefetch(&mut self, _reads: &[(Bytes, ValueAddr)]) {}

    /// The value of `pk` read at `addr` (a VAS entry's address): no primary lookup.
    fn read_at(&mut self, pk: &[u8], addr: ValueAddr, stats: &mut QueryStats) -> Result<Bytes>;

    /// Calls `f` with the key, secondary key and pk of every live entry of index `index`
    /// (of kind `kind`) in `range`, after `after` if given, in order, until it returns false;
    /// returns whether it went to the end. An entry is live unless [`Records::superseded`].
    /// This walks [`Records::index_entries`] in batches; a store may walk in place.
    #[allow(clippy::too_many_arguments)]
    fn for_each_live_entry(
        &mut self,
        index: crate::key::Nsid,
        kind: IndexKind,
        range: &KeyRange,
        after: Option<&[u8]>,
        stats: &mut QueryStats,
        f: &mut EntryVisitor<'_>,
    ) -> Result<bool> {
        let (mut from, mut batch) = (after.map(<[u8]>::to_vec), EntryBatch::default());
        loop {
            self.index_entries(index, range, from.as_deref(), MAX_BATCH, &mut batch, stats)?;
            for (key, payload) in batch.iter() {
                let (sk, pk, seq) = entry_parts(kind, key, payload)?;
                if self.superseded(pk, seq, stats)? {
                    continue;
                }
                self.examine_entry()?;
                if !f(key, sk, pk, stats)? {
                    return Ok(false);
                }
            }
            if batch.len() < MAX_BATCH {
                return Ok(true);
            }
            from = batch.last_key().map(<[u8]>::to_vec);
        }
    }

    /// How many live entries index `index` (of kind `kind`) holds in `range`: a count the
    /// index answers alone.
    fn count_entries(
        &mut self,
        index: crate::key::Nsid,
        kind: IndexKind,
        range: &KeyRange,
        stats: &mut QueryStats,
    ) -> Result<u64> {
        let mut live = 0;
        self.for_each_live_entry(index, kind, range, None, stats, &mut |_, _, _, _| {
            live += 1;
            Ok(true)
        })?;
        Ok(live)
    }

    /// Keys of index `index`, in order, that split its entries into pieces of about a
    /// table block each (where a walk in pieces may start a piece): of each table, the
    /// `per_table` nearest the top (`from_top`) or the bottom of the index, beyond `beyond`
    /// (below it from the top, above it from the bottom) if given. Empty when none is known
    /// (entries only in memtables, or a store without tables): a walk then takes the rest of
    /// its range in one piece.
    fn piece_bounds(
        &mut self,
        _index: crate::key::Nsid,
        _from_top: bool,
        _beyond: Option<&[u8]>,
        _per_table: usize,
        _stats: &mut QueryStats,
    ) -> Result<Vec<Vec<u8>>> {
        Ok(Vec::new())
    }

    /// Up to `max` records after `after` (from the start if `None`), in pk order.
    fn scan(
        &mut self,
        after: Option<&[u8]>,
        max: usize,
        stats: &mut QueryStats,
    ) -> Result<Vec<(Bytes, Bytes)>>;
}

/// Candidates asked of an index or a scan at a time: few at first (a query with a limit
/// may need only a few), doubling up to `MAX_BATCH`.
const FIRST_BATCH: usize = 16;
const MAX_BATCH: usize = 512;

/// The first batch of a walk whose caller expects to take `expect` candidates (a limit).
fn first_batch(expect: Option<u64>) -> usize {
    expect.map_or(FIRST_BATCH, |n| n.clamp(1, MAX_BATCH as u64) as usize)
}

/// What each match of a walk carries besides its pk and position.
#[derive(Clone, Copy, Default)]
pub struct Wants<'a> {
    /// The record itself ([`Match::doc`]): read even where the index entry decides the filter.
    pub record: bool,
    /// Attributes whose values each match carries ([`Match::attrs`]), taken in the pass over
    /// the record that checks the filter, or from the index entry's secondary key for the
    /// attribute of the index read.
    pub attrs: &'a [&'a AttrPath],
}

/// A record that met the filter.
pub struct Match<'a> {
    /// Where the query resumes after this record: its index entry key, or its pk.
    pub position: &'a [u8],
    /// The record's key.
    pub pk: &'a [u8],
    /// The record, if it was read: always when [`Wants::record`]; `None` when its index entry
    /// answered for it.
    pub doc: Option<&'a Doc>,
    /// What the record holds at each of [`Wants::attrs`] (`None`: missing).
    pub attrs: &'a [Option<AttrValue>],
}

/// Index entries read at a time: their keys and values in one buffer, kept from batch to
/// batch (a query reads entries without an allocation each).
#[derive(Default)]
pub struct EntryBatch {
    buf: Vec<u8>,
    /// Where each entry's key and value end in `buf`.
    ends: Vec<(usize, usize)>,
}

impl EntryBatch {
    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.ends.clear();
    }

    /// Room for `n` more entries of a typical size (a batch fills without growing).
    pub fn reserve(&mut self, n: usize) {
        self.ends.reserve(n);
        self.buf.reserve(n * 48);
    }

    /// Adds one entry at the end.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        self.buf.extend_from_slice(key);
        let key_end = self.buf.len();
        self.buf.extend_from_slice(value);
        self.ends.push((key_end, self.buf.len()));
    }

    /// Entries in the batch.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The key and value of each entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&(k, v)| {
            let kv = (&self.buf[start..k], &self.buf[k..v]);
            start = v;
            kv
        })
    }

    /// The key of the last entry, if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        let n = self.ends.len();
        let start = if n >= 2 { self.ends[n - 2].1 } else { 0 };
        self.ends.last().map(|&(k, _)| &self.buf[start..k])
    }
}

/// A live index entry: its key, encoded secondary key, pk, and (VAS) the record's address.
pub struct Entry<'a> {
    /// The entry's whole key in the index.
    pub key: &'a [u8],
    /// The secondary key, encoded.
    pub sk: &'a [u8],
    /// The pk of the record it indexes.
    pub pk: &'a [u8],
    /// The record's value-log address (VAS indexes only).
    pub addr: Option<ValueAddr>,
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

/// An index entry's secondary key, the pk it stands for, and the seqno of the version it was
/// made from.
pub fn entry_parts<'a>(
    kind: IndexKind,
    key: &'a [u8],
    payload: &[u8],
) -> Result<(&'a [u8], &'a [u8], SeqNo)> {
    let malformed = || Error::corruption("index", 0, "malformed secondary index entry");
    let (sk, pk) = split_entry_key(key).ok_or_else(malformed)?;
    let (_, seq) = decode_payload(kind, payload).ok_or_else(malformed)?;
    Ok((sk, pk, seq))
}

/// Whether a walk through the index on `attr` can answer from its entries alone: every
/// condition of `filter` is on `attr` (a live entry's secondary key is the record's scalar
/// there), and the caller wants no more of the record than that scalar.
pub fn index_decides(filter: &Filter, attr: &AttrPath, wants: &Wants<'_>) -> bool {
    !wants.record
        && filter.conditions.iter().all(|(p, _)| p == attr)
        && wants.attrs.iter().all(|p| *p == attr)
}

/// The scalar of an attribute's value, if it is one.
fn scalar_at(a: &Option<AttrValue>) -> Option<&Scalar> {
    a.as_ref().and_then(AttrValue::scalar)
}

/// The one pass over a record that checks the filter and takes the attributes wanted.
struct Checker<'a> {
    filter: &'a Filter,
    /// The filter's attributes, the index's (if read through one), then those wanted.
    paths: PathSet,
    /// The attributes wanted alone (a record an exact index range gives is not checked).
    wanted: PathSet,
}

impl<'a> Checker<'a> {
    fn new(filter: &'a Filter, index: Option<&'a AttrPath>, wants: &Wants<'a>) -> Self {
        let mut paths: Vec<&AttrPath> = filter.conditions.iter().map(|(p, _)| p).collect();
        paths.extend(index);
        paths.extend_from_slice(wants.attrs);
        Checker {
            filter,
            paths: PathSet::new(&paths),
            wanted: PathSet::new(wants.attrs),
        }
    }

    /// If the record meets the filter (and, from an index entry, still has the entry's
    /// secondary key `sk`), what it holds at the attributes wanted.
    fn check(
        &self,
        stats: &mut QueryStats,
        doc: &Doc,
        sk: Option<&[u8]>,
    ) -> Option<Vec<Option<AttrValue>>> {
        stats.records_examined += 1;
        let conditions = &self.filter.conditions;
        let mut found = match doc.attrs(&self.paths) {
            Some(found) => found,
            // Not JSON: `{}` matches it all the same (every record); it holds nothing at
            // any attribute.
            None if conditions.is_empty() => return Some(vec![None; self.wanted.len()]),
            None => return None,
        };
        let meets = conditions
            .iter()
            .zip(&found)
            .all(|((_, c), a)| scalar_at(a).is_some_and(|s| c.holds(s)));
        let same_sk = sk.is_none_or(|sk| {
            scalar_at(&found[conditions.len()]).is_some_and(|s| s.encoded() == sk)
        });
        (meets && same_sk).then(|| found.split_off(found.len() - self.wanted.len()))
    }

    /// What a record holds at the attributes wanted, unchecked.
    fn wanted(&self, doc: &Doc) -> Vec<Option<AttrValue>> {
        match self.wanted.is_empty() {
            true => Vec::new(),
            false => doc
                .attrs(&self.wanted)
                .unwrap_or_else(|| vec![None; self.wanted.len()]),
        }
    }
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
    let checker = Checker::new(filter, Some(attr), &wants);
    // An index range read for the filter's only condition holds exactly the records meeting
    // it (and live entries are exact): nothing to check.
    let exact = filter.conditions.len() == 1 && filter.conditions[0].0 == *attr;
    let mut visit = |records: &mut dyn Records, e: Entry<'_>, stats: &mut QueryStats| {
        let value = match e.addr {
            Some(addr) => Some(records.read_at(e.pk, addr, stats)?),
            None => records.get(e.pk, stats)?,
        };
        let Some(value) = value else {
            return Ok(true);
        };
        let doc = Doc::new(value);
        let attrs = if exact {
            checker.wanted(&doc)
        } else {
            // A live entry's record has its secondary key; checked anyway while the
            // document is read: a record must never come twice (old and new key).
            match checker.check(stats, &doc, Some(e.sk)) {
                Some(attrs) => attrs,
                None => return Ok(true),
            }
        };
        stats.records_matched += 1;
        f(Match {
            position: e.key,
            pk: e.pk,
            doc: Some(&doc),
            attrs: &attrs,
        })
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
    // The ranges hold exactly the records meeting the first condition.
    let check = filter.conditions.len() > 1;
    let decode = check || !wants.attrs.is_empty();
    let mut attrs: Vec<Option<AttrValue>> = Vec::new();
    let mut visit = |key: &[u8], sk: &[u8], pk: &[u8], stats: &mut QueryStats| {
        if decode {
            let (sk, _) = Scalar::decode(sk).ok_or_else(|| {
                Error::corruption("index", 0, "malformed secondary key in an index entry")
            })?;
            if check {
                stats.records_examined += 1;
                if !filter.conditions.iter().all(|(_, c)| c.holds(&sk)) {
                    return Ok(true);
                }
            }
            attrs.clear();
            attrs.resize(wants.attrs.len(), Some(AttrValue::Scalar(sk)));
        }
        stats.records_matched += 1;
        f(Match {
            position: key,
            pk,
            doc: None,
            attrs: &attrs,
        })
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
