//! The read path: point lookups through memtables and levels, values, key listings.

use super::lookup::{count_get, lookup_in, timed_value_read, Hit};
use super::namespace_set::NsEntry;
use super::versions::Versions;
use super::write_queue::WriteQueue;
use crate::error::{Error, Result};
use crate::key::{self, IndexValue, Kind, Nsid, SeqNo, ValueAt};
use crate::row_cache::RowCache;
use crate::stats::{Counters, GetPath};
use crate::version::TableHandle;
use crate::vlog::VlogReader;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The parts a read touches, borrowed (built on the stack for each read), and what runs
/// (in tests) between a get's load of the super version and its read of the seqno.
pub(super) struct Reader<'a, F> {
    pub(super) closed: &'a AtomicBool,
    pub(super) versions: &'a Versions,
    pub(super) writes: &'a WriteQueue,
    pub(super) vlog_reader: &'a VlogReader,
    /// Values of recently read keys (`None`: off).
    pub(super) row_cache: Option<&'a RowCache>,
    pub(super) after_super_version: F,
}

impl<F: Fn()> Reader<'_, F> {
    /// `lookup` counted as a get in the namespace's counters.
    pub(super) fn counted_lookup(
        &self,
        ns: Nsid,
        key: &[u8],
        at: Option<SeqNo>,
        c: &Counters,
    ) -> Result<Option<Hit>> {
        let hit = self.lookup(ns, key, at, c)?;
        count_get(c, hit.as_ref());
        Ok(hit)
    }

    pub(super) fn contains(&self, e: &NsEntry, key: &[u8], at: Option<SeqNo>) -> Result<bool> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        e.check_live()?;
        Ok(self
            .counted_lookup(e.id, key, at, &e.counters)?
            .is_some_and(|h| h.kind == Kind::Put))
    }

    pub(super) fn get(&self, e: &NsEntry, key: &[u8], at: Option<SeqNo>) -> Result<Option<Bytes>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        e.check_live()?;
        let (ns, c) = (e.id, &*e.counters);
        // Only latest-state reads use the row cache: a snapshot may need an older value.
        let cache = self.row_cache.filter(|_| at.is_none());
        if let Some(rc) = cache {
            if let Some(v) = rc.get(ns, key) {
                Counters::add(&c.local().gets, 1);
                Counters::add(&c.local().row_cache_hits, 1);
                return Ok(Some(v));
            }
            Counters::add(&c.local().row_cache_misses, 1);
        }
        // Before the lookup: the segment of the address it finds outlives this get.
        let _pin = self.vlog_reader.pin_brief();
        // What a row cache insert is checked against: the seqno before the super version.
        // Not the lookup's: a write after a memtable switch goes to a memtable that super
        // version lacks, so the value found is the newest only up to the switch.
        let cached_at = self.writes.read_seq(at);
        // The super version first, then the seqno (see `lookup`).
        let mut hit = {
            let sv = self.versions.super_version_brief();
            (self.after_super_version)();
            let seq = self.writes.read_seq(at);
            lookup_in(&sv, ns, key, seq, c, None, true)?
        };
        // A point index's record is the key's if the record names it; if not (another key
        // with its fingerprint, in the index about once in two billion probes) or it cannot
        // be read, the long way through the data blocks answers, and reports what it finds.
        let mut checked = None;
        if let Some(h) = hit.as_ref().filter(|h| h.by_point) {
            let read = |addr| self.vlog_reader.read_value(addr, ns, key, c).ok();
            checked = timed_value_read(c, h.step, || h.addr.and_then(read));
            if checked.is_none() {
                hit = self.lookup(ns, key, at, c)?;
            }
        }
        count_get(c, hit.as_ref());
        let Some(hit) = hit else {
            return Ok(None);
        };
        if hit.kind == Kind::Delete {
            return Ok(None);
        }
        let step = hit.step;
        let v = match (checked, hit.value_at()) {
            (Some(v), _) => v,
            (None, Some(ValueAt::Here(v))) => v,
            (None, Some(ValueAt::Log(addr))) => {
                timed_value_read(c, step, || self.vlog_reader.read_value(addr, ns, key, c))?
            }
            (None, None) => {
                return Err(Error::corruption(
                    "index",
                    0,
                    "entry without a value or an address",
                ))
            }
        };
        if let Some(rc) = cache {
            rc.insert(ns, key, &v, cached_at);
        }
        Ok(Some(v))
    }

    /// The value a scan's put entry holds (`iv`), read from the value log unless it is at
    /// hand, and its record's address (none for a table-only value).
    pub(super) fn scanned_value(
        &self,
        iv: Option<IndexValue>,
        ns: Nsid,
        key: &[u8],
        c: &Counters,
    ) -> Result<(Bytes, Option<key::ValueAddr>)> {
        let (addr, value) = iv.map(IndexValue::into_parts).unwrap_or_default();
        match ValueAt::of(value, addr) {
            Some(ValueAt::Here(v)) => Ok((v, addr)),
            Some(ValueAt::Log(a)) => Ok((self.vlog_reader.read_value(a, ns, key, c)?, addr)),
            None => Err(Error::corruption("index", 0, "entry without a value")),
        }
    }

    /// The newest version of `(ns, key)` visible at seqno `at` (now if `None`): memtables, then L0 newest first, then
    /// the namespace's runs newest first, then one table per deeper level, each asked through
    /// its filter first. Each step's outcome and time go into the cost-model counters.
    pub(super) fn lookup(
        &self,
        ns: Nsid,
        key: &[u8],
        at: Option<SeqNo>,
        c: &Counters,
    ) -> Result<Option<Hit>> {
        // The super version first, then the seqno: a compaction after the seqno could drop a
        // version at or below it that a newer one shadows; the super version keeps the
        // tables it had. A write made after a memtable switch that follows the load is
        // missed (that super version lacks its memtable): the get began before that write
        // was acknowledged, so the older answer is still a correct one.
        let sv = self.versions.super_version_brief();
        let snapshot = self.writes.read_seq(at);
        lookup_in(&sv, ns, key, snapshot, c, None, false)
    }

    /// The tables a get of `(ns, key)` would consult now, memtables aside: what
    /// [`search_tables`] asks, each through its filter, if none answers.
    pub(super) fn get_path(&self, ns: Nsid, key: &[u8]) -> Result<GetPath> {
        let version = self.versions.super_version_brief().version.clone();
        let user = key::user_part(ns, key);
        let consulted = |tables: &[Arc<TableHandle>]| -> Result<usize> {
            let mut n = 0;
            for t in tables.iter().filter(|t| t.covers(&user)) {
                n += usize::from(t.reader()?.ns_may_contain(ns, key));
            }
            Ok(n)
        };
        let mut levels = vec![consulted(&version.levels[0])?];
        levels.extend(
            (1..version.num_levels())
                .map(|l| usize::from(version.find_in_level(l, &user).is_some())),
        );
        Ok(GetPath {
            levels,
            runs: consulted(version.runs_of(ns))?,
        })
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
