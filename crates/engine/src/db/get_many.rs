//! Batched gets (`Readable::get_many`), as RocksDB's `MultiGet`: one super version and one
//! seqno for the whole batch, the keys looked up in sorted order so each table's filter, index
//! block and last data block are read once for the keys that fall in it, then the value-log
//! records read together (queued at once on a modeled device, in address order on files).

use super::lookup::{count_get, lookup_in, timed_value_read, ProbeCache};
use super::namespace_set::NsEntry;
use super::read::Reader;
use crate::error::{Error, Result};
use crate::key::{Kind, Nsid, SeqNo, ValueAddr, ValueAt};
use crate::prefetch::Pending;
use crate::stats::Counters;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Most keys one `get_many` call takes: a batch's answers are all held at once, and a caller
/// with more splits them (the device's batches are far smaller: one connection's pipeline).
pub const MAX_GET_MANY_KEYS: usize = 4096;

/// A value still to be read from the value log for answer `slot`.
struct Later {
    slot: usize,
    addr: ValueAddr,
    /// The search step that found the key: the read's time is part of its hit time.
    step: usize,
    /// The address came from a table's point index: the record is the key's only if it
    /// names the key.
    by_point: bool,
}

/// A value-log read of `key`'s value at an address, handed to a prefetch thread.
pub(super) type FarRead = Pending<Result<Bytes>>;

impl<F: Fn()> Reader<'_, F> {
    /// The values of `keys` at seqno `at` (now if `None`), in the order of `keys`, at most
    /// `limit` bytes of them. `far`: on a modeled device, what submits a value-log read to the
    /// prefetch threads (asked only when more than one value is in the log).
    pub(super) fn get_many<S: Fn(ValueAddr, Vec<u8>) -> FarRead>(
        &self,
        e: &NsEntry,
        keys: &[&[u8]],
        at: Option<SeqNo>,
        limit: u64,
        far: impl FnOnce() -> Option<S>,
    ) -> Result<Vec<Option<Bytes>>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        e.check_live()?;
        if keys.len() > MAX_GET_MANY_KEYS {
            return Err(Error::TooManyKeys {
                count: keys.len(),
                limit: MAX_GET_MANY_KEYS,
            });
        }
        let (ns, c) = (e.id, &e.counters);
        // Before the lookups: the segments of the addresses they find outlive the batch. Both
        // guards are brief ones, as a get's: the batch ends on this thread (reads submitted on
        // the NAND model are waited for here), and they touch no shared count.
        let _pin = self.vlog_reader.pin_brief();
        // What row cache inserts are checked against: the seqno before the super version,
        // as for one get (`Reader::get`).
        let cached_at = self.writes.read_seq(at);
        // The super version first, then the seqno, as for one get.
        let sv = self.versions.super_version_brief();
        let snapshot = self.writes.read_seq(at);
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&a, &b| keys[a].cmp(keys[b]));
        let mut out: Vec<Option<Bytes>> = vec![None; keys.len()];
        let mut later = Vec::new();
        // A key asked twice is looked up once: (its first slot, the slots repeating it).
        let mut repeats: Vec<(usize, usize)> = Vec::new();
        let mut probes = ProbeCache::for_gets();
        let mut prev: Option<usize> = None;
        // Latest-state batches use the row cache, as gets do; `missed`: the slots to fill it.
        let cache = self.row_cache.filter(|_| at.is_none());
        let mut missed = Vec::new();
        for &i in &order {
            if let Some(p) = prev.filter(|&p| keys[p] == keys[i]) {
                Counters::add(&c.local().gets, 1);
                repeats.push((p, i));
                continue;
            }
            prev = Some(i);
            if let Some(rc) = cache {
                if let Some(v) = rc.get(ns, keys[i]) {
                    Counters::add(&c.local().gets, 1);
                    Counters::add(&c.local().row_cache_hits, 1);
                    out[i] = Some(v);
                    continue;
                }
                Counters::add(&c.local().row_cache_misses, 1);
                missed.push(i);
            }
            let hit = lookup_in(&sv, ns, keys[i], snapshot, c, Some(&mut probes), true)?;
            count_get(c, hit.as_ref());
            let Some(hit) = hit.filter(|h| h.kind == Kind::Put) else {
                continue;
            };
            match (hit.value, hit.addr) {
                (Some(v), _) => out[i] = Some(v),
                (None, Some(addr)) => later.push(Later {
                    slot: i,
                    addr,
                    step: hit.step,
                    by_point: hit.by_point,
                }),
                (None, None) => {
                    return Err(Error::corruption(
                        "index",
                        0,
                        "entry without a value or an address",
                    ))
                }
            }
        }
        drop(sv);
        // Each answer's bytes: a value asked twice is held twice by the caller.
        let mut size: Vec<u64> = out
            .iter()
            .map(|v| v.as_ref().map_or(0, |v| v.len() as u64))
            .collect();
        for l in &later {
            size[l.slot] = u64::from(l.addr.len);
        }
        let bytes = size.iter().sum::<u64>() + repeats.iter().map(|&(f, _)| size[f]).sum::<u64>();
        if bytes > limit {
            return Err(Error::TooManyBytes { bytes, limit });
        }
        let batch = Batch {
            ns,
            keys,
            at,
            bytes,
            limit,
        };
        self.read_later(&batch, later, &mut out, c, far)?;
        if let Some(rc) = cache {
            for i in missed {
                if let Some(v) = &out[i] {
                    rc.insert(ns, keys[i], v, cached_at);
                }
            }
        }
        for (first, again) in repeats {
            out[again] = out[first].clone();
        }
        Ok(out)
    }

    /// Reads the values of `later` into `out`: submitted together on a modeled device (its
    /// dies serve them at once), else one after another in address order (the page cache
    /// answers them; a hand-off to a prefetch thread would cost more than the read).
    fn read_later<S: Fn(ValueAddr, Vec<u8>) -> FarRead>(
        &self,
        batch: &Batch,
        mut later: Vec<Later>,
        out: &mut [Option<Bytes>],
        c: &Arc<Counters>,
        far: impl FnOnce() -> Option<S>,
    ) -> Result<()> {
        if later.is_empty() {
            return Ok(());
        }
        let mut bytes = batch.bytes;
        let (ns, keys) = (batch.ns, batch.keys);
        later.sort_by_key(|l| (l.addr.segment, l.addr.offset));
        if let Some(submit) = (later.len() > 1).then(far).flatten() {
            let pending: Vec<_> = later
                .iter()
                .map(|l| submit(l.addr, keys[l.slot].to_vec()))
                .collect();
            for (l, p) in later.iter().zip(pending) {
                let v = timed_value_read(c, l.step, || {
                    p.wait()
                        .unwrap_or_else(|| Err(Error::Background("prefetch reader stopped".into())))
                });
                out[l.slot] = self.read_or_long_way(batch, l, v, &mut bytes, c)?;
            }
            return Ok(());
        }
        let mut segment = crate::vlog::LastSegment::default();
        for l in &later {
            let v = timed_value_read(c, l.step, || {
                self.vlog_reader
                    .read_value_in(&mut segment, l.addr, ns, keys[l.slot], c)
            });
            out[l.slot] = self.read_or_long_way(batch, l, v, &mut bytes, c)?;
        }
        Ok(())
    }

    /// The answer of `l` given its value read `v`: the value, or, for an address from a
    /// point index whose record is not the key's (or does not read), the answer of the long
    /// way through the data blocks (as `Reader::get`), still within the batch's byte limit.
    fn read_or_long_way(
        &self,
        batch: &Batch,
        l: &Later,
        v: Result<Bytes>,
        bytes: &mut u64,
        c: &Counters,
    ) -> Result<Option<Bytes>> {
        match v {
            Ok(v) => return Ok(Some(v)),
            Err(e) if !l.by_point => return Err(e),
            Err(_) => {}
        }
        let (ns, key) = (batch.ns, batch.keys[l.slot]);
        let v = match self
            .lookup(ns, key, batch.at, c)?
            .filter(|h| h.kind == Kind::Put)
            .and_then(|h| h.value_at())
        {
            None => return Ok(None),
            Some(ValueAt::Here(v)) => v,
            Some(ValueAt::Log(addr)) => self.vlog_reader.read_value(addr, ns, key, c)?,
        };
        *bytes = *bytes - u64::from(l.addr.len) + v.len() as u64;
        if *bytes > batch.limit {
            return Err(Error::TooManyBytes {
                bytes: *bytes,
                limit: batch.limit,
            });
        }
        Ok(Some(v))
    }
}

/// A batch's keys and bounds, for its value reads.
struct Batch<'a> {
    ns: Nsid,
    keys: &'a [&'a [u8]],
    at: Option<SeqNo>,
    /// Bytes its answers were counted at before the value reads.
    bytes: u64,
    limit: u64,
}

#[cfg(test)]
#[path = "get_many_tests.rs"]
mod tests;
