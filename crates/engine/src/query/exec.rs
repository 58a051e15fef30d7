//! Running a plan: the records that meet a filter, read through an index or a scan, as pages
//! of found records, top-K by an attribute, or an aggregate.
//!
//! Every candidate an index gives is checked against the whole filter on the record's current
//! value, and its entry's secondary key against the record's: an entry a later write made
//! stale (the record's attribute changed, or it was deleted) drops out here.

use super::plan::{Access, Plan};
use super::Filter;
use crate::error::{Error, Result};
use crate::index::{decode_payload, split_entry_key, AttrPath, IndexKind, Scalar};
use crate::key::{SeqNo, ValueAddr};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

/// What a query read and how long each step took: the breakdown of the paper's Figures 11-13.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueryStats {
    /// How the records were reached (`index on ATTR`, or a scan).
    pub plan: String,
    /// Entries read from the secondary index.
    pub index_entries: u64,
    /// Lookups of a pk in the primary index.
    pub primary_lookups: u64,
    /// Records whose value was read (from the value log, or the memtable).
    pub value_reads: u64,
    /// Records checked against the filter, and those that met it.
    pub records_examined: u64,
    /// Records that met the filter.
    pub records_matched: u64,
    /// Bytes of keys and values (or projections) in the result.
    pub bytes_returned: u64,
    /// Storage reads and pages read, by purpose (filter, index, data, value, log, other).
    pub reads: [u64; 6],
    /// Pages those reads touched, by the same purposes.
    pub pages: [u64; 6],
    /// Time in the secondary index, in primary lookups, in value reads (a scan's reads count
    /// as value reads), in nanoseconds.
    pub secondary_search_ns: u64,
    /// Time in primary lookups, in nanoseconds.
    pub primary_search_ns: u64,
    /// Time in value reads, in nanoseconds.
    pub value_read_ns: u64,
}

/// The reads a query makes, at one snapshot of one namespace.
pub trait Records {
    /// Up to `max` entries (key and value) of index `index` in `[start, end)`, after `after`
    /// if given, in order, in place of what `out` held.
    fn index_entries(
        &mut self,
        index: crate::key::Nsid,
        range: &super::KeyRange,
        after: Option<&[u8]>,
        max: usize,
        out: &mut EntryBatch,
        stats: &mut QueryStats,
    ) -> Result<()>;

    /// Whether a version of `pk` newer than `seq` is still in a memtable: the flush that
    /// will put a tombstone on the entry of the older version has not happened yet.
    fn superseded(&mut self, pk: &[u8], seq: SeqNo, stats: &mut QueryStats) -> Result<bool>;

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

/// A record that met the filter.
pub struct Match<'a> {
    /// Where the query resumes after this record: its index entry key, or its pk.
    pub position: &'a [u8],
    /// The record's key.
    pub pk: &'a [u8],
    /// Its value as stored.
    pub value: &'a Bytes,
    /// Its value as a document, parsed when first asked for.
    pub doc: &'a Doc,
}

/// A record's document, parsed on first use: a find of whole records through an exact index
/// range never parses it.
pub struct Doc {
    value: Bytes,
    /// `None`: the value is not JSON.
    parsed: std::cell::OnceCell<Option<Value>>,
}

impl Doc {
    /// The document of `value`, not parsed yet.
    pub fn new(value: Bytes) -> Doc {
        Doc {
            value,
            parsed: std::cell::OnceCell::new(),
        }
    }

    /// The document (`null` if the value is not JSON).
    pub fn get(&self) -> &Value {
        self.parse().unwrap_or(&Value::Null)
    }

    /// The document, `None` if the value is not JSON (no record a filter can meet).
    pub fn parse(&self) -> Option<&Value> {
        self.parsed
            .get_or_init(|| serde_json::from_slice(&self.value).ok())
            .as_ref()
    }

    /// Whether the value is JSON, checked without building it.
    pub fn is_json(&self) -> bool {
        match self.parsed.get() {
            Some(p) => p.is_some(),
            None => serde_json::from_slice::<serde::de::IgnoredAny>(&self.value).is_ok(),
        }
    }

    /// The scalars at `paths`: from the document if it was built, else read off the bytes
    /// in one pass that builds nothing else (`index::extract`).
    pub fn scalars(&self, paths: &[&AttrPath]) -> Vec<Option<Scalar>> {
        match self.parsed.get() {
            Some(Some(v)) => paths.iter().map(|p| p.scalar(v)).collect(),
            Some(None) => vec![None; paths.len()],
            None => crate::index::extract(&self.value, paths),
        }
    }

    /// The attributes at `projection` as an object keyed by path (those missing left out):
    /// from the document if it was built, else each value parsed alone from where it lies in
    /// the bytes (`index::locate`), the rest of the record skipped as it is read.
    pub fn project(&self, projection: &[AttrPath]) -> Value {
        if self.parsed.get().is_some() {
            return project(self.get(), projection);
        }
        let paths: Vec<&AttrPath> = projection.iter().collect();
        let mut out = serde_json::Map::new();
        if let Some(spans) = crate::index::locate(&self.value, &paths) {
            for (p, span) in projection.iter().zip(spans) {
                let Some(span) = span else { continue };
                match serde_json::from_slice::<Value>(&self.value[span]) {
                    Ok(v) => {
                        out.insert(p.as_str().to_string(), v);
                    }
                    // The scanner took what the parser refuses: trust the parser.
                    Err(_) => return project(self.get(), projection),
                }
            }
        }
        Value::Object(out)
    }

    /// The scalar at `path`, if there is one (as [`scalars`](Self::scalars) for one path).
    pub fn scalar(&self, path: &AttrPath) -> Option<Scalar> {
        self.scalars(&[path]).pop().flatten()
    }
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
    ranges: &[super::KeyRange],
    after: Option<&[u8]>,
    expect: Option<u64>,
    read_values: bool,
    stats: &mut QueryStats,
    f: &mut dyn FnMut(&mut dyn Records, Entry<'_>, &mut QueryStats) -> Result<bool>,
) -> Result<()> {
    let malformed = || Error::corruption("index", 0, "malformed secondary index entry");
    for range in ranges {
        // Ranges are in key order: skip those wholly before the resume point.
        let mut from: Option<Vec<u8>> = match (after, &range.end) {
            (Some(a), Some(end)) if a >= end.as_slice() => continue,
            (Some(a), _) if a >= range.start.as_slice() => Some(a.to_vec()),
            _ => None,
        };
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

/// Calls `f` with every record meeting `filter`, in the plan's order (index order, or pk
/// order), starting after `after`; stops when `f` returns false. `expect`: how many the
/// caller will take at most, if it knows (the size of the first read).
pub fn for_each_match(
    records: &mut dyn Records,
    filter: &Filter,
    plan: &Plan,
    after: Option<&[u8]>,
    expect: Option<u64>,
    stats: &mut QueryStats,
    f: &mut dyn FnMut(Match<'_>) -> Result<bool>,
) -> Result<()> {
    // The scalars a check reads: the filter's attributes, then an index's own.
    let mut wanted: Vec<&AttrPath> = filter.conditions.iter().map(|(p, _)| p).collect();
    if let Access::Index { attr, .. } = &plan.access {
        wanted.push(attr);
    }
    // Whether the record meets the filter (and, from an index entry, still has the entry's
    // secondary key `sk`), from the scalars it needs alone.
    let check = |stats: &mut QueryStats, doc: &Doc, sk: Option<&[u8]>| -> bool {
        stats.records_examined += 1;
        if wanted.is_empty() {
            return doc.is_json();
        }
        let found = doc.scalars(&wanted);
        let meets = filter
            .conditions
            .iter()
            .zip(&found)
            .all(|((_, c), s)| s.as_ref().is_some_and(|s| c.holds(s)));
        meets
            && sk.is_none_or(|sk| {
                found
                    .last()
                    .and_then(Option::as_ref)
                    .is_some_and(|s| s.encoded() == sk)
            })
    };
    // An index range read for the filter's only condition holds exactly the records meeting
    // it (and live entries are exact): nothing to check, no document to parse.
    let exact = filter.conditions.len() == 1;
    match &plan.access {
        Access::Index {
            id, ranges, kind, ..
        } => {
            let mut visit = |records: &mut dyn Records, e: Entry<'_>, stats: &mut QueryStats| {
                let value = match e.addr {
                    Some(addr) => Some(records.read_at(e.pk, addr, stats)?),
                    None => records.get(e.pk, stats)?,
                };
                let Some(value) = value else {
                    return Ok(true);
                };
                let doc = Doc::new(value);
                if !exact {
                    // A live entry's record has its secondary key; checked anyway while the
                    // document is parsed: a record must never come twice (old and new key).
                    if !check(stats, &doc, Some(e.sk)) {
                        return Ok(true);
                    }
                }
                stats.records_matched += 1;
                f(Match {
                    position: e.key,
                    pk: e.pk,
                    value: &doc.value,
                    doc: &doc,
                })
            };
            for_each_entry(
                records, *id, *kind, ranges, after, expect, true, stats, &mut visit,
            )?;
        }
        Access::Scan => {
            let mut from = after.map(<[u8]>::to_vec);
            let mut size = first_batch(expect);
            loop {
                let batch = records.scan(from.as_deref(), size, stats)?;
                for (pk, value) in &batch {
                    let doc = Doc::new(value.clone());
                    if check(stats, &doc, None) {
                        stats.records_matched += 1;
                        let m = Match {
                            position: pk,
                            pk,
                            value,
                            doc: &doc,
                        };
                        if !f(m)? {
                            return Ok(());
                        }
                    }
                }
                match batch.last() {
                    Some((pk, _)) if batch.len() == size => from = Some(pk.to_vec()),
                    _ => break,
                }
                size = (size * 2).min(MAX_BATCH);
            }
        }
    }
    Ok(())
}

/// The attributes of `doc` named by `projection`, as an object keyed by path.
pub fn project(doc: &Value, projection: &[AttrPath]) -> Value {
    let mut out = serde_json::Map::new();
    for p in projection {
        if let Some(v) = p.lookup(doc) {
            out.insert(p.as_str().to_string(), v.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
