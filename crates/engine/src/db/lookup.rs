//! Point lookups in a super version: memtables, then tables level by level, each asked
//! through its filter first, timed per step for the cost model.

use super::super_version::SuperVersion;
use crate::error::Result;
use crate::key::{self, IndexValue, Kind, Nsid, SeqNo, ValueAt, TRAILER_LEN};
use crate::stats::{level_step, step_level, Counters, STEP_L0, STEP_MEMTABLE, STEP_RUNS};
use crate::table::block::Block;
use crate::table::filter::filter_hash;
use crate::table::{PointProbe, TableReader};
use crate::version::{TableHandle, Version};
use bytes::Bytes;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::Arc;

/// Where a lookup found the newest version of a key.
pub(super) struct Hit {
    /// The search step that answered (`stats::STEP_*`, `stats::level_step`).
    pub(super) step: usize,
    pub(super) kind: Kind,
    /// The record in the value log (of a put, or of a delete still in a memtable).
    pub(super) addr: Option<key::ValueAddr>,
    /// The value when it is at hand: memtable or inline copy.
    pub(super) value: Option<Bytes>,
    /// Found through a table's point index, which holds a fingerprint of the key: the value
    /// record at `addr` is this key's only if it names the key (`Reader::get` checks).
    pub(super) by_point: bool,
}

impl Hit {
    /// Where its value is: at hand or in the value log (`None`: neither, a delete's).
    #[inline]
    pub(super) fn value_at(self) -> Option<ValueAt> {
        ValueAt::of(self.value, self.addr)
    }
}

/// Counts the steps of one get for the cost model, and times them if the counters ask
/// (`Options::time_get_steps`). Steps that read nothing are counted without reading the
/// clock: their time, a few comparisons, goes to the next timed step.
pub(super) struct StepClock<'a> {
    pub(super) c: &'a Counters,
    /// When the last timed step ended; `None` when steps are not timed.
    pub(super) last: Option<quanta::Instant>,
}

impl<'a> StepClock<'a> {
    pub(super) fn new(c: &'a Counters) -> Self {
        StepClock {
            c,
            last: c.times_steps().then(quanta::Instant::now),
        }
    }

    /// Nanoseconds since the last timed step, if steps are timed.
    fn lap(&mut self) -> Option<u64> {
        let last = self.last.as_mut()?;
        let now = quanta::Instant::now();
        let ns = now.duration_since(*last).as_nanos() as u64;
        *last = now;
        Some(ns)
    }

    pub(super) fn hit(&mut self, step: usize) {
        Counters::add(&self.c.local().step_hits[step], 1);
        if let Some(ns) = self.lap() {
            Counters::add(&self.c.local().step_hit_nanos[step], ns);
        }
    }

    /// The get passed `step`; `timed` if it read anything there.
    pub(super) fn miss(&mut self, step: usize, timed: bool) {
        Counters::add(&self.c.local().step_misses[step], 1);
        if timed {
            if let Some(ns) = self.lap() {
                Counters::add(&self.c.local().step_miss_nanos[step], ns);
            }
        }
    }
}

/// `read` (a value read after the lookup found its address), its time added to the hit
/// time of `step` if steps are timed: the value read is part of the step that found the key.
pub(super) fn timed_value_read<T>(c: &Counters, step: usize, read: impl FnOnce() -> T) -> T {
    if !c.times_steps() {
        return read();
    }
    let t = quanta::Instant::now();
    let v = read();
    Counters::add(
        &c.local().step_hit_nanos[step],
        t.elapsed().as_nanos() as u64,
    );
    v
}

/// Counts one get and where it was answered in the namespace's counters.
pub(super) fn count_get(c: &Counters, hit: Option<&Hit>) {
    Counters::add(&c.local().gets, 1);
    // A tombstone answers "not found" too: counted there, not at the step that held it.
    match hit.filter(|h| h.kind == Kind::Put).map(|h| h.step) {
        None => Counters::add(&c.local().gets_not_found, 1),
        Some(STEP_MEMTABLE) => Counters::add(&c.local().gets_memtable, 1),
        Some(STEP_RUNS) => Counters::add(&c.local().gets_runs, 1),
        Some(s) => Counters::add(&c.local().gets_by_level[step_level(s)], 1),
    }
}

/// [`Reader::lookup`](super::read::Reader::lookup) in super version `sv` at seqno `snapshot`
/// (which `sv` holds), with filters and index blocks from `cache` if given; through the
/// tables' point indexes where they can answer if `point`: a hit from one (`Hit::by_point`)
/// is the key's only if its value record names the key.
pub(super) fn lookup_in(
    sv: &SuperVersion,
    ns: Nsid,
    key: &[u8],
    snapshot: SeqNo,
    c: &Counters,
    cache: Option<&mut ProbeCache>,
    point: bool,
) -> Result<Option<Hit>> {
    let mut clock = StepClock::new(c);
    let user = key::user_part(ns, key);
    for m in std::iter::once(&sv.mem).chain(sv.imm.iter().map(|f| &f.mem)) {
        if let Some((_, v)) = m.get(&user, snapshot) {
            clock.hit(STEP_MEMTABLE);
            return Ok(Some(Hit {
                step: STEP_MEMTABLE,
                kind: v.kind,
                addr: Some(v.addr),
                value: Some(v.value),
                by_point: false,
            }));
        }
    }
    clock.miss(STEP_MEMTABLE, true);
    let search = Search {
        ns,
        key,
        snapshot,
        c,
        point,
    };
    let Some((step, answer)) = search.run(&sv.version, &mut clock, cache)? else {
        return Ok(None);
    };
    let (kind, iv) = match answer {
        Answer::Entry(_, kind, iv) => (kind, iv),
        Answer::Record(addr) => {
            return Ok(Some(Hit {
                step,
                kind: Kind::Put,
                addr: Some(addr),
                value: None,
                by_point: true,
            }))
        }
    };
    let kind = match iv {
        IndexValue::Tombstone => Kind::Delete,
        _ => kind,
    };
    let (addr, value) = iv.into_parts();
    Ok(Some(Hit {
        step,
        kind,
        addr,
        value,
        by_point: false,
    }))
}

/// Filters and index blocks of the tables a batch of lookups touched, each read once for the
/// batch (a flush's lookups of the versions it supersedes, a batched get), whatever the cache
/// budget; and the data block each table's last probe read, which the next of a batch's
/// sorted keys often falls in too.
#[derive(Default)]
pub(super) struct ProbeCache {
    tables: HashMap<u64, Probed>,
    /// Blocks read go into the block cache (a get's), or not (a flush's probes read each
    /// block once: not worth a place in the cache).
    pub(super) fill_cache: bool,
}

struct Probed {
    pub(super) filter: Option<Bytes>,
    pub(super) index: Block,
    pub(super) last: Option<(u64, Block)>,
}

impl ProbeCache {
    /// For a batch of gets: what it reads is cached as a get's reads are.
    pub(super) fn for_gets() -> ProbeCache {
        ProbeCache {
            tables: HashMap::new(),
            fill_cache: true,
        }
    }
}

/// Asks table `r` for the newest version of `user` at or below `seek`'s seqno, through its
/// filter first (`Ok(None)` also when the filter rules it out).
pub(super) fn probe_table(
    r: &TableReader,
    user: &[u8],
    seek: &[u8],
    hash: u64,
    c: &Counters,
    cache: Option<&mut ProbeCache>,
) -> Result<Option<(u64, Kind, IndexValue)>> {
    match cache {
        None if r.may_contain(hash, c)? => r.get(user, seek, c),
        None => Ok(None),
        Some(cache) => {
            let fill = cache.fill_cache;
            let p = match cache.tables.entry(r.id()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let (filter, index) = r.probe_blocks(c, fill)?;
                    e.insert(Probed {
                        filter,
                        index,
                        last: None,
                    })
                }
            };
            if !TableReader::filter_allows(p.filter.as_ref(), hash, c) {
                return Ok(None);
            }
            let Some(h) = r.block_for(&p.index, seek)? else {
                return Ok(None);
            };
            let block = match &p.last {
                Some((at, b)) if *at == h.offset => b,
                _ => &p.last.insert((h.offset, r.data_block_at(h, c, fill)?)).1,
            };
            r.find_in(block, user, seek)
        }
    }
}

/// What a table search found.
enum Answer {
    /// A table entry: the version's seqno, kind and value.
    Entry(SeqNo, Kind, IndexValue),
    /// A value record a table's point index gave for the key's fingerprint.
    Record(key::ValueAddr),
}

/// One key's search through a version's tables.
struct Search<'a> {
    ns: Nsid,
    key: &'a [u8],
    snapshot: SeqNo,
    c: &'a Counters,
    /// Ask each table's point index first, where it can answer (a table whose reader keeps
    /// one, at a snapshot that sees the whole table).
    point: bool,
}

impl Search<'_> {
    /// What table `r` holds of the key, through its point index if asked and able.
    fn table(
        &self,
        r: &TableReader,
        user: &[u8],
        seek: &[u8],
        hash: u64,
        cache: Option<&mut ProbeCache>,
    ) -> Result<Option<Answer>> {
        let point = self.point.then(|| r.point_index(self.c)).flatten();
        if let Some(p) = point.filter(|p| p.max_seq() <= self.snapshot) {
            if !r.may_contain(hash, self.c)? {
                return Ok(None);
            }
            return Ok(match p.probe(hash) {
                PointProbe::Absent => None,
                PointProbe::Record(addr) => Some(Answer::Record(addr)),
                PointProbe::Long => r.get(user, seek, self.c)?.map(entry),
            });
        }
        Ok(probe_table(r, user, seek, hash, self.c, cache)?.map(entry))
    }

    /// The newest version of the key at or below the snapshot in `version`'s tables: L0
    /// newest first, then the namespace's runs newest first, then one table per deeper
    /// level, each asked through its filter first; with the step that found it. Each step's
    /// outcome and time go to `clock`; filters and index blocks come from `cache` if given.
    fn run(
        &self,
        version: &Version,
        clock: &mut StepClock<'_>,
        mut cache: Option<&mut ProbeCache>,
    ) -> Result<Option<(usize, Answer)>> {
        let (ns, key) = (self.ns, self.key);
        let mut seek = key::user_part(ns, key);
        let hash = filter_hash(&seek);
        key::push_trailer(&mut seek, self.snapshot, Kind::Put);
        let user = &seek[..seek.len() - TRAILER_LEN];
        // Timed steps count the gathering in the first step that reads.
        let candidates = Candidates::gather(version, ns, key, user, hash);
        let steps = [STEP_L0, STEP_RUNS]
            .into_iter()
            .chain((1..version.num_levels()).map(level_step));
        for step in steps {
            let mut probed = false;
            // Tables that overlap each other (L0, runs) newest first, then the one a deeper
            // level has for the key: the first answer wins. A level past those gathered has
            // its table found when the search gets to it.
            let late = (step > candidates.last_step)
                .then(|| version.find_in_level(step_level(step), user))
                .flatten()
                .map(|table| Candidate::deeper(step, table, None));
            for c in candidates.of(step).chain(late.as_ref()) {
                let opened;
                let r = match &c.reader {
                    Some(r) => r,
                    None => {
                        opened = c.table.reader()?;
                        &opened
                    }
                };
                if c.overlapping && !r.ns_may_contain(ns, key) {
                    continue;
                }
                probed = true;
                if let Some(a) = self.table(r, user, &seek, hash, cache.as_deref_mut())? {
                    clock.hit(step);
                    return Ok(Some((step, a)));
                }
            }
            clock.miss(step, probed);
        }
        Ok(None)
    }
}

/// A table a key's search may probe, at its step, with its reader if the table cache held it.
struct Candidate<'v> {
    step: usize,
    table: &'v Arc<TableHandle>,
    /// One of the tables that overlap each other (L0, runs): probed only if its namespace
    /// ranges say it may hold the key (one level's table is found by its key range alone).
    overlapping: bool,
    /// `None` if it was not open: opened when the search gets to it, as it would be without
    /// this gathering (a get answered earlier opens nothing more, nor fails on its error).
    reader: Option<Arc<TableReader>>,
}

impl<'v> Candidate<'v> {
    /// A deeper level's table: the one of its level whose key range holds the key.
    fn deeper(step: usize, table: &'v Arc<TableHandle>, reader: Option<Arc<TableReader>>) -> Self {
        Candidate {
            step,
            table,
            overlapping: false,
            reader,
        }
    }
}

/// The tables a key's search probes first, in the order it probes them: L0's and the runs'
/// that may hold the key, and the first deeper level's table for it. Each open table's kept
/// filter line and point-index slot for the key are asked for before the first probe (not a
/// filter in the block cache, nor a classic one), so a get past
/// several of L0's tables and a level waits for about one cache miss of them, not one after
/// another (a line of each table is fetched whether it holds the key or not). Deeper levels
/// are left to the search (most gets end before them, and each would cost a lookup).
struct Candidates<'v> {
    tables: SmallVec<[Candidate<'v>; 8]>,
    /// The last step gathered.
    last_step: usize,
}

impl<'v> Candidates<'v> {
    fn gather(version: &'v Version, ns: Nsid, key: &[u8], user: &[u8], hash: u64) -> Self {
        let mut tables: SmallVec<[Candidate<'v>; 8]> = SmallVec::new();
        let overlapping = |step, table: &'v Arc<TableHandle>| {
            let reader = table.open_reader();
            match &reader {
                Some(r) if !r.ns_may_contain(ns, key) => None,
                _ => Some(Candidate {
                    step,
                    table,
                    overlapping: true,
                    reader,
                }),
            }
        };
        let l0 = version.levels[0].iter().filter(|t| t.covers(user));
        tables.extend(l0.filter_map(|t| overlapping(STEP_L0, t)));
        let runs = version.runs_of(ns).iter().filter(|t| t.covers(user));
        tables.extend(runs.filter_map(|t| overlapping(STEP_RUNS, t)));
        let mut last_step = STEP_RUNS;
        for level in 1..version.num_levels() {
            last_step = level_step(level);
            if let Some(t) = version.find_in_level(level, user) {
                tables.push(Candidate::deeper(last_step, t, t.open_reader()));
                break;
            }
        }
        for r in tables.iter().filter_map(|c| c.reader.as_ref()) {
            r.prefetch_probe(hash);
        }
        Candidates { tables, last_step }
    }

    /// The tables of `step`, in order.
    fn of(&self, step: usize) -> impl Iterator<Item = &Candidate<'v>> {
        self.tables.iter().filter(move |c| c.step == step)
    }
}

fn entry((seq, kind, iv): (u64, Kind, IndexValue)) -> Answer {
    Answer::Entry(seq, kind, iv)
}

/// The newest version of `(ns, key)` at or below `snapshot` in `version`'s tables, through
/// their filters and index blocks ([`Search::run`]), with the step that found it.
pub(super) fn search_tables(
    version: &Version,
    ns: Nsid,
    key: &[u8],
    snapshot: SeqNo,
    c: &Counters,
    clock: &mut StepClock<'_>,
    cache: Option<&mut ProbeCache>,
) -> Result<Option<(usize, Kind, IndexValue)>> {
    Ok(
        search_tables_seq(version, ns, key, snapshot, c, clock, cache)?
            .map(|(step, _, kind, iv)| (step, kind, iv)),
    )
}

/// [`search_tables`] with the seqno of the version found.
pub(super) fn search_tables_seq(
    version: &Version,
    ns: Nsid,
    key: &[u8],
    snapshot: SeqNo,
    c: &Counters,
    clock: &mut StepClock<'_>,
    cache: Option<&mut ProbeCache>,
) -> Result<Option<(usize, SeqNo, Kind, IndexValue)>> {
    let search = Search {
        ns,
        key,
        snapshot,
        c,
        point: false,
    };
    match search.run(version, clock, cache)? {
        None => Ok(None),
        Some((step, Answer::Entry(seq, kind, iv))) => Ok(Some((step, seq, kind, iv))),
        // Only a search that asks the point indexes gets their answers.
        Some((_, Answer::Record(_))) => Err(crate::error::Error::corruption(
            "table",
            0,
            "a point index answered a search that did not ask it",
        )),
    }
}
