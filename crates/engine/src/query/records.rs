//! The reads a query makes ([`Records`], at one snapshot of one namespace) and the index
//! entries they give.

use super::filter::KeyRange;
use super::stats::QueryStats;
use crate::error::{Error, Result};
use crate::index::{decode_payload, split_entry_key, IndexKind};
use crate::key::{SeqNo, ValueAddr};
use bytes::Bytes;

/// Index entries asked of a store at a time, at most.
pub(super) const MAX_BATCH: usize = 512;

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
