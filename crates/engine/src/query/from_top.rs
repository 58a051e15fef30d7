//! A piece of an index walked from its top, as a top-K largest first needs: the piece's
//! entries are gathered in the order the index keeps them (index blocks only, no record
//! read), then visited last first, and a record is read only for an entry the caller still
//! wants. A walk forward through the piece read the record of every entry in it, though
//! those below the `k`-th best can take no place. Whether an entry is live (no newer version
//! of its record in a memtable) is asked when it is visited, not when it is gathered: a
//! top-K visits a few of the entries it gathers, and each check may search the memtables.
//!
//! What is gathered is a piece: at most 64 blocks of each table and about 64 sample gaps of
//! each memtable (the pooled ends stop where any table's or memtable's given ends stop:
//! `db/piece_bounds.rs`; a memtable's are its sampled keys, `memtable/key_samples.rs`). The
//! walk stops at the first entry the caller refuses, so a record budget spent ends it too
//! (`top.rs`, `Budgeted`). Each entry visited is charged as a walk forward charges it
//! (`Records::examine_entry`), the ones gathered and never visited are not: the pieces
//! follow the tree's shape, and the entries visited, last first across them, do not. So a
//! walk under a work limit is charged the same whatever the pieces, and what it gathers
//! uncharged is bounded by them.

use super::exec::index_decides;
use super::filter::Filter;
use super::matcher::{EntryMatcher, Match, RecordMatcher, Wants};
use super::plan::{Access, Plan};
use super::records::{entry_parts, Entry, EntryBatch, Records, MAX_BATCH};
use super::stats::QueryStats;
use crate::error::{Error, Result};
use crate::index::{decode_payload, IndexKind};
use bytes::Bytes;

/// Record reads issued ahead at a time where the store reads ahead (a modeled device).
const AHEAD: usize = 16;

/// Calls `f` with each record of the plan's index walk that meets `filter`, last first.
/// Before an entry is visited (its record read) `go_on` is asked with its key: false ends
/// the walk there, as does `f` returning false. Returns whether it went through the piece.
#[allow(clippy::too_many_arguments)]
pub fn matches_from_top(
    records: &mut dyn Records,
    filter: &Filter,
    plan: &Plan,
    wants: Wants<'_>,
    stats: &mut QueryStats,
    go_on: &mut dyn FnMut(&[u8]) -> bool,
    f: &mut dyn FnMut(Match<'_>) -> Result<bool>,
) -> Result<bool> {
    let Access::Index {
        id,
        attr,
        kind,
        ranges,
    } = &plan.access
    else {
        return Err(Error::InvalidQuery("no index to walk from its top".into()));
    };
    let mut piece = EntryBatch::default();
    let mut batch = EntryBatch::default();
    for range in ranges {
        let mut from: Option<Vec<u8>> = None;
        loop {
            records.index_entries(*id, range, from.as_deref(), MAX_BATCH, &mut batch, stats)?;
            for (key, payload) in batch.iter() {
                piece.push(key, payload);
            }
            if batch.len() < MAX_BATCH {
                break;
            }
            from = batch.last_key().map(<[u8]>::to_vec);
        }
    }
    let entries: Vec<(&[u8], &[u8])> = piece.iter().collect();
    let decides = index_decides(filter, attr, &wants);
    let mut by_entry = EntryMatcher::new(filter, &wants);
    let by_record = RecordMatcher::new(filter, attr, &wants);
    let ahead = !decides && *kind == IndexKind::Vas && records.reads_ahead();
    // Entries from this index down have had their reads issued.
    let mut issued = entries.len();
    // Each entry's liveness, once asked (the reads ahead ask before the visit does).
    let mut live = Liveness::new(entries.len());
    let malformed = || Error::corruption("index", 0, "malformed secondary index entry");
    for i in (0..entries.len()).rev() {
        let (key, payload) = entries[i];
        if !go_on(key) {
            return Ok(false);
        }
        if !live.of(i, *kind, entries[i], records, stats)? {
            continue;
        }
        let (sk, pk, _) = entry_parts(*kind, key, payload)?;
        records.examine_entry()?;
        let more = match decides {
            true => by_entry.visit(key, sk, pk, stats, f)?,
            false => {
                let (addr, _) = decode_payload(*kind, payload).ok_or_else(malformed)?;
                if ahead && i < issued {
                    let from = issued.saturating_sub(AHEAD);
                    let mut reads = Vec::with_capacity(issued - from);
                    for j in (from..issued).rev() {
                        let (k, p) = entries[j];
                        if !live.of(j, *kind, entries[j], records, stats)? {
                            continue;
                        }
                        let (_, pk, _) = entry_parts(*kind, k, p)?;
                        if let (Some(addr), _) = decode_payload(*kind, p).ok_or_else(malformed)? {
                            reads.push((Bytes::copy_from_slice(pk), addr));
                        }
                    }
                    records.prefetch(&reads);
                    issued = from;
                }
                let e = Entry { key, sk, pk, addr };
                by_record.visit(records, e, stats, f)?
            }
        };
        if !more {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether each gathered entry is live, asked of the store at most once an entry.
struct Liveness(Vec<Option<bool>>);

impl Liveness {
    fn new(n: usize) -> Self {
        Liveness(vec![None; n])
    }

    /// Whether entry `i` (`entry`, of an index of `kind`) is live: no newer version of its
    /// record is in a memtable.
    fn of(
        &mut self,
        i: usize,
        kind: IndexKind,
        entry: (&[u8], &[u8]),
        records: &mut dyn Records,
        stats: &mut QueryStats,
    ) -> Result<bool> {
        if let Some(l) = self.0[i] {
            return Ok(l);
        }
        let (_, pk, seq) = entry_parts(kind, entry.0, entry.1)?;
        let l = !records.superseded(pk, seq, stats)?;
        self.0[i] = Some(l);
        Ok(l)
    }
}
