//! The operations of the stress test and their seeded generator.
//!
//! Operations name namespaces, snapshots and iterators by slot number, never by id: an
//! operation whose slot holds nothing is skipped, so any sub-list of a log is a valid log
//! (what shrinking needs).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::fmt;

/// Namespace slots; slot 0 is the default namespace in a single-threaded run.
pub const NS_SLOTS: u8 = 4;
pub const SNAP_SLOTS: u8 = 3;
pub const ITER_SLOTS: u8 = 3;
/// Finds paged across other operations.
pub const CURSOR_SLOTS: u8 = 2;
/// Keys per namespace (small, so that keys are overwritten and the log has garbage).
pub const KEYS: u16 = 160;
/// Attributes values carry, and that indexes and queries name.
pub const ATTRS: [&str; 5] = ["a", "b", "c", "n.x", "t"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdxKind {
    Classic,
    Vas,
}

/// One condition of a filter, on `ATTRS[attr]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Eq(Value),
    /// Lower bound (value, inclusive), upper bound; both of one JSON type.
    Range(Option<(Value, bool)>, Option<(Value, bool)>),
    In(Vec<Value>),
    Prefix(String),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct FilterSpec {
    pub conds: Vec<(u8, Cond)>,
}

impl FilterSpec {
    /// The filter document.
    pub fn doc(&self) -> Value {
        let one = |(a, c): &(u8, Cond)| -> Value {
            let name = ATTRS[*a as usize];
            let v = match c {
                Cond::Eq(v) if v.is_null() || v.is_boolean() => json!({ "$eq": v }),
                Cond::Eq(v) => v.clone(),
                Cond::Range(lo, hi) => {
                    let mut m = serde_json::Map::new();
                    if let Some((v, incl)) = lo {
                        m.insert(if *incl { "$gte" } else { "$gt" }.into(), v.clone());
                    }
                    if let Some((v, incl)) = hi {
                        m.insert(if *incl { "$lte" } else { "$lt" }.into(), v.clone());
                    }
                    Value::Object(m)
                }
                Cond::In(vs) => json!({ "$in": vs }),
                Cond::Prefix(p) => json!({ "$prefix": p }),
            };
            let mut m = serde_json::Map::new();
            m.insert(name.into(), v);
            Value::Object(m)
        };
        match self.conds.len() {
            0 => json!({}),
            1 => one(&self.conds[0]),
            _ => json!({ "$and": self.conds.iter().map(one).collect::<Vec<_>>() }),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum AggFn {
    Count,
    /// `count` of an attribute: the records holding it, not null (`COUNT(x)`).
    CountOf(u8),
    Sum(u8),
    Avg(u8),
    Min(u8),
    Max(u8),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Query {
    Find {
        filter: FilterSpec,
        projection: Option<Vec<u8>>,
        limit: Option<u64>,
        page_bytes: usize,
    },
    BySecondary {
        attr: u8,
        value: Value,
        limit: Option<usize>,
    },
    Top {
        filter: FilterSpec,
        by: u8,
        desc: bool,
        k: usize,
        projection: Option<Vec<u8>>,
    },
    Aggregate {
        filter: FilterSpec,
        f: AggFn,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct IterSpec {
    pub upper: Option<u16>,
    pub prefix: Option<String>,
    pub keys_only: bool,
    pub prefetch: usize,
    pub index_prefetch: bool,
}

/// Kinds of I/O an injected fault fails (a subset of `IoKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    Append,
    Sync,
    Create,
    Rename,
    Read,
    Open,
    Delete,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Put {
        ns: u8,
        key: u16,
        value: Vec<u8>,
        sync: bool,
    },
    Delete {
        ns: u8,
        key: u16,
    },
    Batch {
        ns: u8,
        writes: Vec<(u16, Option<Vec<u8>>)>,
    },
    Get {
        ns: u8,
        key: u16,
    },
    Contains {
        ns: u8,
        key: u16,
    },
    CreateNs {
        ns: u8,
    },
    DestroyNs {
        ns: u8,
    },
    CreateIndex {
        ns: u8,
        attr: u8,
        kind: IdxKind,
    },
    DropIndex {
        ns: u8,
        attr: u8,
    },
    ListIndexes {
        ns: u8,
    },
    /// A query on a namespace (`doc`: through `run_query`).
    Query {
        ns: u8,
        q: Query,
        doc: bool,
    },
    SnapOpen {
        snap: u8,
        ns: u8,
    },
    SnapClose {
        snap: u8,
    },
    SnapGet {
        snap: u8,
        key: u16,
    },
    SnapContains {
        snap: u8,
        key: u16,
    },
    SnapQuery {
        snap: u8,
        q: Query,
    },
    /// The first page of a find whose later pages come in later operations (each page reads
    /// the namespace as it is then).
    PageOpen {
        cur: u8,
        ns: u8,
        filter: FilterSpec,
        projection: Option<Vec<u8>>,
        page_bytes: usize,
    },
    PageNext {
        cur: u8,
    },
    /// Opens an iterator on a namespace, or on a snapshot if `snap` is given.
    IterOpen {
        it: u8,
        ns: u8,
        snap: Option<u8>,
        spec: IterSpec,
    },
    IterSeek {
        it: u8,
        key: u16,
    },
    IterNext {
        it: u8,
        n: u8,
    },
    IterClose {
        it: u8,
    },
    Flush,
    WaitForCompactions,
    CompactRange {
        ns: Option<u8>,
        start: Option<u16>,
        end: Option<u16>,
    },
    CompactAll,
    Gc,
    SyncLog,
    Stats,
    Reopen,
    /// Power cut (fault storage): unsynced data is lost; elsewhere a reopen.
    Crash,
    /// Arms an I/O fault on the fault storage (elsewhere nothing).
    Inject {
        kind: FaultKind,
        nth: u8,
        sticky: bool,
    },
    /// Disarms the fault, power-cycles and reopens; the state must hold every acknowledged
    /// write, and each failed one either wholly or not at all.
    Heal,
}

pub fn key_bytes(k: u16) -> Vec<u8> {
    if k >= 1000 {
        // A few long keys.
        let mut v = format!("k{k:04}-").into_bytes();
        v.resize(100, b'a' + (k % 26) as u8);
        v
    } else {
        format!("k{k:03}").into_bytes()
    }
}

pub fn short(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(v);
    if s.len() > 90 {
        let cut = (0..=90).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        format!("{}…[{} B]", &s[..cut], v.len())
    } else {
        s.into_owned()
    }
}

fn attrs(v: &Option<Vec<u8>>) -> String {
    match v {
        None => "-".into(),
        Some(v) => v
            .iter()
            .map(|a| ATTRS[*a as usize])
            .collect::<Vec<_>>()
            .join(","),
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::Find {
                filter,
                projection,
                limit,
                page_bytes,
            } => write!(
                f,
                "find {} project={} limit={limit:?} page_bytes={page_bytes}",
                filter.doc(),
                attrs(projection)
            ),
            Query::BySecondary { attr, value, limit } => write!(
                f,
                "get_by_secondary {}={value} limit={limit:?}",
                ATTRS[*attr as usize]
            ),
            Query::Top {
                filter,
                by,
                desc,
                k,
                projection,
            } => write!(
                f,
                "top {} by={} desc={desc} k={k} project={}",
                filter.doc(),
                ATTRS[*by as usize],
                attrs(projection)
            ),
            Query::Aggregate { filter, f: func } => {
                let a = |x: &u8| ATTRS[*x as usize];
                let func = match func {
                    AggFn::Count => "count".to_string(),
                    AggFn::CountOf(x) => format!("count({})", a(x)),
                    AggFn::Sum(x) => format!("sum({})", a(x)),
                    AggFn::Avg(x) => format!("avg({})", a(x)),
                    AggFn::Min(x) => format!("min({})", a(x)),
                    AggFn::Max(x) => format!("max({})", a(x)),
                };
                write!(f, "aggregate {} {func}", filter.doc())
            }
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = |k: &u16| String::from_utf8_lossy(&key_bytes(*k)).into_owned();
        match self {
            Op::Put {
                ns,
                key,
                value,
                sync,
            } => write!(
                f,
                "put ns{ns} {}{} = {}",
                k(key),
                if *sync { " (sync)" } else { "" },
                short(value)
            ),
            Op::Delete { ns, key } => write!(f, "delete ns{ns} {}", k(key)),
            Op::Batch { ns, writes } => {
                write!(f, "batch ns{ns} [")?;
                for (i, (key, v)) in writes.iter().enumerate() {
                    if i > 0 {
                        write!(f, "; ")?;
                    }
                    match v {
                        Some(v) => write!(f, "put {} = {}", k(key), short(v))?,
                        None => write!(f, "delete {}", k(key))?,
                    }
                }
                write!(f, "]")
            }
            Op::Get { ns, key } => write!(f, "get ns{ns} {}", k(key)),
            Op::Contains { ns, key } => write!(f, "contains ns{ns} {}", k(key)),
            Op::CreateNs { ns } => write!(f, "create_namespace ns{ns}"),
            Op::DestroyNs { ns } => write!(f, "destroy_namespace ns{ns}"),
            Op::CreateIndex { ns, attr, kind } => {
                write!(f, "create_index ns{ns} {} {kind:?}", ATTRS[*attr as usize])
            }
            Op::DropIndex { ns, attr } => {
                write!(f, "drop_index ns{ns} {}", ATTRS[*attr as usize])
            }
            Op::ListIndexes { ns } => write!(f, "list_indexes ns{ns}"),
            Op::Query { ns, q, doc } => {
                write!(f, "{}ns{ns} {q}", if *doc { "run_query " } else { "" })
            }
            Op::SnapOpen { snap, ns } => write!(f, "snapshot s{snap} = ns{ns}"),
            Op::SnapClose { snap } => write!(f, "release s{snap}"),
            Op::SnapGet { snap, key } => write!(f, "s{snap}.get {}", k(key)),
            Op::SnapContains { snap, key } => write!(f, "s{snap}.contains {}", k(key)),
            Op::SnapQuery { snap, q } => write!(f, "s{snap}.{q}"),
            Op::PageOpen {
                cur,
                ns,
                filter,
                projection,
                page_bytes,
            } => write!(
                f,
                "c{cur} = ns{ns} find {} project={} page_bytes={page_bytes} (first page)",
                filter.doc(),
                attrs(projection)
            ),
            Op::PageNext { cur } => write!(f, "c{cur}.next_page"),
            Op::IterOpen { it, ns, snap, spec } => write!(
                f,
                "iter i{it} = {} {spec:?}",
                match snap {
                    Some(s) => format!("s{s}"),
                    None => format!("ns{ns}"),
                }
            ),
            Op::IterSeek { it, key } => write!(f, "i{it}.seek {}", k(key)),
            Op::IterNext { it, n } => write!(f, "i{it}.next x{n}"),
            Op::IterClose { it } => write!(f, "drop i{it}"),
            Op::Flush => write!(f, "flush"),
            Op::WaitForCompactions => write!(f, "wait_for_compactions"),
            Op::CompactRange { ns, start, end } => write!(
                f,
                "compact_range {} {:?}..{:?}",
                ns.map_or("db".to_string(), |n| format!("ns{n}")),
                start.as_ref().map(k),
                end.as_ref().map(k)
            ),
            Op::CompactAll => write!(f, "compact_all"),
            Op::Gc => write!(f, "gc_value_log"),
            Op::SyncLog => write!(f, "sync_log"),
            Op::Stats => write!(f, "stats + list_namespaces"),
            Op::Reopen => write!(f, "close + reopen"),
            Op::Crash => write!(f, "crash + reopen"),
            Op::Inject { kind, nth, sticky } => {
                write!(f, "inject {kind:?} nth={nth} sticky={sticky}")
            }
            Op::Heal => write!(f, "heal (disarm, power cycle, reopen)"),
        }
    }
}

/// Which operations the generator draws, and with which weights.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Reopen, crash and fault injection (off for the threads of a concurrent run).
    pub lifecycle: bool,
    /// Namespace creation and destruction of slot 0 too (off when slot 0 is the default).
    pub destroy_slot0: bool,
    /// Db-wide background calls (flush, compaction, GC).
    pub db_calls: bool,
}

/// The generator's operations and weights (the report prints them).
pub const WEIGHTS: &[(&str, u32)] = &[
    ("put", 220),
    ("delete", 50),
    ("batch", 40),
    ("get", 90),
    ("contains", 25),
    ("create_namespace", 8),
    ("destroy_namespace", 3),
    ("create_index", 12),
    ("drop_index", 9),
    ("list_indexes", 6),
    ("query", 90),
    ("snapshot", 12),
    ("release", 6),
    ("snapshot_read", 30),
    ("snapshot_query", 15),
    ("page_open", 6),
    ("page_next", 14),
    ("iter_open", 14),
    ("iter_seek", 14),
    ("iter_next", 40),
    ("iter_drop", 5),
    ("flush", 12),
    ("wait_for_compactions", 4),
    ("compact_range", 6),
    ("compact_all", 3),
    ("gc_value_log", 10),
    ("sync_log", 3),
    ("stats", 3),
    ("reopen", 5),
    ("crash", 4),
    ("inject", 3),
    ("heal", 4),
];

pub struct Gen {
    rng: SmallRng,
    cfg: GenConfig,
    total: u32,
    seq: u64,
    /// Keys recently written, per namespace slot, so reads hit more often than not.
    hot: Vec<u16>,
    /// Indexes this log created (as far as the generator knows), so that drops hit and the
    /// database often has no index at all (defect 1 of issue 30 needs that).
    indexed: Vec<(u8, u8)>,
}

impl Gen {
    pub fn new(seed: u64, cfg: GenConfig) -> Gen {
        let total = WEIGHTS
            .iter()
            .filter(|(n, _)| cfg_allows(&cfg, n))
            .map(|(_, w)| w)
            .sum();
        Gen {
            rng: SmallRng::seed_from_u64(seed),
            cfg,
            total,
            seq: 0,
            hot: Vec::new(),
            indexed: Vec::new(),
        }
    }

    pub fn ops(&mut self, n: usize) -> Vec<Op> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            self.next_ops(&mut out);
        }
        out
    }

    fn ns(&mut self) -> u8 {
        // Slot 0 and 1 take most of the traffic.
        match self.rng.gen_range(0..10) {
            0..=3 => 0,
            4..=6 => 1,
            7..=8 => 2,
            _ => self.rng.gen_range(0..NS_SLOTS),
        }
    }

    fn key(&mut self) -> u16 {
        match self.rng.gen_range(0..100) {
            0..=29 if !self.hot.is_empty() => self.hot[self.rng.gen_range(0..self.hot.len())],
            30..=31 => 1000 + self.rng.gen_range(0..8),
            _ => self.rng.gen_range(0..KEYS),
        }
    }

    fn written(&mut self, k: u16) {
        if self.hot.len() < 32 {
            self.hot.push(k);
        } else {
            let i = self.rng.gen_range(0..32);
            self.hot[i] = k;
        }
    }

    /// A JSON scalar from the domain of attribute `attr`.
    pub fn scalar(&mut self, attr: u8) -> Value {
        let r = &mut self.rng;
        match (attr, r.gen_range(0..12)) {
            (_, 0) => Value::Null,
            (_, 1) if attr == 4 => json!(r.gen_bool(0.5)),
            (0 | 3, _) => json!(r.gen_range(-1..8)),
            (1, _) => json!(["", "x", "xy", "y", "yz", "z", "é"][r.gen_range(0..7)]),
            (2, _) => json!(f64::from(r.gen_range(-16..16)) / 4.0),
            (_, 2..=5) => json!(r.gen_range(0..5)),
            (_, 6..=8) => json!(["p", "q", "pq"][r.gen_range(0..3)]),
            _ => json!(f64::from(r.gen_range(-8..8)) / 2.0),
        }
    }

    fn scalar_of_type(&mut self, attr: u8, like: &Value) -> Value {
        for _ in 0..20 {
            let v = self.scalar(attr);
            if same_type(&v, like) {
                return v;
            }
        }
        like.clone()
    }

    pub fn value(&mut self) -> Vec<u8> {
        self.seq += 1;
        let seq = self.seq;
        let pad_len = match self.rng.gen_range(0..100) {
            0..=69 => self.rng.gen_range(0..24),
            70..=93 => self.rng.gen_range(60..600),
            _ => self.rng.gen_range(2_000..9_000),
        };
        let pad: String = (0..pad_len)
            .map(|i| (b'a' + ((i as u64 + seq) % 26) as u8) as char)
            .collect();
        match self.rng.gen_range(0..100) {
            0..=79 => {
                let mut m = serde_json::Map::new();
                m.insert("s".into(), json!(seq));
                for a in 0..ATTRS.len() as u8 {
                    if self.rng.gen_range(0..10) == 0 {
                        continue; // missing
                    }
                    let v = self.scalar(a);
                    match ATTRS[a as usize] {
                        "n.x" => {
                            let n = match self.rng.gen_range(0..10) {
                                0 => json!(5),
                                1 => json!({ "y": v }),
                                _ => json!({ "x": v, "y": 1 }),
                            };
                            m.insert("n".into(), n);
                        }
                        "t" if self.rng.gen_range(0..8) == 0 => {
                            m.insert("t".into(), json!([v, 1]));
                        }
                        name => {
                            m.insert(name.into(), v);
                        }
                    }
                }
                if pad_len > 0 {
                    m.insert("pad".into(), json!(pad));
                }
                serde_json::to_vec(&Value::Object(m)).unwrap()
            }
            80..=89 => {
                let mut v = format!("\u{1}raw{seq}:").into_bytes();
                v.extend_from_slice(pad.as_bytes());
                v
            }
            90..=96 => match self.rng.gen_range(0..3) {
                0 => format!("[{seq},\"{pad}\"]").into_bytes(),
                1 => format!("\"{seq}{pad}\"").into_bytes(),
                _ => format!("{seq}").into_bytes(),
            },
            _ => Vec::new(),
        }
    }

    pub fn filter(&mut self) -> FilterSpec {
        let n = match self.rng.gen_range(0..10) {
            0..=1 => 0,
            2..=7 => 1,
            _ => 2,
        };
        let mut conds = Vec::new();
        for _ in 0..n {
            let attr = self.rng.gen_range(0..ATTRS.len() as u8);
            let c = match self.rng.gen_range(0..10) {
                0..=3 => Cond::Eq(self.scalar(attr)),
                4..=7 => {
                    let a = self.scalar(attr);
                    let lo = self.rng.gen_bool(0.7).then(|| a.clone());
                    let hi = if lo.is_none() || self.rng.gen_bool(0.5) {
                        Some(self.scalar_of_type(attr, &a))
                    } else {
                        None
                    };
                    let (lo, hi) = match (lo, hi) {
                        (Some(l), Some(h))
                            if self.rng.gen_bool(0.8) && cmp_json(&l, &h).is_gt() =>
                        {
                            (Some(h), Some(l))
                        }
                        other => other,
                    };
                    Cond::Range(
                        lo.map(|v| (v, self.rng.gen_bool(0.5))),
                        hi.map(|v| (v, self.rng.gen_bool(0.5))),
                    )
                }
                8 => {
                    let k = self.rng.gen_range(0..4);
                    Cond::In((0..k).map(|_| self.scalar(attr)).collect())
                }
                _ => Cond::Prefix(["", "x", "y", "p", "q"][self.rng.gen_range(0..5)].into()),
            };
            conds.push((attr, c));
        }
        FilterSpec { conds }
    }

    fn projection(&mut self) -> Option<Vec<u8>> {
        self.rng.gen_bool(0.3).then(|| {
            let n = self.rng.gen_range(1..3);
            (0..n)
                .map(|_| self.rng.gen_range(0..ATTRS.len() as u8))
                .collect()
        })
    }

    fn query(&mut self) -> Query {
        match self.rng.gen_range(0..10) {
            0..=4 => Query::Find {
                filter: self.filter(),
                projection: self.projection(),
                limit: match self.rng.gen_range(0..4) {
                    0 => Some(self.rng.gen_range(0..20)),
                    _ => None,
                },
                page_bytes: match self.rng.gen_range(0..4) {
                    0 => 1,
                    1 => self.rng.gen_range(100..2_000),
                    2 => 16 << 10,
                    _ => 1 << 20,
                },
            },
            5 => {
                let attr = self.rng.gen_range(0..ATTRS.len() as u8);
                Query::BySecondary {
                    attr,
                    value: self.scalar(attr),
                    limit: self.rng.gen_bool(0.3).then(|| self.rng.gen_range(0..5)),
                }
            }
            6..=7 => Query::Top {
                filter: self.filter(),
                by: self.rng.gen_range(0..ATTRS.len() as u8),
                desc: self.rng.gen_bool(0.5),
                k: [0, 1, 3, 10, 1000][self.rng.gen_range(0..5)],
                projection: self.projection(),
            },
            _ => {
                let a = self.rng.gen_range(0..ATTRS.len() as u8);
                Query::Aggregate {
                    filter: self.filter(),
                    f: match self.rng.gen_range(0..6) {
                        0 => AggFn::Count,
                        5 => AggFn::CountOf(a),
                        1 => AggFn::Sum(a),
                        2 => AggFn::Avg(a),
                        3 => AggFn::Min(a),
                        _ => AggFn::Max(a),
                    },
                }
            }
        }
    }

    fn pick(&mut self) -> &'static str {
        let mut x = self.rng.gen_range(0..self.total);
        for (name, w) in WEIGHTS {
            if !cfg_allows(&self.cfg, name) {
                continue;
            }
            if x < *w {
                return name;
            }
            x -= w;
        }
        unreachable!()
    }

    fn next_ops(&mut self, out: &mut Vec<Op>) {
        let name = self.pick();
        let op = match name {
            "put" => {
                let (ns, key) = (self.ns(), self.key());
                self.written(key);
                Op::Put {
                    ns,
                    key,
                    value: self.value(),
                    sync: self.rng.gen_range(0..20) == 0,
                }
            }
            "delete" => Op::Delete {
                ns: self.ns(),
                key: self.key(),
            },
            "batch" => {
                let ns = self.ns();
                let n = self.rng.gen_range(1..12);
                let writes = (0..n)
                    .map(|_| {
                        let k = self.key();
                        let v = self.rng.gen_bool(0.8).then(|| self.value());
                        (k, v)
                    })
                    .collect();
                Op::Batch { ns, writes }
            }
            "get" => Op::Get {
                ns: self.ns(),
                key: self.key(),
            },
            "contains" => Op::Contains {
                ns: self.ns(),
                key: self.key(),
            },
            "create_namespace" => Op::CreateNs {
                ns: self.rng.gen_range(0..NS_SLOTS),
            },
            "destroy_namespace" => {
                let lo = if self.cfg.destroy_slot0 { 0 } else { 1 };
                Op::DestroyNs {
                    ns: self.rng.gen_range(lo..NS_SLOTS),
                }
            }
            "create_index" => {
                let (ns, attr) = (self.ns(), self.rng.gen_range(0..ATTRS.len() as u8));
                if !self.indexed.contains(&(ns, attr)) {
                    self.indexed.push((ns, attr));
                }
                let op = Op::CreateIndex {
                    ns,
                    attr,
                    kind: if self.rng.gen_bool(0.5) {
                        IdxKind::Classic
                    } else {
                        IdxKind::Vas
                    },
                };
                // Defect 1's shape: GC with unflushed rewrites, then an index, then a reopen.
                if self.cfg.db_calls && self.rng.gen_bool(0.5) {
                    out.push(Op::Gc);
                    out.push(op);
                    if self.cfg.lifecycle && self.rng.gen_bool(0.5) {
                        out.push(Op::Reopen);
                    }
                    return;
                }
                op
            }
            "drop_index" => {
                if !self.indexed.is_empty() && self.rng.gen_range(0..5) > 0 {
                    let i = self.rng.gen_range(0..self.indexed.len());
                    let (ns, attr) = self.indexed.swap_remove(i);
                    Op::DropIndex { ns, attr }
                } else {
                    Op::DropIndex {
                        ns: self.ns(),
                        attr: self.rng.gen_range(0..ATTRS.len() as u8),
                    }
                }
            }
            "list_indexes" => Op::ListIndexes { ns: self.ns() },
            "query" => Op::Query {
                ns: self.ns(),
                q: self.query(),
                doc: self.rng.gen_range(0..4) == 0,
            },
            "snapshot" => Op::SnapOpen {
                snap: self.rng.gen_range(0..SNAP_SLOTS),
                ns: self.ns(),
            },
            "release" => Op::SnapClose {
                snap: self.rng.gen_range(0..SNAP_SLOTS),
            },
            "snapshot_read" => {
                let (snap, key) = (self.rng.gen_range(0..SNAP_SLOTS), self.key());
                if self.rng.gen_bool(0.7) {
                    Op::SnapGet { snap, key }
                } else {
                    Op::SnapContains { snap, key }
                }
            }
            "snapshot_query" => Op::SnapQuery {
                snap: self.rng.gen_range(0..SNAP_SLOTS),
                q: self.query(),
            },
            "page_open" => Op::PageOpen {
                cur: self.rng.gen_range(0..CURSOR_SLOTS),
                ns: self.ns(),
                filter: self.filter(),
                projection: self.projection(),
                page_bytes: self.rng.gen_range(1..3_000),
            },
            "page_next" => Op::PageNext {
                cur: self.rng.gen_range(0..CURSOR_SLOTS),
            },
            "iter_open" => Op::IterOpen {
                it: self.rng.gen_range(0..ITER_SLOTS),
                ns: self.ns(),
                snap: self
                    .rng
                    .gen_bool(0.4)
                    .then(|| self.rng.gen_range(0..SNAP_SLOTS)),
                spec: IterSpec {
                    upper: self.rng.gen_bool(0.3).then(|| self.rng.gen_range(0..KEYS)),
                    prefix: self
                        .rng
                        .gen_bool(0.2)
                        .then(|| format!("k{}", self.rng.gen_range(0..2))),
                    keys_only: self.rng.gen_bool(0.2),
                    prefetch: [0, 0, 2, 8][self.rng.gen_range(0..4)],
                    index_prefetch: self.rng.gen_bool(0.3),
                },
            },
            "iter_seek" => Op::IterSeek {
                it: self.rng.gen_range(0..ITER_SLOTS),
                key: self.key(),
            },
            "iter_next" => Op::IterNext {
                it: self.rng.gen_range(0..ITER_SLOTS),
                n: [1, 1, 3, 10, 50][self.rng.gen_range(0..5)],
            },
            "iter_drop" => Op::IterClose {
                it: self.rng.gen_range(0..ITER_SLOTS),
            },
            "flush" => Op::Flush,
            "wait_for_compactions" => Op::WaitForCompactions,
            "compact_range" => {
                let a = self.rng.gen_bool(0.6).then(|| self.rng.gen_range(0..KEYS));
                let b = self.rng.gen_bool(0.6).then(|| self.rng.gen_range(0..KEYS));
                Op::CompactRange {
                    ns: self.rng.gen_bool(0.6).then(|| self.ns()),
                    start: a.min(b).or(a),
                    end: a.max(b),
                }
            }
            "compact_all" => Op::CompactAll,
            "gc_value_log" => Op::Gc,
            "sync_log" => Op::SyncLog,
            "stats" => Op::Stats,
            "reopen" => Op::Reopen,
            "crash" => Op::Crash,
            "inject" => Op::Inject {
                kind: [
                    FaultKind::Append,
                    FaultKind::Sync,
                    FaultKind::Create,
                    FaultKind::Rename,
                    FaultKind::Read,
                    FaultKind::Open,
                    FaultKind::Delete,
                ][self.rng.gen_range(0..7)],
                nth: self.rng.gen_range(0..30),
                sticky: self.rng.gen_bool(0.3),
            },
            "heal" => Op::Heal,
            other => unreachable!("{other}"),
        };
        out.push(op);
    }
}

fn cfg_allows(cfg: &GenConfig, name: &str) -> bool {
    match name {
        "reopen" | "crash" | "inject" | "heal" | "sync_log" => cfg.lifecycle,
        "flush"
        | "wait_for_compactions"
        | "compact_range"
        | "compact_all"
        | "gc_value_log"
        | "stats" => cfg.db_calls,
        _ => true,
    }
}

pub fn same_type(a: &Value, b: &Value) -> bool {
    type_rank(a) == type_rank(b)
}

pub fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

/// Order of JSON scalars as secondary keys: null < booleans < numbers < strings; numbers
/// as f64, strings by bytes.
pub fn cmp_json(a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}
