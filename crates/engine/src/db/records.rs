//! The reads of one query at a snapshot of a namespace (index entries, memtable checks,
//! primary lookups, value reads, scans), counted and timed per step for its statistics.

use super::read::Reader;
use super::super_version::SuperVersion;
use crate::error::{Error, Result};
use crate::index::split_entry_key;
use crate::index::IndexKind;
use crate::iter::SnapshotScan;
use crate::key::{self, Kind, Nsid, SeqNo, ValueAt};
use crate::key_hashes::{key_hash, KeyHashes};
use crate::prefetch::ReadPool;
use crate::query::{entry_parts, EntryBatch, EntryVisitor, KeyRange, QueryStats, Records};
use crate::stats::Counters;
use crate::storage::IoPurpose;
use crate::vlog::VlogReader;
use bytes::Bytes;
use quanta::Instant;
use std::collections::HashMap;
use std::sync::Arc;

/// Memtable checks of one query before it first tries to take its namespace's memtable keys
/// at once. A check probes each memtable's key filter, a cache miss of ~0.1 us (the filter is
/// sized for the memtable's whole budget): a count over 48,000 index hits after 6,000 writes
/// spent half its time there.
const FIRST_TRY: usize = 128;

/// Units of a query's work limit one record read takes (a primary lookup and a value read,
/// ~1 us on files), against one for a live index entry examined (~50 ns). Only what the
/// data itself decides is charged (docs/queries.md, Work limits): tombstones, versions a
/// newer one supersedes and table blocks depend on where flushes and compactions left the
/// tree, and would make the same query answer or stop by the tree's shape.
pub const RECORD_WORK: u64 = 16;

/// Maps of key hashes of namespace `ns` in each of `sv`'s memtables (see
/// [`crate::memtable::Memtable::key_hashes`]) that a read at `seq` may use: those taken
/// already, or taken now if each memtable holds no more entries of it than the checks for
/// newer versions made on it, these `checks` (made since the caller last asked) included.
fn key_hashes(
    sv: &SuperVersion,
    ns: Nsid,
    seq: SeqNo,
    visible: SeqNo,
    checks: usize,
) -> Option<Vec<Arc<KeyHashes>>> {
    std::iter::once(&sv.mem)
        .chain(sv.imm.iter().map(|f| &f.mem))
        .map(|m| {
            m.cached_key_hashes(ns, seq)
                .or_else(|| m.key_hashes(ns, visible, checks))
        })
        .collect()
}

/// What a query's reads take from the open database, owned: a count's other half and a
/// value read ahead run on reader threads, and hold it.
pub(super) trait RecordSource: Clone + Send + Sync + 'static {
    /// The parts a primary lookup touches.
    fn reader(&self) -> Reader<'_, impl Fn() + '_>;
    fn vlog_reader(&self) -> &VlogReader;
    fn super_version(&self) -> Arc<SuperVersion>;
    /// The newest seqno readers see.
    fn visible_seq(&self) -> SeqNo;
    /// The page size reads are counted in.
    fn page_size(&self) -> u64;
    /// The reader threads reads ahead and a count's other half run on.
    fn prefetcher(&self) -> &Arc<ReadPool>;
    /// Whether the storage is a modeled NAND device (reads ahead pay there).
    fn models_nand(&self) -> bool;
    /// `Options::count_split_blocks`.
    fn count_split_blocks(&self) -> usize;
}

/// The reads of one query, at one snapshot seqno of one namespace.
pub(super) struct SnapshotRecords<S: RecordSource> {
    source: S,
    pub(super) ns: Nsid,
    pub(super) seq: SeqNo,
    /// The query's own counters: its reads by purpose go into its statistics.
    counters: Arc<Counters>,
    /// One super version for every walk and memtable check of the query: an index entry
    /// read from a table and the check for a newer version of its pk in the memtables must
    /// see the same flushes (else a flush between them hides both the newer version and the
    /// tombstone it put on the entry).
    sv: Arc<SuperVersion>,
    /// The open walk of the last `index_entries` or `scan` call and the key it stopped at,
    /// continued when the next call resumes there.
    walk: Option<(Nsid, Vec<u8>, SnapshotScan)>,
    /// Value reads issued ahead (a VAS find's next entries), by address.
    ahead: HashMap<(u64, u64), crate::prefetch::Pending<Result<Bytes>>>,
    /// The memtable key of the pk a memtable check looks for (kept: one per entry).
    user_key: Vec<u8>,
    /// Memtable checks so far, and at how many the next try to take the namespace's
    /// memtable keys at once comes (see `superseded`).
    checks: usize,
    next_try: usize,
    /// Checks already told to the memtables (`Memtable::key_hashes`).
    reported: usize,
    /// The newest seqno of each of the namespace's keys by key hash, a map per memtable, once
    /// taken: a pk absent from them, or not newer there, has no newer version.
    newest: Option<Vec<Arc<KeyHashes>>>,
    /// The value-log segment the last value read was in.
    segment: crate::vlog::LastSegment,
    /// The work left under the query's limit, and the limit (`None`: no limit).
    work: Option<(u64, u64)>,
    _pin: crate::vlog::ReadPin,
}

impl<S: RecordSource> SnapshotRecords<S> {
    /// The reads of a query on `ns` at `seq`, under a limit of `work` units if given.
    pub(super) fn new(source: &S, ns: Nsid, seq: SeqNo, work: Option<u64>) -> Self {
        SnapshotRecords {
            source: source.clone(),
            ns,
            seq,
            counters: Arc::new(Counters::new(source.page_size())),
            sv: source.super_version(),
            walk: None,
            ahead: HashMap::new(),
            user_key: Vec::new(),
            checks: 0,
            next_try: FIRST_TRY,
            reported: 0,
            newest: None,
            segment: Default::default(),
            work: work.map(|w| (w, w)),
            _pin: source.vlog_reader().pin(),
        }
    }

    /// Takes `units` of the query's work limit, or stops the query once it is spent.
    fn spend(&mut self, units: u64) -> Result<()> {
        match &mut self.work {
            None => Ok(()),
            Some((left, limit)) => match left.checked_sub(units) {
                Some(l) => {
                    *left = l;
                    Ok(())
                }
                None => Err(Error::WorkLimit { limit: *limit }),
            },
        }
    }

    /// A walk over namespace (or index) `id` positioned after `after` (or at `start`).
    fn walk(&mut self, id: Nsid, start: &[u8], after: Option<&[u8]>) -> Result<SnapshotScan> {
        if let (Some(a), Some((wid, last, _))) = (after, &self.walk) {
            if *wid == id && last.as_slice() == a {
                let (_, _, mut scan) = self.walk.take().expect("checked above");
                scan.next()?;
                return Ok(scan);
            }
        }
        let config = crate::table::IterConfig {
            fill_cache: true,
            readahead: None,
        };
        let mut scan = self.sv.scan(id, self.seq, &self.counters, &config)?;
        scan.seek(after.map_or(start, |a| a.max(start)))?;
        if let Some(a) = after {
            while scan.valid() && scan.key() <= a {
                scan.next()?;
            }
        }
        Ok(scan)
    }

    /// The value at `addr`, through the segment file the query read last.
    fn read_value(&mut self, pk: &[u8], addr: key::ValueAddr) -> Result<Bytes> {
        self.source.vlog_reader().read_value_in(
            &mut self.segment,
            addr,
            self.ns,
            pk,
            &self.counters,
        )
    }

    pub(super) fn finish(&self, stats: &mut QueryStats) {
        for p in IoPurpose::ALL {
            let i = p as usize;
            stats.reads[i] += self.counters.sum_of(|s| &s.reads[i]);
            stats.pages[i] += self.counters.sum_of(|s| &s.pages[i]);
        }
    }

    /// [`Records::superseded`] with the entry's seqno asked of `seq` only when a memtable
    /// may hold a version of `pk` (decoding it cost more than the rest of the check).
    fn superseded_by(
        &mut self,
        pk: &[u8],
        seq: impl Fn() -> Result<SeqNo>,
        stats: &mut QueryStats,
    ) -> Result<bool> {
        let sv = &self.sv;
        // Right after a flush (or on a database at rest) there is nothing to look in.
        if sv.imm.is_empty() && sv.mem.is_empty() {
            return Ok(false);
        }
        self.checks += 1;
        if self.newest.is_none() && (self.checks == 1 || self.checks == self.next_try) {
            // The maps another query took, at once; else the namespace's memtable keys
            // walked once this query's checks and others' since the last map pay for it
            // (`Memtable::key_hashes`), asked again at twice as many checks.
            let t = Instant::now();
            if self.checks > 1 {
                self.next_try *= 2;
            }
            let fresh = self.checks - self.reported;
            self.reported = self.checks;
            let visible = self.source.visible_seq();
            self.newest = key_hashes(sv, self.ns, self.seq, visible, fresh);
            stats.secondary_search_ns += t.elapsed().as_nanos() as u64;
        }
        // The maps answer in a few nanoseconds (untimed): a pk not there, or with no version
        // newer than `seq`, or whose newest version there is newer and visible to this read.
        // Else (a version past the snapshot, or keys whose hashes collide) the memtables
        // say exactly.
        if let Some(maps) = &self.newest {
            let h = key_hash(pk);
            let mut unsure = false;
            for m in maps.iter() {
                let Some((s, k)) = m.get(h) else {
                    continue;
                };
                if *s <= seq()? {
                    continue;
                }
                match k {
                    Some(k)
                        if *s <= self.seq
                            && k.get(key::NSID_LEN..).is_some_and(|k| key::bytes_eq(k, pk)) =>
                    {
                        return Ok(true)
                    }
                    _ => unsure = true,
                }
            }
            if !unsure {
                return Ok(false);
            }
        }
        let seq = seq()?;
        key::put_user_part(&mut self.user_key, self.ns, pk);
        let t = Instant::now();
        // The newest memtable holding the pk has its newest version.
        let newer = std::iter::once(&sv.mem)
            .chain(sv.imm.iter().map(|f| &f.mem))
            .find_map(|m| m.get(&self.user_key, self.seq))
            .is_some_and(|(s, _)| s > seq);
        stats.secondary_search_ns += t.elapsed().as_nanos() as u64;
        Ok(newer)
    }

    /// The reads of the same query for another thread: the same super version, seqno and
    /// counters, without a work limit (a limited query is never split) or reads of its own.
    pub(super) fn fork(&self) -> SnapshotRecords<S> {
        SnapshotRecords {
            counters: self.counters.clone(),
            sv: self.sv.clone(),
            newest: self.newest.clone(),
            ..SnapshotRecords::new(&self.source, self.ns, self.seq, None)
        }
    }

    /// Whether the query runs under a work limit.
    pub(super) fn limited(&self) -> bool {
        self.work.is_some()
    }

    pub(super) fn source(&self) -> &S {
        &self.source
    }

    /// The live entries of index `index` in `range` (after `after`, if given).
    pub(super) fn count_live(
        &mut self,
        index: Nsid,
        kind: IndexKind,
        range: &KeyRange,
        after: Option<&[u8]>,
        stats: &mut QueryStats,
    ) -> Result<u64> {
        let mut live = 0;
        self.walk_live(index, kind, range, after, false, stats, |_, _, _, _| {
            live += 1;
            Ok(true)
        })?;
        Ok(live)
    }

    /// The version the query reads (its tables).
    pub(super) fn version(&self) -> &Arc<crate::version::Version> {
        &self.sv.version
    }

    pub(super) fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// [`Records::for_each_live_entry`] in place: the walk's entries borrowed, never copied
    /// out. Without `parts` (a count), an entry is not taken apart unless it must be checked
    /// against the memtables; `f` then gets empty secondary keys and pks.
    #[allow(clippy::too_many_arguments)]
    fn walk_live<F>(
        &mut self,
        index: Nsid,
        kind: IndexKind,
        range: &KeyRange,
        after: Option<&[u8]>,
        parts: bool,
        stats: &mut QueryStats,
        mut f: F,
    ) -> Result<bool>
    where
        F: FnMut(&[u8], &[u8], &[u8], &mut QueryStats) -> Result<bool>,
    {
        let t = Instant::now();
        let mut scan = self.walk(index, &range.start, after)?;
        // With the memtables empty no entry can be superseded: its seqno is not needed.
        let quiet = self.sv.imm.is_empty() && self.sv.mem.is_empty();
        let malformed = || Error::corruption("index", 0, "malformed index entry");
        let (mut entries, mut to_the_end) = (0u64, true);
        while scan.valid() {
            let key = scan.key();
            if range
                .end
                .as_ref()
                .is_some_and(|e| key::cmp_bytes(key, e).is_ge())
            {
                break;
            }
            if scan.kind() == Kind::Put {
                entries += 1;
                let (sk, pk) = match (quiet, parts) {
                    (true, false) => (&[][..], &[][..]),
                    (true, true) => split_entry_key(key).ok_or_else(malformed)?,
                    (false, _) => {
                        let (sk, pk) = split_entry_key(key).ok_or_else(malformed)?;
                        // The entry's value, and its seqno in it, are read only if a memtable
                        // may hold its pk.
                        let seq = || {
                            let payload = scan.table_payload().ok_or_else(malformed)?;
                            entry_parts(kind, key, payload).map(|(_, _, seq)| seq)
                        };
                        if self.superseded_by(pk, seq, stats)? {
                            scan.next()?;
                            continue;
                        }
                        (sk, pk)
                    }
                };
                self.spend(1)?;
                if !f(key, sk, pk, stats)? {
                    to_the_end = false;
                    break;
                }
            }
            scan.next()?;
        }
        stats.index_entries += entries;
        // The walk's time, with what `f` did (little: these walks read no record).
        stats.secondary_search_ns += t.elapsed().as_nanos() as u64;
        Ok(to_the_end)
    }
}

impl<S: RecordSource> Records for SnapshotRecords<S> {
    fn index_entries(
        &mut self,
        index: Nsid,
        range: &KeyRange,
        after: Option<&[u8]>,
        max: usize,
        out: &mut EntryBatch,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let t = Instant::now();
        out.clear();
        out.reserve(max);
        let mut scan = self.walk(index, &range.start, after)?;
        while scan.valid() && out.len() < max {
            let key = scan.key();
            if range.end.as_ref().is_some_and(|e| key >= e.as_slice()) {
                break;
            }
            if scan.kind() == Kind::Put {
                match scan.table_payload() {
                    Some(v) => out.push(key, v),
                    None => return Err(Error::corruption("index", 0, "malformed index entry")),
                }
            }
            if out.len() < max {
                scan.next()?;
            }
        }
        if let Some(last) = out.last_key() {
            self.walk = Some((index, last.to_vec(), scan));
        }
        // Not charged here: some of these are superseded, and a walk may stop before the
        // batch's end. The caller charges each live entry it examines (`examine_entry`).
        stats.index_entries += out.len() as u64;
        stats.secondary_search_ns += t.elapsed().as_nanos() as u64;
        Ok(())
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
        self.walk_live(index, kind, range, after, true, stats, f)
    }

    fn count_entries(
        &mut self,
        index: Nsid,
        kind: IndexKind,
        range: &KeyRange,
        stats: &mut QueryStats,
    ) -> Result<u64> {
        self.count_in_pieces(index, kind, range, stats)
    }

    fn piece_bounds(
        &mut self,
        index: Nsid,
        from_top: bool,
        beyond: Option<&[u8]>,
        per_table: usize,
        stats: &mut QueryStats,
    ) -> Result<Vec<Vec<u8>>> {
        // Block ends are the tree's shape: a query under a work limit walks forward in one
        // piece, so what it reads (and is charged) does not depend on them. A walk from the
        // top visits the entries last first whatever the pieces (`query/from_top.rs`): its
        // pieces bound only what it gathers, never what it is charged.
        if self.limited() && !from_top {
            return Ok(Vec::new());
        }
        let t = Instant::now();
        let out = super::piece_bounds::piece_bounds(
            &self.sv,
            index,
            from_top,
            beyond,
            per_table,
            &self.counters,
        )?;
        stats.secondary_search_ns += t.elapsed().as_nanos() as u64;
        Ok(out)
    }

    fn get(&mut self, pk: &[u8], stats: &mut QueryStats) -> Result<Option<Bytes>> {
        self.spend(RECORD_WORK)?;
        let t = Instant::now();
        let hit =
            self.source
                .reader()
                .counted_lookup(self.ns, pk, Some(self.seq), &self.counters)?;
        stats.primary_lookups += 1;
        stats.primary_search_ns += t.elapsed().as_nanos() as u64;
        let Some(hit) = hit.filter(|h| h.kind == Kind::Put) else {
            return Ok(None);
        };
        let t = Instant::now();
        let value = match hit.value_at() {
            Some(ValueAt::Here(v)) => v,
            Some(ValueAt::Log(addr)) => self.read_value(pk, addr)?,
            None => return Err(Error::corruption("index", 0, "entry without a value")),
        };
        stats.value_reads += 1;
        stats.value_read_ns += t.elapsed().as_nanos() as u64;
        Ok(Some(value))
    }

    fn superseded(&mut self, pk: &[u8], seq: SeqNo, stats: &mut QueryStats) -> Result<bool> {
        self.superseded_by(pk, || Ok(seq), stats)
    }

    fn examine_entry(&mut self) -> Result<()> {
        self.spend(1)
    }

    fn read_at(
        &mut self,
        pk: &[u8],
        addr: key::ValueAddr,
        stats: &mut QueryStats,
    ) -> Result<Bytes> {
        self.spend(RECORD_WORK)?;
        let t = Instant::now();
        let ahead = match self.ahead.is_empty() {
            true => None,
            false => self.ahead.remove(&(addr.segment, addr.offset)),
        };
        let v = match ahead {
            Some(read) => read
                .wait()
                .unwrap_or_else(|| Err(Error::Background("prefetch reader stopped".into())))?,
            None => self.read_value(pk, addr)?,
        };
        stats.value_reads += 1;
        stats.value_read_ns += t.elapsed().as_nanos() as u64;
        Ok(v)
    }

    fn reads_ahead(&self) -> bool {
        // On files a read ahead is a hand-off to a prefetch thread, dearer than a read the
        // page cache answers; a modeled device queues reads ahead on its dies at no such cost.
        self.source.models_nand()
    }

    fn prefetch(&mut self, reads: &[(Bytes, key::ValueAddr)]) {
        if !self.reads_ahead() {
            return;
        }
        for (pk, addr) in reads {
            let slot = (addr.segment, addr.offset);
            if self.ahead.contains_key(&slot) {
                continue;
            }
            let (source, c, pk, addr, ns) = (
                self.source.clone(),
                self.counters.clone(),
                pk.clone(),
                *addr,
                self.ns,
            );
            let read = self
                .source
                .prefetcher()
                .submit(move || source.vlog_reader().read_value(addr, ns, &pk, &c));
            self.ahead.insert(slot, read);
        }
    }

    fn scan(
        &mut self,
        after: Option<&[u8]>,
        max: usize,
        stats: &mut QueryStats,
    ) -> Result<Vec<(Bytes, Bytes)>> {
        let t = Instant::now();
        let mut scan = self.walk(self.ns, &[], after)?;
        let mut out = Vec::new();
        while scan.valid() && out.len() < max {
            if scan.kind() == Kind::Put {
                self.spend(RECORD_WORK)?;
                let key = Bytes::copy_from_slice(scan.key());
                let (value, _) = self.source.reader().scanned_value(
                    scan.index_value(),
                    self.ns,
                    &key,
                    &self.counters,
                )?;
                out.push((key, value));
            }
            if out.len() < max {
                scan.next()?;
            }
        }
        if let Some((last, _)) = out.last() {
            self.walk = Some((self.ns, last.to_vec(), scan));
        }
        stats.value_reads += out.len() as u64;
        stats.value_read_ns += t.elapsed().as_nanos() as u64;
        Ok(out)
    }
}
