//! Queries on a snapshot of a namespace: the reads they make (index entries, primary lookups,
//! value reads, scans), counted and timed per step, and the calls on `Snapshot` and
//! `Namespace` that plan and run them.

use super::*;
use crate::index::{AttrPath, Scalar};
use crate::query::{
    self, Access, Aggregate, Continuation, Filter, FindPage, IndexChoice, KeyRange, PageRequest,
    Plan, QueryStats, Ranked, Records, TopSpec, DEFAULT_PAGE_BYTES,
};
use crate::storage::IoPurpose;
use serde_json::Value;
use std::time::Instant;

/// Index entries an estimate counts at most: past this, an index is as good as unselective.
const ESTIMATE_CAP: usize = 1024;

/// What a find asks for besides its filter.
#[derive(Clone, Debug)]
pub struct FindOptions {
    /// Attributes to return instead of whole values (as a JSON object keyed by path).
    pub projection: Option<Vec<String>>,
    /// Records to return at most, over all pages.
    pub limit: Option<u64>,
    /// Bytes of keys and values a page holds at most (at least one record per page).
    pub page_bytes: usize,
    /// Resume where the page before ended.
    pub continuation: Option<Vec<u8>>,
}

/// What a top-K query ranks by (AnalyticOp).
#[derive(Clone, Debug, Default)]
pub struct TopOptions {
    /// The attribute ranked by; records without a scalar there are left out.
    pub by: String,
    /// Largest first (else smallest first).
    pub desc: bool,
    pub k: usize,
    /// Attributes returned with each record.
    pub projection: Option<Vec<String>>,
}

impl Default for FindOptions {
    fn default() -> Self {
        FindOptions {
            projection: None,
            limit: None,
            page_bytes: DEFAULT_PAGE_BYTES,
            continuation: None,
        }
    }
}

/// The reads of one query, at one snapshot seqno of one namespace.
struct SnapshotRecords<'a> {
    inner: &'a Inner,
    ns: Nsid,
    seq: SeqNo,
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
    _pin: crate::vlog::ReadPin,
}

impl<'a> SnapshotRecords<'a> {
    fn new(inner: &'a Inner, ns: Nsid, seq: SeqNo) -> Self {
        SnapshotRecords {
            inner,
            ns,
            seq,
            counters: Arc::new(Counters::new(inner.counters.page_size())),
            sv: inner.super_version(),
            walk: None,
            _pin: inner.vlog_reader.pin(),
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
        let sv = &self.sv;
        let mems: Vec<Arc<Memtable>> = std::iter::once(&sv.mem)
            .chain(sv.imm.iter().map(|f| &f.mem))
            .cloned()
            .collect();
        let config = crate::table::IterConfig {
            fill_cache: true,
            readahead: None,
        };
        let mut scan = SnapshotScan::new(
            &mems,
            sv.version.clone(),
            id,
            self.seq,
            &self.counters,
            &config,
        )?;
        scan.seek(after.map_or(start, |a| a.max(start)))?;
        if let Some(a) = after {
            while scan.valid() && scan.key() <= a {
                scan.next()?;
            }
        }
        Ok(scan)
    }

    /// The value of the entry the walk is at (a put).
    fn value_at(&self, scan: &SnapshotScan, key: &[u8]) -> Result<Bytes> {
        match scan.index_value() {
            Some(IndexValue::Addr {
                inline: Some(v), ..
            })
            | Some(IndexValue::Table(v)) => Ok(v),
            Some(IndexValue::Addr { addr, inline: None }) => {
                self.inner
                    .vlog_reader
                    .read_value(addr, self.ns, key, &self.counters)
            }
            _ => Err(Error::corruption("index", 0, "entry without a value")),
        }
    }

    fn finish(&self, stats: &mut QueryStats) {
        for p in IoPurpose::ALL {
            let i = p as usize;
            stats.reads[i] += self.counters.reads[i].load(Ordering::Relaxed);
            stats.pages[i] += self.counters.pages[i].load(Ordering::Relaxed);
        }
    }
}

impl Records for SnapshotRecords<'_> {
    fn index_entries(
        &mut self,
        index: Nsid,
        range: &KeyRange,
        after: Option<&[u8]>,
        max: usize,
        stats: &mut QueryStats,
    ) -> Result<Vec<(Vec<u8>, Bytes)>> {
        let t = Instant::now();
        let mut scan = self.walk(index, &range.start, after)?;
        let mut out = Vec::new();
        while scan.valid() && out.len() < max {
            let key = scan.key();
            if range.end.as_ref().is_some_and(|e| key >= e.as_slice()) {
                break;
            }
            if scan.kind() == Kind::Put {
                let payload = match scan.index_value() {
                    Some(IndexValue::Table(v)) => v,
                    _ => return Err(Error::corruption("index", 0, "malformed index entry")),
                };
                out.push((key.to_vec(), payload));
            }
            if out.len() < max {
                scan.next()?;
            }
        }
        if let Some((last, _)) = out.last() {
            self.walk = Some((index, last.clone(), scan));
        }
        stats.index_entries += out.len() as u64;
        stats.secondary_search_ns += t.elapsed().as_nanos() as u64;
        Ok(out)
    }

    fn get(&mut self, pk: &[u8], stats: &mut QueryStats) -> Result<Option<Bytes>> {
        let t = Instant::now();
        let hit = self
            .inner
            .counted_lookup(self.ns, pk, Some(self.seq), &self.counters)?;
        stats.primary_lookups += 1;
        stats.primary_search_ns += t.elapsed().as_nanos() as u64;
        let Some(hit) = hit.filter(|h| h.kind == Kind::Put) else {
            return Ok(None);
        };
        let t = Instant::now();
        let value = match (hit.value, hit.addr) {
            (Some(v), _) => v,
            (None, Some(addr)) => {
                self.inner
                    .vlog_reader
                    .read_value(addr, self.ns, pk, &self.counters)?
            }
            (None, None) => return Err(Error::corruption("index", 0, "entry without a value")),
        };
        stats.value_reads += 1;
        stats.value_read_ns += t.elapsed().as_nanos() as u64;
        Ok(Some(value))
    }

    fn superseded(&mut self, pk: &[u8], seq: SeqNo, stats: &mut QueryStats) -> Result<bool> {
        let t = Instant::now();
        let sv = &self.sv;
        let user = key::user_part(self.ns, pk);
        // The newest memtable holding the pk has its newest version.
        let newer = std::iter::once(&sv.mem)
            .chain(sv.imm.iter().map(|f| &f.mem))
            .find_map(|m| m.get(&user, self.seq))
            .is_some_and(|(s, _)| s > seq);
        stats.secondary_search_ns += t.elapsed().as_nanos() as u64;
        Ok(newer)
    }

    fn read_at(
        &mut self,
        pk: &[u8],
        addr: key::ValueAddr,
        stats: &mut QueryStats,
    ) -> Result<Bytes> {
        let t = Instant::now();
        let v = self
            .inner
            .vlog_reader
            .read_value(addr, self.ns, pk, &self.counters)?;
        stats.value_reads += 1;
        stats.value_read_ns += t.elapsed().as_nanos() as u64;
        Ok(v)
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
                let key = Bytes::copy_from_slice(scan.key());
                let value = self.value_at(&scan, &key)?;
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

fn parse_paths(paths: &[String]) -> Result<Vec<AttrPath>> {
    paths
        .iter()
        .map(|p| AttrPath::parse(p).map_err(Error::InvalidQuery))
        .collect()
}

impl Inner {
    /// The indexes of `ns` a query at snapshot `seq` can read, as the planner takes them:
    /// ready at or before it.
    fn index_choices(&self, ns: Nsid, seq: SeqNo) -> Vec<IndexChoice> {
        self.index_set()
            .of(ns)
            .iter()
            .filter(|i| i.def.ready.is_some_and(|from| from <= seq))
            .map(|i| IndexChoice {
                id: i.def.id,
                attr: i.attr.clone(),
                kind: i.def.kind,
            })
            .collect()
    }

    fn plan_query(
        &self,
        r: &mut SnapshotRecords<'_>,
        filter: &Filter,
        stats: &mut QueryStats,
    ) -> Result<Plan> {
        let choices = self.index_choices(r.ns, r.seq);
        let plan = query::plan(filter, &choices, &mut |id, ranges| {
            let mut n = 0;
            for range in ranges {
                n += r.index_entries(id, range, None, ESTIMATE_CAP, stats)?.len();
                if n >= ESTIMATE_CAP {
                    break;
                }
            }
            Ok(n as u64)
        })?;
        // The estimate's reads are the query's too, but not entries it returns.
        stats.index_entries = 0;
        stats.plan = plan.describe();
        Ok(plan)
    }

    pub(super) fn find(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<FindPage> {
        self.check_open()?;
        e.check_live()?;
        let projection = opts.projection.as_deref().map(parse_paths).transpose()?;
        let projection = projection.as_deref();
        let mut r = SnapshotRecords::new(self, e.id, seq);
        let mut stats = QueryStats::default();
        let resume = opts
            .continuation
            .as_deref()
            .map(Continuation::decode)
            .transpose()?;
        let (plan, remaining, after) = match resume {
            None => (
                self.plan_query(&mut r, filter, &mut stats)?,
                opts.limit,
                None,
            ),
            Some(c) => {
                if c.ns != e.id {
                    return Err(Error::InvalidQuery(format!(
                        "the continuation belongs to namespace {}, not {}",
                        c.ns, e.id
                    )));
                }
                if c.fingerprint != query::fingerprint(filter, projection) {
                    return Err(Error::InvalidQuery(
                        "the continuation belongs to another filter or projection".into(),
                    ));
                }
                let access = match c.index {
                    None => Access::Scan,
                    Some(id) => {
                        let choice = self
                            .index_choices(e.id, seq)
                            .into_iter()
                            .find(|i| i.id == id)
                            .ok_or_else(|| {
                                Error::UnknownIndex(
                                    "the index this continuation reads was dropped".into(),
                                )
                            })?;
                        let ranges =
                            query::index_ranges(filter, &choice.attr).ok_or_else(|| {
                                Error::InvalidQuery(
                                    "the continuation does not fit the filter".into(),
                                )
                            })?;
                        Access::Index {
                            id,
                            attr: choice.attr,
                            kind: choice.kind,
                            ranges,
                        }
                    }
                };
                let plan = Plan {
                    access,
                    estimate: None,
                };
                stats.plan = plan.describe();
                (plan, c.remaining, Some(c.position))
            }
        };
        let req = PageRequest {
            ns: e.id,
            filter,
            projection,
            remaining,
            page_bytes: opts.page_bytes.max(1),
            after: after.as_deref(),
        };
        let mut page = query::find_page(&mut r, &plan, &req, stats)?;
        r.finish(&mut page.stats);
        Ok(page)
    }

    pub(super) fn get_by_secondary(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        attr: &str,
        value: &Value,
    ) -> Result<(Vec<Bytes>, QueryStats)> {
        self.check_open()?;
        e.check_live()?;
        let path = AttrPath::parse(attr).map_err(Error::InvalidQuery)?;
        let sk = Scalar::from_json(value).ok_or_else(|| {
            Error::InvalidQuery("a secondary key is a JSON scalar, not an array or object".into())
        })?;
        let set = self.index_set();
        let idx = set
            .of(e.id)
            .iter()
            .find(|i| i.attr == path)
            .ok_or_else(|| Error::UnknownIndex(attr.to_string()))?;
        let ranges = crate::query::Condition::Eq(sk.clone()).key_ranges();
        let mut r = SnapshotRecords::new(self, e.id, seq);
        if idx.def.ready.is_none_or(|from| from > seq) {
            // Being built, or built after this snapshot: the records say it themselves.
            let filter = Filter {
                conditions: vec![(path, crate::query::Condition::Eq(sk))],
            };
            let plan = Plan {
                access: Access::Scan,
                estimate: None,
            };
            let mut stats = QueryStats {
                plan: "scan (the index is younger than the snapshot or still being built)".into(),
                ..QueryStats::default()
            };
            let mut pks = Vec::new();
            query::for_each_match(&mut r, &filter, &plan, None, &mut stats, &mut |m| {
                pks.push(m.pk.clone());
                Ok(true)
            })?;
            stats.bytes_returned = pks.iter().map(|p| p.len() as u64).sum();
            r.finish(&mut stats);
            return Ok((pks, stats));
        }
        let mut stats = QueryStats {
            plan: format!("{} index on {path}", idx.def.kind),
            ..QueryStats::default()
        };
        // Live entries are exact (stale ones are hidden by tombstones or caught in the
        // memtables): the pks need no read of their records.
        let mut pks = Vec::new();
        query::for_each_entry(
            &mut r,
            idx.def.id,
            idx.def.kind,
            &ranges,
            None,
            &mut stats,
            &mut |_, e, _| {
                pks.push(e.pk);
                Ok(true)
            },
        )?;
        stats.bytes_returned = pks.iter().map(|p| p.len() as u64).sum();
        r.finish(&mut stats);
        Ok((pks, stats))
    }

    pub(super) fn top(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        filter: &Filter,
        opts: &TopOptions,
    ) -> Result<(Vec<Ranked>, QueryStats)> {
        self.check_open()?;
        e.check_live()?;
        let spec = TopSpec {
            by: AttrPath::parse(&opts.by).map_err(Error::InvalidQuery)?,
            desc: opts.desc,
            k: opts.k,
            projection: opts.projection.as_deref().map(parse_paths).transpose()?,
        };
        let mut r = SnapshotRecords::new(self, e.id, seq);
        let mut stats = QueryStats::default();
        let plan = self.plan_query(&mut r, filter, &mut stats)?;
        let out = query::top_k(&mut r, filter, &plan, &spec, &mut stats)?;
        r.finish(&mut stats);
        Ok((out, stats))
    }

    pub(super) fn aggregate(
        &self,
        e: &NsEntry,
        seq: SeqNo,
        filter: &Filter,
        op: &Aggregate,
    ) -> Result<(Value, QueryStats)> {
        self.check_open()?;
        e.check_live()?;
        let mut r = SnapshotRecords::new(self, e.id, seq);
        let mut stats = QueryStats::default();
        let plan = self.plan_query(&mut r, filter, &mut stats)?;
        let v = query::aggregate(&mut r, filter, &plan, op, &mut stats)?;
        r.finish(&mut stats);
        Ok((v, stats))
    }
}

impl Snapshot {
    /// One page of the records meeting `filter` as they were when the snapshot was taken;
    /// pass the page's continuation in `opts` for the next.
    pub fn find(&self, filter: &Filter, opts: &FindOptions) -> Result<FindPage> {
        let ns = self.namespace();
        ns.inner.find(&ns.entry, self.seq(), filter, opts)
    }

    /// The pks of the records whose attribute `attr` equals `value`, through its index.
    pub fn get_by_secondary(&self, attr: &str, value: &Value) -> Result<(Vec<Bytes>, QueryStats)> {
        let ns = self.namespace();
        ns.inner
            .get_by_secondary(&ns.entry, self.seq(), attr, value)
    }

    /// The `opts.k` records meeting `filter` with the smallest (or, `desc`, largest) scalar
    /// at `opts.by`, ties by pk, with the projection's attributes if given.
    pub fn top(&self, filter: &Filter, opts: &TopOptions) -> Result<(Vec<Ranked>, QueryStats)> {
        let ns = self.namespace();
        ns.inner.top(&ns.entry, self.seq(), filter, opts)
    }

    /// An aggregate over the records meeting `filter`.
    pub fn aggregate(&self, filter: &Filter, op: &Aggregate) -> Result<(Value, QueryStats)> {
        let ns = self.namespace();
        ns.inner.aggregate(&ns.entry, self.seq(), filter, op)
    }
}
