//! The operations of the stress test and how they print (their generator is in `generator.rs`).
//!
//! Operations name namespaces, snapshots and iterators by slot number, never by id: an
//! operation whose slot holds nothing is skipped, so any sub-list of a log is a valid log
//! (what shrinking needs).

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
    /// `Namespace::delete_range` from key `start` to key `end` (`None`: no bound).
    DeleteRange {
        ns: u8,
        start: u16,
        end: Option<u16>,
    },
    /// `Namespace::delete_prefix` (the first bytes of a key).
    DeletePrefix {
        ns: u8,
        prefix: String,
    },
    Get {
        ns: u8,
        key: u16,
    },
    Contains {
        ns: u8,
        key: u16,
    },
    /// `Namespace::get_many` of `keys` (repeats and missing keys among them).
    GetMany {
        ns: u8,
        keys: Vec<u16>,
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
    /// A query on a namespace (`doc`: through `run_query`; `work`: under that work limit,
    /// where it may stop with `WorkLimit` instead of answering).
    Query {
        ns: u8,
        q: Query,
        doc: bool,
        work: Option<u64>,
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
    /// Gives namespace slot `ns` a capacity (`None`: none).
    Configure {
        ns: u8,
        capacity: Option<u32>,
    },
    /// Makes namespace slot `ns` read-only (`on`) or writable again (`read_only.rs`).
    ReadOnly {
        ns: u8,
        on: bool,
    },
    Reopen,
    /// A checkpoint, opened and compared with the model (`checkpoint.rs`).
    Checkpoint,
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
            Op::DeleteRange { ns, start, end } => {
                let end = end.as_ref().map_or("(no end)".into(), k);
                write!(f, "delete_range ns{ns} {}..{end}", k(start))
            }
            Op::DeletePrefix { ns, prefix } => write!(f, "delete_prefix ns{ns} {prefix:?}"),
            Op::Get { ns, key } => write!(f, "get ns{ns} {}", k(key)),
            Op::Contains { ns, key } => write!(f, "contains ns{ns} {}", k(key)),
            Op::GetMany { ns, keys } => {
                let keys: Vec<String> = keys.iter().map(k).collect();
                write!(f, "get_many ns{ns} [{}]", keys.join(", "))
            }
            Op::CreateNs { ns } => write!(f, "create_namespace ns{ns}"),
            Op::DestroyNs { ns } => write!(f, "destroy_namespace ns{ns}"),
            Op::CreateIndex { ns, attr, kind } => {
                write!(f, "create_index ns{ns} {} {kind:?}", ATTRS[*attr as usize])
            }
            Op::DropIndex { ns, attr } => {
                write!(f, "drop_index ns{ns} {}", ATTRS[*attr as usize])
            }
            Op::ListIndexes { ns } => write!(f, "list_indexes ns{ns}"),
            Op::Query { ns, q, doc, work } => {
                write!(f, "{}ns{ns} {q}", if *doc { "run_query " } else { "" })?;
                match work {
                    Some(w) => write!(f, " (work limit {w})"),
                    None => Ok(()),
                }
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
            Op::Configure { ns, capacity } => write!(f, "configure ns{ns} capacity {capacity:?}"),
            Op::ReadOnly { ns, on } => write!(f, "set_read_only ns{ns} {on}"),
            Op::Reopen => write!(f, "close + reopen"),
            Op::Checkpoint => write!(f, "checkpoint + open it"),
            Op::Crash => write!(f, "crash + reopen"),
            Op::Inject { kind, nth, sticky } => {
                write!(f, "inject {kind:?} nth={nth} sticky={sticky}")
            }
            Op::Heal => write!(f, "heal (disarm, power cycle, reopen)"),
        }
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
/// by exact value (an `i64`/`u64` with every digit, against an `f64` exactly), strings by
/// bytes.
pub fn cmp_json(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => cmp_number(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

/// The integer a JSON number is exactly, if it is an `i64` or `u64`.
pub fn json_int(n: &serde_json::Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Two JSON numbers by exact value, worked out here apart from the engine's encoding:
/// integers as `i128`, decimals as `f64`, an integer against a decimal through the decimal's
/// floor (exact below 2^100) or, past that, its sign.
pub fn cmp_number(x: &serde_json::Number, y: &serde_json::Number) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let int_vs_float = |i: i128, f: f64| -> Ordering {
        if f.abs() >= 1e30 {
            return if f > 0.0 {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let floor = f.floor() as i128;
        match i.cmp(&floor) {
            Ordering::Equal if f.fract() != 0.0 => Ordering::Less,
            o => o,
        }
    };
    match (json_int(x), json_int(y)) {
        (Some(i), Some(j)) => i.cmp(&j),
        (Some(i), None) => int_vs_float(i, y.as_f64().unwrap()),
        (None, Some(j)) => int_vs_float(j, x.as_f64().unwrap()).reverse(),
        (None, None) => {
            let (f, g) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            f.partial_cmp(&g).unwrap_or(Ordering::Equal)
        }
    }
}
