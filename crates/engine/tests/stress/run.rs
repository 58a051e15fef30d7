//! The executor: runs an operation log on a database under one configuration, checks every
//! answer against the model, and records a normalized trace of the answers for the
//! metamorphic comparison between configurations.

use super::model::{self, norm, NsModel};
use super::ops::{key_bytes, short, AggFn, FaultKind, IdxKind, IterSpec, Op, Query, ATTRS};
use cerberus_engine::storage::{
    Fault, FaultError, FaultStorage, IoKind, MemStorage, NandConfig, NandStorage, StorageRef,
};
use cerberus_engine::{
    Aggregate, BackgroundRunner, BackgroundStep, Db, Error, Filter, FindOptions, IndexKind, Iter,
    Layout, Namespace, Options, ReadOptions, Snapshot, StorageKind, TopOptions, WriteBatch,
    WriteOptions,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// Coverage: how often each public call ran.

static COVERAGE: OnceLock<Mutex<BTreeMap<&'static str, u64>>> = OnceLock::new();

pub fn cov(call: &'static str) {
    *COVERAGE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(call)
        .or_default() += 1;
}

pub fn coverage() -> BTreeMap<&'static str, u64> {
    COVERAGE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .clone()
}

pub static OPS_RUN: AtomicU64 = AtomicU64::new(0);

// ---------------------------------------------------------------------------------------
// Configurations.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageSpec {
    Mem,
    Posix,
    /// `StorageKind::Nand` over real files, through `Db::open`.
    Nand,
    /// The NAND model over memory, through `Db::open_with_storage`.
    NandMem,
    /// In-memory storage that can crash and fail calls; writes are synced (`Options::sync`)
    /// so a crash must keep exactly what was acknowledged.
    Fault,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub name: &'static str,
    pub storage: StorageSpec,
    pub opts: Options,
    /// Background work through `Options::background_runner` and `Db::run_background_job`
    /// on a runner thread of the test's own.
    pub runner: bool,
}

fn fast_nand() -> NandConfig {
    NandConfig {
        page_size: 4096,
        channels: 2,
        ways: 2,
        t_read: Duration::from_micros(1),
        t_prog: Duration::from_micros(2),
        channel_bytes_per_sec: 0,
    }
}

pub fn base_options() -> Options {
    Options {
        memtable_bytes: 24 << 10,
        max_immutable_memtables: 2,
        block_size: 512,
        cache_bytes: 64 << 10,
        inline_value_threshold: 64,
        vlog_segment_bytes: 48 << 10,
        target_table_bytes: 8 << 10,
        l0_compaction_trigger: 3,
        l0_slowdown_trigger: 6,
        l0_stop_trigger: 10,
        level1_bytes: 32 << 10,
        level_size_ratio: 4,
        num_levels: 5,
        background_threads: 2,
        prefetch_threads: 2,
        vlog_gc_dead_ratio: 0.3,
        idle_settle_ms: 50,
        ..Options::default()
    }
}

/// The configurations every log runs under; answers must agree between them.
pub fn configs() -> Vec<Config> {
    let b = base_options;
    vec![
        Config {
            runner: false,
            name: "mem/per-ns/cache/bg2",
            storage: StorageSpec::Mem,
            opts: b(),
        },
        Config {
            runner: false,
            name: "posix/shared/nocache/mmap/inline0/bg1",
            storage: StorageSpec::Posix,
            opts: Options {
                layout: Layout::Shared,
                cache_bytes: 0,
                inline_value_threshold: 0,
                background_threads: 1,
                mmap_reads: true,
                ..b()
            },
        },
        Config {
            runner: false,
            name: "posix/per-ns/nommap/block4k/table64k/inline1k",
            storage: StorageSpec::Posix,
            opts: Options {
                mmap_reads: false,
                block_size: 4096,
                target_table_bytes: 64 << 10,
                inline_value_threshold: 1024,
                memtable_bytes: 64 << 10,
                vlog_segment_bytes: 128 << 10,
                ..b()
            },
        },
        Config {
            runner: false,
            name: "nand/shared/bg1/smalltables",
            storage: StorageSpec::Nand,
            opts: Options {
                storage: StorageKind::Nand(fast_nand()),
                layout: Layout::Shared,
                background_threads: 1,
                target_table_bytes: 2 << 10,
                block_size: 256,
                mmap_reads: false,
                ..b()
            },
        },
        Config {
            runner: true,
            name: "nand-mem/per-ns/nocache/no-auto-gc/runner",
            storage: StorageSpec::NandMem,
            opts: Options {
                cache_bytes: 0,
                vlog_gc_dead_ratio: 0.0,
                inline_value_threshold: 16,
                ..b()
            },
        },
        Config {
            runner: false,
            name: "fault/shared/no sync (crash loses what came after the last sync)",
            storage: StorageSpec::Fault,
            opts: Options {
                sync: false,
                layout: Layout::Shared,
                ..b()
            },
        },
        Config {
            runner: false,
            name: "fault/per-ns/sync (crash, I/O errors)",
            storage: StorageSpec::Fault,
            opts: Options { sync: true, ..b() },
        },
    ]
}

// ---------------------------------------------------------------------------------------
// The database under test and its storage.

pub struct Host {
    pub cfg: Config,
    dir: Option<tempfile::TempDir>,
    mem: Option<StorageRef>,
    pub fault: Option<FaultStorage>,
    pub db: Option<Arc<Db>>,
    runner: Vec<std::thread::JoinHandle<()>>,
    /// Bumped by every reopen: snapshots and iterators of older instances must fail.
    pub epoch: u64,
}

impl Host {
    pub fn new(cfg: &Config) -> Result<Host, String> {
        let mut h = Host {
            cfg: cfg.clone(),
            dir: None,
            mem: None,
            fault: None,
            db: None,
            runner: Vec::new(),
            epoch: 0,
        };
        match cfg.storage {
            StorageSpec::Posix | StorageSpec::Nand => {
                h.dir = Some(tempfile::tempdir().map_err(|e| e.to_string())?)
            }
            StorageSpec::Mem => h.mem = Some(Arc::new(MemStorage::new())),
            StorageSpec::NandMem => {
                h.mem = Some(Arc::new(NandStorage::new(
                    Arc::new(MemStorage::new()),
                    fast_nand(),
                )))
            }
            StorageSpec::Fault => h.fault = Some(FaultStorage::new()),
        }
        h.open()?;
        Ok(h)
    }

    pub fn open(&mut self) -> Result<(), String> {
        let mut opts = self.cfg.opts.clone();
        // Calls since open, and the runner threads' wake-up.
        let due = Arc::new((Mutex::new(0u64), std::sync::Condvar::new()));
        if self.cfg.runner {
            let due = due.clone();
            opts.background_runner = Some(BackgroundRunner(Arc::new(move || {
                *due.0.lock().unwrap() += 1;
                due.1.notify_all();
            })));
        }
        let db = if let Some(d) = &self.dir {
            Db::open(d.path(), opts)
        } else if let Some(m) = &self.mem {
            Db::open_with_storage(m.clone(), opts)
        } else {
            let fs = self.fault.as_ref().unwrap();
            Db::open_with_storage(Arc::new(fs.clone()), opts)
        };
        let db = Arc::new(db.map_err(|e| format!("open failed: {e}"))?);
        if self.cfg.runner {
            // `background_threads` runner threads (a backfill job waits for a flush job, so
            // one thread is not enough): each runs jobs whenever the database asks, and at
            // least every idle_settle_ms, until it is idle.
            let idle = Duration::from_millis(self.cfg.opts.idle_settle_ms.max(1));
            for _ in 0..self.cfg.opts.background_threads {
                let (weak, due) = (Arc::downgrade(&db), due.clone());
                self.runner.push(std::thread::spawn(move || {
                    let mut seen = 0;
                    loop {
                        {
                            let mut n = due.0.lock().unwrap();
                            if *n == seen {
                                n = due.1.wait_timeout(n, idle).unwrap().0;
                            }
                            seen = *n;
                        }
                        let Some(db) = weak.upgrade() else {
                            return;
                        };
                        loop {
                            cov("Db::run_background_job");
                            match db.run_background_job() {
                                BackgroundStep::Ran(_) => continue,
                                BackgroundStep::Idle(_) => break,
                                BackgroundStep::Stopped => return,
                            }
                        }
                    }
                }));
            }
        }
        self.db = Some(db);
        self.epoch += 1;
        cov("Db::open");
        Ok(())
    }

    pub fn db(&self) -> &Db {
        self.db.as_ref().expect("database open")
    }

    /// Closes (or, `crash` on the fault storage, cuts power) and opens again.
    pub fn reopen(&mut self, crash: bool) -> Result<(), String> {
        match (self.fault.clone(), crash) {
            (Some(fs), true) => {
                fs.inject(None);
                fs.crash();
                drop(self.db.take());
                self.join_runner();
                fs.restart();
            }
            _ => {
                if let Some(db) = self.db.take() {
                    cov("Db::close");
                    let r = db.close();
                    drop(db);
                    self.join_runner();
                    r.map_err(|e| format!("close failed: {e}"))?;
                }
            }
        }
        self.open()
    }

    pub fn join_runner(&mut self) {
        for t in self.runner.drain(..) {
            t.join().expect("runner thread");
        }
    }
}

// ---------------------------------------------------------------------------------------
// The session: namespaces, snapshots and iterators by slot, with their models.

pub enum Slot {
    Empty,
    Live {
        ns: Namespace,
        id: u32,
        m: NsModel,
    },
    /// Destroyed: the old handle must fail.
    Ghost(Namespace),
}

pub struct SnapState {
    snap: Snapshot,
    slot: u8,
    id: u32,
    m: NsModel,
    epoch: u64,
}

pub struct IterState {
    it: Iter,
    slot: u8,
    id: u32,
    epoch: u64,
    /// Entries the iterator may yield (after its bounds), the model at its snapshot.
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    uncertain: Vec<Vec<u8>>,
    spec: IterSpec,
    /// Index of the next entry (None: not positioned; next starts at the beginning).
    pos: Option<usize>,
    dead: bool,
}

/// A find paged across operations.
pub struct Cursor {
    slot: u8,
    id: u32,
    filter: super::ops::FilterSpec,
    projection: Option<Vec<u8>>,
    page_bytes: usize,
    continuation: Option<Vec<u8>>,
    /// Records of the pages so far, and the namespace's write count at the first page.
    seen: Vec<(Vec<u8>, Value)>,
    writes: u64,
    pages: usize,
}

pub struct Session {
    /// Namespace names start with this (threads of a concurrent run keep apart).
    prefix: String,
    /// Slot 0 is the default namespace.
    default_slot0: bool,
    pub slots: Vec<Slot>,
    snaps: Vec<Option<SnapState>>,
    iters: Vec<Option<IterState>>,
    cursors: Vec<Option<Cursor>>,
    created: u64,
    /// A fault is armed, or fired since the last heal: failures are allowed.
    pub faulty: bool,
    /// Writes are not synced and crashes happen: a crash may lose what came after the last
    /// sync point.
    pub unsynced: bool,
    pub trace: Vec<String>,
    /// Whether this session owns the whole database (checks list_namespaces exactly).
    pub exclusive: bool,
}

fn err_name(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "Io",
        Error::Corruption { .. } => "Corruption",
        Error::NoSpace { .. } => "NoSpace",
        Error::KeyTooLarge { .. } => "KeyTooLarge",
        Error::ValueTooLarge { .. } => "ValueTooLarge",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::UnknownNamespace(_) => "UnknownNamespace",
        Error::NamespaceExists(_) => "NamespaceExists",
        Error::IndexExists { .. } => "IndexExists",
        Error::UnknownIndex(_) => "UnknownIndex",
        Error::InvalidQuery(_) => "InvalidQuery",
        Error::Closed => "Closed",
        Error::Background(_) => "Background",
        #[allow(unreachable_patterns)]
        _ => "Other",
    }
}

fn hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// A trace entry: short text plus a hash of the whole answer.
fn tr(s: String) -> String {
    if s.len() > 160 {
        let cut = (0..=160)
            .rev()
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(0);
        format!("{}… #{:016x}", &s[..cut], hash(&s))
    } else {
        s
    }
}

type Check = Result<String, String>;

fn show(v: &Option<impl AsRef<[u8]>>) -> String {
    match v {
        Some(v) => short(v.as_ref()),
        None => "None".into(),
    }
}

fn kind_of(k: IdxKind) -> IndexKind {
    match k {
        IdxKind::Classic => IndexKind::Classic,
        IdxKind::Vas => IndexKind::Vas,
    }
}

fn io_kind(k: FaultKind) -> IoKind {
    match k {
        FaultKind::Append => IoKind::Append,
        FaultKind::Sync => IoKind::Sync,
        FaultKind::Create => IoKind::Create,
        FaultKind::Rename => IoKind::Rename,
        FaultKind::Read => IoKind::Read,
        FaultKind::Open => IoKind::Open,
        FaultKind::Delete => IoKind::Delete,
    }
}

/// The answer of a query, normalized (independent of plan and configuration where the
/// query's semantics leave the order or the choice open).
#[derive(Debug, PartialEq)]
enum Answer {
    /// Complete result of a find: records by pk.
    Records(Vec<(Vec<u8>, Value)>),
    /// A find cut by its limit: the records are some `n` of the matches.
    Some(Vec<(Vec<u8>, Value)>),
    Pks(Vec<Vec<u8>>),
    Ranked(Vec<(Vec<u8>, Value, Option<Value>)>),
    Value(Value),
}

fn filter_of(f: &super::ops::FilterSpec) -> Result<Filter, String> {
    Filter::parse(&f.doc()).map_err(|e| format!("filter {} refused: {e}", f.doc()))
}

fn agg_of(f: &AggFn) -> (&'static str, Option<&'static str>) {
    let a = |x: &u8| Some(ATTRS[*x as usize]);
    match f {
        AggFn::Count => ("count", None),
        AggFn::CountOf(x) => ("count", a(x)),
        AggFn::Sum(x) => ("sum", a(x)),
        AggFn::Avg(x) => ("avg", a(x)),
        AggFn::Min(x) => ("min", a(x)),
        AggFn::Max(x) => ("max", a(x)),
    }
}

fn parse_json(b: &[u8], what: &str) -> Result<Value, String> {
    serde_json::from_slice(b).map_err(|e| format!("{what} is not JSON ({e}): {}", short(b)))
}

/// Runs query `q` on a snapshot or namespace (through `run_query` when `doc`).
fn run_engine_query(
    target: Result<&Snapshot, &Namespace>,
    q: &Query,
    doc: bool,
) -> Result<Result<Answer, Error>, String> {
    macro_rules! call {
        ($name:literal, $e:expr) => {{
            cov($name);
            match $e {
                Ok(x) => x,
                Err(e) => return Ok(Err(e)),
            }
        }};
    }
    if doc {
        let Err(ns) = target else {
            return Err("run_query is a namespace call".into());
        };
        let body = match q {
            Query::Find {
                filter,
                projection,
                limit,
                page_bytes,
            } => json!({"op": "find", "filter": filter.doc(),
                "project": projection.as_ref().map(|p| p.iter().map(|a| ATTRS[*a as usize]).collect::<Vec<_>>()),
                "limit": limit, "page_bytes": page_bytes}),
            Query::BySecondary { attr, value, limit } => {
                json!({"op": "get_by_secondary", "attr": ATTRS[*attr as usize], "value": value, "limit": limit})
            }
            Query::Top {
                filter,
                by,
                desc,
                k,
                projection,
            } => {
                json!({"op": "top", "filter": filter.doc(), "by": ATTRS[*by as usize], "desc": desc, "k": k,
                "project": projection.as_ref().map(|p| p.iter().map(|a| ATTRS[*a as usize]).collect::<Vec<_>>())})
            }
            Query::Aggregate { filter, f } => {
                let (func, attr) = agg_of(f);
                json!({"op": "aggregate", "filter": filter.doc(), "fn": func, "attr": attr})
            }
        };
        let body = serde_json::to_vec(&body).unwrap();
        let out = call!("Namespace::run_query", ns.run_query(&body, 1 << 20));
        return Ok(Ok(match q {
            Query::Find { limit, .. } => {
                let mut recs = Vec::new();
                let mut out = out;
                let mut pages = 0;
                loop {
                    for (pk, v) in &out.records {
                        recs.push((pk.to_vec(), parse_json(v, "found record")?));
                    }
                    let Some(c) = out.summary["continuation"].as_str() else {
                        break;
                    };
                    pages += 1;
                    if pages > 10_000 {
                        return Err("run_query find: more than 10,000 pages".into());
                    }
                    let mut b: Value = serde_json::from_slice(&body).unwrap();
                    b["continuation"] = json!(c);
                    let b = serde_json::to_vec(&b).unwrap();
                    out = call!("Namespace::run_query", ns.run_query(&b, 1 << 20));
                }
                finish_find(recs, *limit)?
            }
            Query::BySecondary { .. } => {
                Answer::Pks(out.records.iter().map(|(p, _)| p.to_vec()).collect())
            }
            Query::Top { projection, .. } => {
                let keys = out.summary["keys"]
                    .as_array()
                    .ok_or("run_query top: no keys")?;
                if keys.len() != out.records.len() {
                    return Err("run_query top: keys and records differ in number".into());
                }
                let mut v = Vec::new();
                for ((pk, p), key) in out.records.iter().zip(keys) {
                    let proj = match projection {
                        Some(_) => Some(norm(&parse_json(p, "projection")?)),
                        None if p.is_empty() => None,
                        None => return Err("run_query top: a projection not asked for".into()),
                    };
                    v.push((pk.to_vec(), norm(key), proj));
                }
                Answer::Ranked(v)
            }
            Query::Aggregate { .. } => Answer::Value(norm(&out.summary["value"])),
        }));
    }
    let snap_owned;
    let snap = match target {
        Ok(s) => s,
        Err(ns) => {
            cov("Namespace::snapshot");
            snap_owned = ns.snapshot();
            &snap_owned
        }
    };
    Ok(Ok(match q {
        Query::Find {
            filter,
            projection,
            limit,
            page_bytes,
        } => {
            let filter = filter_of(filter)?;
            let mut opts = FindOptions {
                projection: projection
                    .as_ref()
                    .map(|p| p.iter().map(|a| ATTRS[*a as usize].to_string()).collect()),
                limit: *limit,
                page_bytes: *page_bytes,
                continuation: None,
            };
            let mut recs = Vec::new();
            let mut pages = 0;
            loop {
                let page = call!("Snapshot::find", snap.find(&filter, &opts));
                let mut bytes = 0;
                for r in &page.records {
                    bytes += r.pk.len() + r.value.len();
                    recs.push((r.pk.to_vec(), parse_json(&r.value, "found record")?));
                }
                if page.records.len() > 1 && bytes > *page_bytes {
                    return Err(format!(
                        "find page of {} records holds {bytes} bytes, over page_bytes {page_bytes}",
                        page.records.len()
                    ));
                }
                if page.records.is_empty() && page.continuation.is_some() {
                    return Err("find: an empty page with a continuation".into());
                }
                match page.continuation {
                    Some(c) => opts.continuation = Some(c),
                    None => break,
                }
                pages += 1;
                if pages > 10_000 {
                    return Err("find: more than 10,000 pages".into());
                }
            }
            finish_find(recs, *limit)?
        }
        Query::BySecondary { attr, value, limit } => {
            let (pks, _) = call!(
                "Snapshot::get_by_secondary",
                snap.get_by_secondary(ATTRS[*attr as usize], value, *limit)
            );
            Answer::Pks(pks.iter().map(|p| p.to_vec()).collect())
        }
        Query::Top {
            filter,
            by,
            desc,
            k,
            projection,
        } => {
            let filter = filter_of(filter)?;
            let opts = TopOptions {
                by: ATTRS[*by as usize].to_string(),
                desc: *desc,
                k: *k,
                projection: projection
                    .as_ref()
                    .map(|p| p.iter().map(|a| ATTRS[*a as usize].to_string()).collect()),
            };
            let (ranked, _) = call!("Snapshot::top", snap.top(&filter, &opts));
            Answer::Ranked(
                ranked
                    .into_iter()
                    .map(|r| (r.pk.to_vec(), norm(&r.key), r.projection.map(|p| norm(&p))))
                    .collect(),
            )
        }
        Query::Aggregate { filter, f } => {
            let filter = filter_of(filter)?;
            let (func, attr) = agg_of(f);
            let op = Aggregate::parse(func, attr).map_err(|e| e.to_string())?;
            let (v, _) = call!("Snapshot::aggregate", snap.aggregate(&filter, &op));
            Answer::Value(norm(&v))
        }
    }))
}

fn finish_find(mut recs: Vec<(Vec<u8>, Value)>, limit: Option<u64>) -> Result<Answer, String> {
    let n = recs.len();
    recs.sort_by(|a, b| a.0.cmp(&b.0));
    recs.dedup_by(|a, b| a.0 == b.0);
    if recs.len() != n {
        return Err(format!(
            "find returned a record twice ({n} records, {} distinct)",
            recs.len()
        ));
    }
    Ok(match limit {
        Some(l) if l as usize <= n => Answer::Some(recs),
        _ => Answer::Records(recs),
    })
}

/// The expected answer of `q` over a model.
fn expect_query(m: &NsModel, q: &Query) -> Result<Answer, &'static str> {
    Ok(match q {
        Query::Find {
            filter,
            projection,
            limit,
            ..
        } => {
            let all = model::find(&m.data, filter, projection.as_deref());
            match limit {
                Some(l) if (*l as usize) <= all.len() => Answer::Some(all),
                _ => Answer::Records(all),
            }
        }
        Query::BySecondary { attr, value, limit } => {
            if !m.indexes.contains_key(attr) {
                return Err("UnknownIndex");
            }
            Answer::Pks(model::by_secondary(&m.data, *attr, value, *limit))
        }
        Query::Top {
            filter,
            by,
            desc,
            k,
            projection,
        } => Answer::Ranked(model::top(
            &m.data,
            filter,
            *by,
            *desc,
            *k,
            projection.as_deref(),
        )),
        Query::Aggregate { filter, f } => Answer::Value(model::aggregate(&m.data, filter, f)),
    })
}

/// Compares a query's answer with the model's; the trace gets the normalized answer.
fn check_answer(
    got: Result<Answer, Error>,
    want: Result<Answer, &'static str>,
    q: &Query,
    lenient: bool,
) -> Check {
    let with_norm = |a: &Answer| -> Answer {
        match a {
            Answer::Records(r) => {
                Answer::Records(r.iter().map(|(k, v)| (k.clone(), norm(v))).collect())
            }
            Answer::Some(r) => Answer::Some(r.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
            Answer::Pks(p) => Answer::Pks(p.clone()),
            Answer::Ranked(r) => Answer::Ranked(r.clone()),
            Answer::Value(v) => Answer::Value(v.clone()),
        }
    };
    match (got, want) {
        (Err(e), _) if lenient => Ok(format!("Err({})", err_name(&e))),
        (Err(e), Err(w)) if err_name(&e) == w => Ok(format!("Err({w})")),
        (Err(e), w) => Err(format!(
            "{q}: got error {e}, expected {:?}",
            w.map(|a| tr(format!("{a:?}")))
        )),
        (Ok(a), Err(w)) => Err(format!(
            "{q}: expected error {w}, got {}",
            tr(format!("{a:?}"))
        )),
        (Ok(a), Ok(w)) => {
            let (a, w) = (with_norm(&a), with_norm(&w));
            match (&a, &w) {
                (Answer::Some(got), Answer::Some(all)) => {
                    let Query::Find { limit: Some(l), .. } = q else {
                        unreachable!()
                    };
                    if got.len() as u64 != *l {
                        return Err(format!(
                            "{q}: {} records, expected the limit {l}",
                            got.len()
                        ));
                    }
                    for r in got {
                        if !all.contains(r) {
                            return Err(format!(
                                "{q}: record {} = {} is not among the {} matches",
                                short(&r.0),
                                tr(r.1.to_string()),
                                all.len()
                            ));
                        }
                    }
                    Ok(format!("some {l} of {}", all.len()))
                }
                _ if a == w => Ok(tr(format!("{a:?}"))),
                _ => Err(format!(
                    "{q}:\n      got      {}\n      expected {}",
                    tr(format!("{a:?}")),
                    tr(format!("{w:?}"))
                )),
            }
        }
    }
}

impl Session {
    pub fn new(prefix: &str, default_slot0: bool, exclusive: bool, db: &Db) -> Session {
        let mut slots: Vec<Slot> = (0..super::ops::NS_SLOTS).map(|_| Slot::Empty).collect();
        if default_slot0 {
            let ns = db.default_namespace();
            slots[0] = Slot::Live {
                id: ns.id(),
                ns,
                m: NsModel::default(),
            };
        }
        Session {
            prefix: prefix.to_string(),
            default_slot0,
            slots,
            snaps: (0..super::ops::SNAP_SLOTS).map(|_| None).collect(),
            iters: (0..super::ops::ITER_SLOTS).map(|_| None).collect(),
            cursors: (0..super::ops::CURSOR_SLOTS).map(|_| None).collect(),
            created: 0,
            faulty: false,
            trace: Vec::new(),
            exclusive,
            unsynced: false,
        }
    }

    fn live(&mut self, slot: u8) -> Option<(&Namespace, &mut NsModel)> {
        match &mut self.slots[slot as usize] {
            Slot::Live { ns, m, .. } => Some((ns, m)),
            _ => None,
        }
    }

    /// Handles again after a reopen; snapshots and iterators of the old instance stay, and
    /// must fail.
    pub fn rebind(&mut self, db: &Db) -> Result<(), String> {
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Slot::Live { ns, id, .. } = s {
                cov("Db::namespace");
                *ns = db
                    .namespace(*id)
                    .map_err(|e| format!("namespace slot {i} (id {id}) lost by reopen: {e}"))?;
            }
        }
        Ok(())
    }

    /// Reads every namespace whole (gets and a scan) and compares it with the model.
    pub fn verify_all(&mut self, db: &Db) -> Result<(), String> {
        let names: Vec<_> = db.list_namespaces();
        cov("Db::list_namespaces");
        for (i, s) in self.slots.iter().enumerate() {
            let Slot::Live { ns, id, m } = s else {
                continue;
            };
            if !names.iter().any(|n| n.nsid == *id) {
                return Err(format!("slot {i}: namespace {id} not in list_namespaces"));
            }
            cov("Namespace::iter");
            let it = ns
                .iter(ReadOptions::default())
                .map_err(|e| format!("slot {i}: iter: {e}"))?;
            let mut got = BTreeMap::new();
            for r in it {
                cov("Iter::next");
                let (k, v) = r.map_err(|e| format!("slot {i}: scan: {e}"))?;
                got.insert(k.to_vec(), v.to_vec());
            }
            let keys: std::collections::BTreeSet<&Vec<u8>> =
                got.keys().chain(m.data.keys()).collect();
            for k in keys {
                if m.uncertain.contains_key(k) {
                    continue;
                }
                let (g, w) = (got.get(k), m.data.get(k));
                if g != w {
                    return Err(format!(
                        "slot {i} key {}: scan has {}, expected {}",
                        short(k),
                        show(&g),
                        show(&w)
                    ));
                }
                cov("Namespace::get");
                let g = ns.get(k).map_err(|e| format!("slot {i}: get: {e}"))?;
                if g.as_deref() != w.map(|v| v.as_slice()) {
                    return Err(format!(
                        "slot {i} key {}: get has {}, expected {}",
                        short(k),
                        show(&g),
                        show(&w)
                    ));
                }
            }
            if !m.indexes_uncertain {
                cov("Namespace::list_indexes");
                let got = ns.list_indexes().map_err(|e| e.to_string())?;
                check_indexes(&got, m)?;
            }
        }
        if self.exclusive {
            let mut want: Vec<u32> = self
                .slots
                .iter()
                .filter_map(|s| match s {
                    Slot::Live { id, .. } => Some(*id),
                    _ => None,
                })
                .collect();
            if !self.default_slot0 || !matches!(self.slots[0], Slot::Live { .. }) {
                want.push(0);
            }
            want.sort();
            want.dedup();
            let got: Vec<u32> = names.iter().map(|n| n.nsid).collect();
            if got != want {
                return Err(format!("list_namespaces: ids {got:?}, expected {want:?}"));
            }
        }
        Ok(())
    }

    /// After a heal: uncertain keys and indexes take what the database says, if it is one
    /// of the candidates.
    pub fn settle(&mut self) -> Result<(), String> {
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Slot::Live { ns, m, .. } = s else {
                continue;
            };
            for (k, cands) in std::mem::take(&mut m.uncertain) {
                let got = ns
                    .get(&k)
                    .map_err(|e| format!("slot {i}: get after heal: {e}"))?;
                let got = got.map(|v| v.to_vec());
                if !cands.contains(&got) {
                    return Err(format!(
                        "slot {i} key {}: after a failed write and a heal it holds {}, which is \
                         neither the old nor the new value ({} candidates)",
                        short(&k),
                        show(&got),
                        cands.len()
                    ));
                }
                m.write(&k, got);
            }
            if m.indexes_uncertain {
                let got = ns.list_indexes().map_err(|e| e.to_string())?;
                m.indexes.clear();
                for info in got {
                    let a = ATTRS
                        .iter()
                        .position(|x| *x == info.attr)
                        .ok_or("unknown attribute in list_indexes")?;
                    let k = match info.kind {
                        IndexKind::Classic => IdxKind::Classic,
                        _ => IdxKind::Vas,
                    };
                    m.indexes.insert(a as u8, k);
                }
                m.indexes_uncertain = false;
            }
        }
        Ok(())
    }

    /// Runs one operation. `host` is `None` in the threads of a concurrent run (no reopen).
    pub fn exec(&mut self, db_host: &mut DbRef<'_>, op: &Op) -> Check {
        OPS_RUN.fetch_add(1, Ordering::Relaxed);
        let r = self.exec_inner(db_host, op);
        if let Ok(t) = &r {
            self.trace.push(t.clone());
        }
        r
    }

    fn exec_inner(&mut self, host: &mut DbRef<'_>, op: &Op) -> Check {
        let faulty = self.faulty;
        match op {
            Op::Put {
                ns,
                key,
                value,
                sync,
            } => {
                let k = key_bytes(*key);
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_write(*ns, |h| {
                        cov("Namespace::put");
                        h.put(&k, value)
                    });
                };
                cov("Namespace::put");
                let r = if *sync {
                    cov("Namespace::with_write_options");
                    h.with_write_options(WriteOptions { sync: true })
                        .put(&k, value)
                } else {
                    h.put(&k, value)
                };
                let r = write_result(m, faulty, r, &[(k, Some(value.clone()))]);
                if *sync && r.as_deref() == Ok("ok") {
                    // The log is one sequence: its sync makes every earlier write durable.
                    self.sync_point();
                }
                r
            }
            Op::Delete { ns, key } => {
                let k = key_bytes(*key);
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_write(*ns, |h| {
                        cov("Namespace::delete");
                        h.delete(&k)
                    });
                };
                cov("Namespace::delete");
                let r = h.delete(&k);
                write_result(m, faulty, r, &[(k, None)])
            }
            Op::Batch { ns, writes } => {
                let mut b = WriteBatch::new();
                let mut ws = Vec::new();
                for (k, v) in writes {
                    let k = key_bytes(*k);
                    match v {
                        Some(v) => b.put(k.clone(), v.clone()),
                        None => b.delete(k.clone()),
                    };
                    ws.push((k, v.clone()));
                }
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_write(*ns, |h| {
                        cov("Namespace::write");
                        h.write(b)
                    });
                };
                cov("Namespace::write");
                let r = h.write(b);
                write_result(m, faulty, r, &ws)
            }
            Op::Get { ns, key } | Op::Contains { ns, key } => {
                let k = key_bytes(*key);
                let get = matches!(op, Op::Get { .. });
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| {
                        if get {
                            h.get(&k).map(|_| ())
                        } else {
                            h.contains(&k).map(|_| ())
                        }
                    });
                };
                let r = if get {
                    cov("Namespace::get");
                    h.get(&k).map(|v| v.map(|v| v.to_vec()))
                } else {
                    cov("Namespace::contains");
                    h.contains(&k).map(|c| c.then(Vec::new))
                };
                check_read(m, faulty, &k, r, get)
            }
            Op::CreateNs { ns } => {
                if faulty || !matches!(self.slots[*ns as usize], Slot::Empty | Slot::Ghost(_)) {
                    return Ok("skip".into());
                }
                if *ns == 0 && self.default_slot0 {
                    return Ok("skip".into());
                }
                self.created += 1;
                let name = format!("{}s{ns}g{}", self.prefix, self.created);
                cov("Db::create_namespace");
                let h = host
                    .db()
                    .create_namespace(&name)
                    .map_err(|e| format!("create_namespace {name}: {e}"))?;
                let id = h.id();
                if h.name() != name {
                    return Err(format!("create_namespace: name {} != {name}", h.name()));
                }
                self.slots[*ns as usize] = Slot::Live {
                    ns: h,
                    id,
                    m: NsModel::default(),
                };
                Ok("created".into())
            }
            Op::DestroyNs { ns } => {
                if faulty || (*ns == 0 && self.default_slot0) {
                    return Ok("skip".into());
                }
                let Slot::Live { ns: h, id, .. } = &self.slots[*ns as usize] else {
                    return Ok("skip".into());
                };
                let (h, id) = (h.clone(), *id);
                cov("Db::destroy_namespace");
                host.db()
                    .destroy_namespace(id)
                    .map_err(|e| format!("destroy_namespace {id}: {e}"))?;
                self.slots[*ns as usize] = Slot::Ghost(h);
                Ok("destroyed".into())
            }
            Op::CreateIndex { ns, attr, kind } => {
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| {
                        h.create_index(ATTRS[*attr as usize], kind_of(*kind))
                    });
                };
                cov("Namespace::create_index");
                let r = h.create_index(ATTRS[*attr as usize], kind_of(*kind));
                match r {
                    Ok(()) if m.indexes.contains_key(attr) && !m.indexes_uncertain => {
                        Err("create_index of an attribute already indexed succeeded".into())
                    }
                    Ok(()) => {
                        m.indexes.insert(*attr, *kind);
                        Ok("ok".into())
                    }
                    Err(Error::IndexExists { .. }) if m.indexes.contains_key(attr) => {
                        Ok("Err(IndexExists)".into())
                    }
                    Err(_) if faulty => {
                        m.indexes_uncertain = true;
                        Ok("Err".into())
                    }
                    Err(e) => Err(format!("create_index: {e}")),
                }
            }
            Op::DropIndex { ns, attr } => {
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| h.drop_index(ATTRS[*attr as usize]));
                };
                cov("Namespace::drop_index");
                match h.drop_index(ATTRS[*attr as usize]) {
                    Ok(()) if !m.indexes.contains_key(attr) && !m.indexes_uncertain => {
                        Err("drop_index of an attribute with no index succeeded".into())
                    }
                    Ok(()) => {
                        m.indexes.remove(attr);
                        Ok("ok".into())
                    }
                    Err(Error::UnknownIndex(_)) if !m.indexes.contains_key(attr) => {
                        Ok("Err(UnknownIndex)".into())
                    }
                    Err(_) if faulty => {
                        m.indexes_uncertain = true;
                        Ok("Err".into())
                    }
                    Err(e) => Err(format!("drop_index: {e}")),
                }
            }
            Op::ListIndexes { ns } => {
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| h.list_indexes().map(|_| ()));
                };
                cov("Namespace::list_indexes");
                match h.list_indexes() {
                    Ok(l) => {
                        if !m.indexes_uncertain {
                            check_indexes(&l, m)?;
                        }
                        Ok(format!("{:?}", m.indexes))
                    }
                    Err(_) if faulty => Ok("Err".into()),
                    Err(e) => Err(format!("list_indexes: {e}")),
                }
            }
            Op::Query { ns, q, doc } => {
                let Some((h, m)) = self.live(*ns) else {
                    let q = q.clone();
                    let doc = *doc;
                    return self.ghost_read(*ns, move |h| {
                        match run_engine_query(Err(h), &q, doc) {
                            Ok(Ok(_)) => Ok(()),
                            Ok(Err(e)) => Err(e),
                            Err(_) => Ok(()),
                        }
                    });
                };
                let got = run_engine_query(Err(h), q, *doc)?;
                if faulty && (got.is_err() || !m.certain() || m.indexes_uncertain) {
                    return Ok("unchecked (fault)".into());
                }
                check_answer(got, expect_query(m, q), q, false)
            }
            Op::SnapOpen { snap, ns } => {
                let epoch = host.epoch();
                let Slot::Live { ns: h, id, m } = &self.slots[*ns as usize] else {
                    return Ok("skip".into());
                };
                cov("Namespace::snapshot");
                let s = h.snapshot();
                self.snaps[*snap as usize] = Some(SnapState {
                    snap: s,
                    slot: *ns,
                    id: *id,
                    m: m.clone(),
                    epoch,
                });
                Ok("snap".into())
            }
            Op::SnapClose { snap } => {
                cov("Snapshot::drop");
                Ok(if self.snaps[*snap as usize].take().is_some() {
                    "released"
                } else {
                    "skip"
                }
                .into())
            }
            Op::SnapGet { snap, key } | Op::SnapContains { snap, key } => {
                let get = matches!(op, Op::SnapGet { .. });
                let (epoch, k) = (host.epoch(), key_bytes(*key));
                let Some(s) = &self.snaps[*snap as usize] else {
                    return Ok("skip".into());
                };
                let r = if get {
                    cov("Snapshot::get");
                    s.snap.get(&k).map(|v| v.map(|v| v.to_vec()))
                } else {
                    cov("Snapshot::contains");
                    s.snap.contains(&k).map(|c| c.then(Vec::new))
                };
                if s.epoch != epoch {
                    return stale(r.map(|_| ()), "snapshot read");
                }
                let gone = self.gone(s.slot, s.id);
                match r {
                    Err(_) if gone || faulty => Ok("Err".into()),
                    r => check_read(&s.m, faulty, &k, r, get),
                }
            }
            Op::SnapQuery { snap, q } => {
                let epoch = host.epoch();
                let Some(s) = &self.snaps[*snap as usize] else {
                    return Ok("skip".into());
                };
                let got = run_engine_query(Ok(&s.snap), q, false)?;
                if s.epoch != epoch {
                    return stale(got.map(|_| ()), "snapshot query");
                }
                let gone = self.gone(s.slot, s.id);
                if faulty && (got.is_err() || !s.m.certain()) {
                    return Ok("unchecked (fault)".into());
                }
                // Indexes: the namespace's now (a dropped one is gone for the snapshot too).
                let mut m = s.m.clone();
                match &self.slots[s.slot as usize] {
                    Slot::Live { m: now, id, .. } if *id == s.id => {
                        if now.indexes_uncertain {
                            return Ok("unchecked (fault)".into());
                        }
                        m.indexes = now.indexes.clone()
                    }
                    _ => {}
                }
                check_answer(got, expect_query(&m, q), q, gone)
            }
            Op::PageOpen {
                cur,
                ns,
                filter,
                projection,
                page_bytes,
            } => {
                let Slot::Live { id, m, .. } = &self.slots[*ns as usize] else {
                    return Ok("skip".into());
                };
                let c = Cursor {
                    slot: *ns,
                    id: *id,
                    filter: filter.clone(),
                    projection: projection.clone(),
                    page_bytes: *page_bytes,
                    continuation: None,
                    seen: Vec::new(),
                    writes: m.writes,
                    pages: 0,
                };
                self.cursors[*cur as usize] = Some(c);
                self.next_page(*cur)
            }
            Op::PageNext { cur } => match &self.cursors[*cur as usize] {
                Some(c) if c.continuation.is_some() => self.next_page(*cur),
                _ => Ok("skip".into()),
            },
            Op::IterOpen { it, ns, snap, spec } => {
                let epoch = host.epoch();
                let ropts = ReadOptions {
                    upper_bound: spec.upper.map(key_bytes),
                    prefix: spec.prefix.as_ref().map(|p| p.as_bytes().to_vec()),
                    keys_only: spec.keys_only,
                    prefetch_degree: spec.prefetch,
                    index_prefetch: spec.index_prefetch,
                    ..ReadOptions::default()
                };
                let (r, slot, id, m, iepoch) = match snap {
                    Some(s) => {
                        let Some(s) = &self.snaps[*s as usize] else {
                            return Ok("skip".into());
                        };
                        cov("Snapshot::iter");
                        (s.snap.iter(ropts), s.slot, s.id, s.m.clone(), s.epoch)
                    }
                    None => {
                        let Slot::Live { ns: h, id, m } = &self.slots[*ns as usize] else {
                            return Ok("skip".into());
                        };
                        cov("Namespace::iter");
                        (h.iter(ropts), *ns, *id, m.clone(), epoch)
                    }
                };
                if iepoch != epoch {
                    return stale(r.map(|_| ()), "iterator on an old snapshot");
                }
                let gone = self.gone(slot, id);
                let it_h = match r {
                    Ok(i) => i,
                    Err(_) if gone || faulty => return Ok("Err".into()),
                    Err(e) => return Err(format!("iter: {e}")),
                };
                // Uncertain keys: positioned by key, value unchecked.
                let mut all = m.data.clone();
                for k in m.uncertain.keys() {
                    all.entry(k.clone()).or_default();
                }
                let entries = all.into_iter().collect();
                self.iters[*it as usize] = Some(IterState {
                    it: it_h,
                    slot,
                    id,
                    epoch,
                    entries,
                    uncertain: m.uncertain.keys().cloned().collect(),
                    spec: spec.clone(),
                    pos: None,
                    dead: false,
                });
                Ok("iter".into())
            }
            Op::IterClose { it } => {
                cov("Iter::drop");
                Ok(if self.iters[*it as usize].take().is_some() {
                    "dropped"
                } else {
                    "skip"
                }
                .into())
            }
            Op::IterSeek { it, key } => {
                let epoch = host.epoch();
                let Some(st) = &self.iters[*it as usize] else {
                    return Ok("skip".into());
                };
                let gone = self.gone(st.slot, st.id);
                let st = self.iters[*it as usize].as_mut().unwrap();
                if st.dead {
                    return Ok("skip (dead)".into());
                }
                let k = key_bytes(*key);
                cov("Iter::seek");
                let r = st.it.seek(&k);
                if st.epoch != epoch {
                    st.dead = true;
                    return stale(r, "seek on an old iterator");
                }
                match r {
                    Ok(()) => {
                        let target = match &st.spec.prefix {
                            Some(p) if k.as_slice() < p.as_bytes() => p.as_bytes().to_vec(),
                            _ => k,
                        };
                        st.pos = Some(st.entries.partition_point(|(e, _)| *e < target));
                        Ok("seek".into())
                    }
                    Err(_) if gone || faulty => {
                        st.dead = true;
                        Ok("Err".into())
                    }
                    Err(e) => Err(format!("seek: {e}")),
                }
            }
            Op::IterNext { it, n } => {
                let epoch = host.epoch();
                let Some(st) = &self.iters[*it as usize] else {
                    return Ok("skip".into());
                };
                let gone = self.gone(st.slot, st.id);
                let st = self.iters[*it as usize].as_mut().unwrap();
                if st.dead {
                    return Ok("skip (dead)".into());
                }
                cov("Iter::snapshot");
                cov("Snapshot::namespace");
                if st.it.snapshot().namespace().id() != st.id {
                    return Err("the iterator's snapshot names another namespace".into());
                }
                cov("Iter::memory");
                let mem = st.it.memory();
                if mem.state == 0 || mem.buffers > 64 << 20 {
                    return Err(format!("iterator memory out of bounds: {mem:?}"));
                }
                let mut out = String::new();
                for step in 0..*n {
                    cov("Iter::next");
                    let got = st.it.next();
                    if st.epoch != epoch {
                        st.dead = true;
                        return match got {
                            Some(Err(_)) => Ok("Err(stale)".into()),
                            other => Err(format!(
                                "next on an iterator of a closed database gave {:?}, not an error",
                                other.map(|r| r.map(|(k, _)| short(&k)))
                            )),
                        };
                    }
                    let pos = st.pos.unwrap_or(0);
                    let want = st.entries.get(pos).filter(|(k, _)| {
                        let above = st
                            .spec
                            .upper
                            .is_some_and(|u| k.as_slice() >= key_bytes(u).as_slice());
                        let outside = st
                            .spec
                            .prefix
                            .as_ref()
                            .is_some_and(|p| !k.starts_with(p.as_bytes()));
                        !above && !outside
                    });
                    let want = if st.pos.is_none() {
                        // Unpositioned: starts at the prefix (or the first key).
                        let start = st.spec.prefix.as_ref().map_or(0, |p| {
                            st.entries
                                .partition_point(|(e, _)| e.as_slice() < p.as_bytes())
                        });
                        st.pos = Some(start);
                        st.entries.get(start).filter(|(k, _)| {
                            let above = st
                                .spec
                                .upper
                                .is_some_and(|u| k.as_slice() >= key_bytes(u).as_slice());
                            let outside = st
                                .spec
                                .prefix
                                .as_ref()
                                .is_some_and(|p| !k.starts_with(p.as_bytes()));
                            !above && !outside
                        })
                    } else {
                        want
                    };
                    match (got, want) {
                        (Some(Err(_)), _) if gone || faulty => {
                            st.dead = true;
                            out.push_str(" Err");
                            break;
                        }
                        (Some(Err(e)), _) => return Err(format!("next (step {step}): {e}")),
                        (None, None) => {
                            out.push_str(" end");
                            break;
                        }
                        (Some(Ok((k, v))), Some((wk, wv))) => {
                            let unsure = st.uncertain.contains(wk);
                            if k.as_ref() != wk.as_slice() && !unsure {
                                return Err(format!(
                                    "next (step {step}): key {}, expected {}",
                                    short(&k),
                                    short(wk)
                                ));
                            }
                            let want_v: &[u8] = if st.spec.keys_only { &[] } else { wv };
                            if v.as_ref() != want_v && !unsure {
                                return Err(format!(
                                    "next (step {step}) key {}: value {}, expected {}",
                                    short(&k),
                                    short(&v),
                                    short(want_v)
                                ));
                            }
                            if unsure {
                                // Cannot tell positions apart any more.
                                st.dead = true;
                                break;
                            }
                            out.push(' ');
                            out.push_str(&short(&k));
                            *st.pos.as_mut().unwrap() += 1;
                        }
                        (got, want) => {
                            if want.is_some_and(|(k, _)| st.uncertain.contains(k)) {
                                st.dead = true;
                                break;
                            }
                            return Err(format!(
                                "next (step {step}): got {:?}, expected {:?}",
                                got.map(|r| r.map(|(k, _)| short(&k)).map_err(|e| e.to_string())),
                                want.map(|(k, _)| short(k))
                            ));
                        }
                    }
                }
                Ok(tr(out))
            }
            Op::Flush => bg(faulty, "Db::flush", host.db().flush()),
            Op::WaitForCompactions => bg(
                faulty,
                "Db::wait_for_compactions",
                host.db().wait_for_compactions(),
            ),
            Op::CompactRange { ns, start, end } => {
                let (s, e) = (start.map(key_bytes), end.map(key_bytes));
                match ns {
                    Some(n) => {
                        let Slot::Live { ns: h, .. } = &self.slots[*n as usize] else {
                            return Ok("skip".into());
                        };
                        bg(
                            faulty,
                            "Namespace::compact_range",
                            h.compact_range(s.as_deref(), e.as_deref()),
                        )
                    }
                    None => bg(
                        faulty,
                        "Db::compact_range",
                        host.db().compact_range(s.as_deref(), e.as_deref()),
                    ),
                }
            }
            Op::CompactAll => bg(faulty, "Db::compact_all", host.db().compact_all()),
            Op::Gc => bg(
                faulty,
                "Db::gc_value_log",
                host.db().gc_value_log().map(|_| ()),
            ),
            Op::SyncLog => {
                let r = bg(faulty, "Db::sync_log", host.db().sync_log());
                if r.as_deref() == Ok("ok") {
                    self.sync_point();
                }
                r
            }
            Op::Stats => {
                cov("Db::stats");
                let s = host.db().stats();
                if host.db().compaction_slot_overlaps() != 0 {
                    return Err("two compactions shared a slot".into());
                }
                for (i, slot) in self.slots.iter().enumerate() {
                    if let Slot::Live { ns, .. } = slot {
                        cov("Namespace::stats");
                        if let Err(e) = ns.stats() {
                            if !faulty {
                                return Err(format!("slot {i}: stats: {e}"));
                            }
                        }
                    }
                }
                let _ = s;
                Ok("stats".into())
            }
            Op::Reopen | Op::Crash | Op::Heal => {
                let Some(h) = host.host() else {
                    return Ok("skip".into());
                };
                let crash = !matches!(op, Op::Reopen) || self.faulty;
                if matches!(op, Op::Heal) && h.fault.is_none() {
                    return Ok("skip".into());
                }
                if crash && self.unsynced {
                    for s in &mut self.slots {
                        if let Slot::Live { m, .. } = s {
                            m.crash_unsynced();
                        }
                    }
                }
                h.reopen(crash).map_err(|e| format!("{op}: {e}"))?;
                self.faulty = false;
                self.sync_point();
                let db = h.db.as_ref().unwrap();
                self.rebind(db)?;
                self.settle()?;
                self.verify_all(db)?;
                Ok("reopened".into())
            }
            Op::Inject { kind, nth, sticky } => {
                let Some(h) = host.host() else {
                    return Ok("skip".into());
                };
                let Some(fs) = &h.fault else {
                    return Ok("skip".into());
                };
                cov("FaultStorage::inject");
                fs.inject(Some(Fault {
                    kind: io_kind(*kind),
                    nth: u64::from(*nth),
                    error: if *nth % 5 == 4 {
                        FaultError::NoSpace
                    } else {
                        FaultError::Eio
                    },
                    sticky: *sticky,
                    partial: *nth % 2 == 1,
                }));
                self.faulty = true;
                Ok("armed".into())
            }
        }
    }

    /// The next page of cursor `cur`: each record must be in the namespace as it is now and
    /// meet the filter; if nothing was written since the first page, the pages together
    /// must be the whole answer.
    fn next_page(&mut self, cur: u8) -> Check {
        let faulty = self.faulty;
        let c = self.cursors[cur as usize].as_mut().unwrap();
        let (h, m) = match &self.slots[c.slot as usize] {
            Slot::Live { ns, id, m } if *id == c.id => (ns, m),
            Slot::Ghost(h) => {
                cov("Namespace::find");
                let r = h.find(&filter_of(&c.filter)?, &FindOptions::default());
                self.cursors[cur as usize] = None;
                return match r {
                    Err(e) => Ok(format!("Err({})", err_name(&e))),
                    Ok(_) => Err("find on a destroyed namespace's handle succeeded".into()),
                };
            }
            _ => {
                self.cursors[cur as usize] = None;
                return Ok("skip".into());
            }
        };
        let opts = FindOptions {
            projection: c
                .projection
                .as_ref()
                .map(|p| p.iter().map(|a| ATTRS[*a as usize].to_string()).collect()),
            limit: None,
            page_bytes: c.page_bytes,
            continuation: c.continuation.take(),
        };
        cov("Namespace::find");
        let page = match h.find(&filter_of(&c.filter)?, &opts) {
            Ok(p) => p,
            // The index the continuation reads was dropped since.
            Err(Error::UnknownIndex(_)) if c.pages > 0 => {
                self.cursors[cur as usize] = None;
                return Ok("Err(UnknownIndex)".into());
            }
            Err(_) if faulty => {
                self.cursors[cur as usize] = None;
                return Ok("Err".into());
            }
            Err(e) => return Err(format!("find page {}: {e}", c.pages)),
        };
        c.pages += 1;
        let check = !faulty && m.certain();
        let want = model::find(&m.data, &c.filter, c.projection.as_deref());
        let mut bytes = 0;
        for r in &page.records {
            bytes += r.pk.len() + r.value.len();
            let v = norm(&parse_json(&r.value, "found record")?);
            if check && !want.iter().any(|(k, w)| k[..] == r.pk[..] && norm(w) == v) {
                return Err(format!(
                    "find page {}: record {} = {} is not a match in the namespace now",
                    c.pages,
                    short(&r.pk),
                    tr(v.to_string())
                ));
            }
            c.seen.push((r.pk.to_vec(), v));
        }
        if page.records.len() > 1 && bytes > c.page_bytes {
            return Err(format!(
                "find page of {} records holds {bytes} bytes, over page_bytes {}",
                page.records.len(),
                c.page_bytes
            ));
        }
        if page.records.is_empty() && page.continuation.is_some() {
            return Err("find: an empty page with a continuation".into());
        }
        let summary = format!("page {}: {} records", c.pages, page.records.len());
        c.continuation = page.continuation;
        if c.continuation.is_none() && check && c.writes == m.writes {
            let mut got = std::mem::take(&mut c.seen);
            got.sort_by(|a, b| a.0.cmp(&b.0));
            let want: Vec<(Vec<u8>, Value)> =
                want.into_iter().map(|(k, v)| (k, norm(&v))).collect();
            if got != want {
                return Err(format!(
                    "find {} paged ({} pages, no write between): {} records, expected {}\n      got      {}\n      expected {}",
                    c.filter.doc(),
                    c.pages,
                    got.len(),
                    want.len(),
                    tr(format!("{:?}", got.iter().map(|r| short(&r.0)).collect::<Vec<_>>())),
                    tr(format!("{:?}", want.iter().map(|r| short(&r.0)).collect::<Vec<_>>()))
                ));
            }
            return Ok(format!("{summary}, complete"));
        }
        Ok(summary)
    }

    /// Everything acknowledged so far is durable.
    fn sync_point(&mut self) {
        for s in &mut self.slots {
            if let Slot::Live { m, .. } = s {
                m.since_sync.clear();
            }
        }
    }

    /// Whether the namespace a snapshot or iterator reads was destroyed since.
    fn gone(&self, slot: u8, id: u32) -> bool {
        !matches!(&self.slots[slot as usize], Slot::Live { id: now, .. } if *now == id)
    }

    fn ghost_write(
        &self,
        slot: u8,
        f: impl FnOnce(&Namespace) -> cerberus_engine::Result<()>,
    ) -> Check {
        self.ghost_read(slot, f)
    }

    /// An operation on a destroyed namespace's old handle: it must fail.
    fn ghost_read(
        &self,
        slot: u8,
        f: impl FnOnce(&Namespace) -> cerberus_engine::Result<()>,
    ) -> Check {
        match &self.slots[slot as usize] {
            Slot::Ghost(h) => match f(h) {
                Err(e) => Ok(format!("Err({})", err_name(&e))),
                Ok(()) => Err("an operation on a destroyed namespace's handle succeeded".into()),
            },
            _ => Ok("skip".into()),
        }
    }
}

fn stale(r: cerberus_engine::Result<()>, what: &str) -> Check {
    match r {
        Err(_) => Ok("Err(stale)".into()),
        Ok(()) => Err(format!("{what} after the database was closed succeeded")),
    }
}

fn bg(faulty: bool, call: &'static str, r: cerberus_engine::Result<()>) -> Check {
    cov(call);
    match r {
        Ok(()) => Ok("ok".into()),
        Err(_) if faulty => Ok("Err".into()),
        Err(e) => Err(format!("{call}: {e}")),
    }
}

fn check_indexes(got: &[cerberus_engine::IndexInfo], m: &NsModel) -> Result<(), String> {
    let mut g: Vec<(String, String, bool)> = got
        .iter()
        .map(|i| (i.attr.clone(), i.kind.to_string(), i.ready))
        .collect();
    g.sort();
    let mut w: Vec<(String, String, bool)> = m
        .indexes
        .iter()
        .map(|(a, k)| {
            (
                ATTRS[*a as usize].to_string(),
                kind_of(*k).to_string(),
                true,
            )
        })
        .collect();
    w.sort();
    if g != w {
        return Err(format!("list_indexes: {g:?}, expected {w:?}"));
    }
    Ok(())
}

fn write_result(
    m: &mut NsModel,
    faulty: bool,
    r: cerberus_engine::Result<()>,
    writes: &[(Vec<u8>, Option<Vec<u8>>)],
) -> Check {
    match r {
        Ok(()) => {
            for (k, v) in writes {
                m.write(k, v.clone());
            }
            Ok("ok".into())
        }
        Err(e) if faulty => {
            // A batch is all or nothing; per key that is one of old or new.
            let mut staged = NsModel {
                data: m.data.clone(),
                ..Default::default()
            };
            for (k, v) in writes {
                let cands_before = m.uncertain.get(k).cloned();
                let old = staged.data.get(k).cloned();
                m.write_failed(k, v.clone());
                if let Some(c) = cands_before {
                    for x in c {
                        if !m.uncertain[k].contains(&x) {
                            m.uncertain.get_mut(k).unwrap().push(x);
                        }
                    }
                }
                let _ = old;
                staged.write(k, v.clone());
            }
            Ok(format!("Err({})", err_name(&e)))
        }
        Err(e) => Err(format!("write failed: {e}")),
    }
}

fn check_read(
    m: &NsModel,
    faulty: bool,
    k: &[u8],
    r: cerberus_engine::Result<Option<Vec<u8>>>,
    get: bool,
) -> Check {
    let want = m.data.get(k);
    match r {
        Err(_) if faulty => Ok("Err".into()),
        Err(e) => Err(format!("read of {}: {e}", short(k))),
        Ok(g) => {
            if let Some(c) = m.uncertain.get(k) {
                let ok = c.iter().any(|x| {
                    if get {
                        x == &g
                    } else {
                        x.is_some() == g.is_some()
                    }
                });
                if !ok {
                    return Err(format!(
                        "read of {}: {} is none of the values a failed write may have left",
                        short(k),
                        show(&g)
                    ));
                }
                return Ok("uncertain".into());
            }
            let ok = if get {
                g.as_ref() == want
            } else {
                g.is_some() == want.is_some()
            };
            if ok {
                Ok(if get {
                    tr(show(&g))
                } else {
                    format!("{}", g.is_some())
                })
            } else if get {
                Err(format!(
                    "get {}: got {}, expected {}",
                    short(k),
                    show(&g),
                    show(&want)
                ))
            } else {
                Err(format!(
                    "contains {}: got {}, expected {}",
                    short(k),
                    g.is_some(),
                    want.is_some()
                ))
            }
        }
    }
}

/// The database an operation runs on: a host that can reopen it, or a shared one.
pub enum DbRef<'a> {
    Host(&'a mut Host),
    /// A database shared by threads, and its epoch.
    Shared(&'a Db, u64),
}

impl DbRef<'_> {
    fn db(&self) -> &Db {
        match self {
            DbRef::Host(h) => h.db(),
            DbRef::Shared(d, _) => d,
        }
    }

    fn epoch(&self) -> u64 {
        match self {
            DbRef::Host(h) => h.epoch,
            DbRef::Shared(_, e) => *e,
        }
    }

    fn host(&mut self) -> Option<&mut Host> {
        match self {
            DbRef::Host(h) => Some(h),
            DbRef::Shared(..) => None,
        }
    }
}

/// A failed run: where, why, and the answers up to there.
#[derive(Debug, Clone)]
pub struct Failure {
    pub config: String,
    pub op: usize,
    pub msg: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] op {}: {}", self.config, self.op, self.msg)
    }
}

/// Runs `ops` under `cfg` from an empty database, then reopens and checks everything;
/// returns the trace of answers.
pub fn run_log(cfg: &Config, ops: &[Op]) -> Result<Vec<String>, Failure> {
    let fail = |op: usize, msg: String| Failure {
        config: cfg.name.to_string(),
        op,
        msg,
    };
    let mut host = Host::new(cfg).map_err(|e| fail(0, e))?;
    let mut s = Session::new("", true, true, host.db());
    s.unsynced = cfg.storage == StorageSpec::Fault && !cfg.opts.sync;
    for (i, op) in ops.iter().enumerate() {
        let mut r = DbRef::Host(&mut host);
        if let Err(msg) = s.exec(&mut r, op) {
            return Err(fail(i, format!("{op}: {msg}")));
        }
    }
    // The end: heal any fault, reopen, and everything must be there.
    let n = ops.len();
    let mut r = DbRef::Host(&mut host);
    s.exec(&mut r, &Op::Heal)
        .map_err(|m| fail(n, format!("final heal: {m}")))?;
    s.exec(&mut r, &Op::Reopen)
        .map_err(|m| fail(n, format!("final reopen: {m}")))?;
    // Snapshots and iterators go before the database.
    drop(s.snaps.drain(..).collect::<Vec<_>>());
    drop(s.iters.drain(..).collect::<Vec<_>>());
    let trace = std::mem::take(&mut s.trace);
    drop(s);
    if let Some(db) = host.db.take() {
        let r = db.close();
        drop(db);
        host.join_runner();
        r.map_err(|e| fail(n, format!("final close: {e}")))?;
    }
    Ok(trace)
}
