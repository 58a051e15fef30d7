//! The seeded generator of operation logs: which operations it draws, and how.

use super::ops::{
    cmp_json, same_type, AggFn, Cond, FaultKind, FilterSpec, IdxKind, IterSpec, Op, Query, ATTRS,
    CURSOR_SLOTS, ITER_SLOTS, KEYS, NS_SLOTS, SNAP_SLOTS,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

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
    ("configure", 5),
    ("reopen", 5),
    ("crash", 4),
    ("inject", 3),
    ("heal", 4),
];

pub struct Gen {
    rng: SmallRng,
    /// Draws of operations added since seeds were kept (see `"get"`).
    side: SmallRng,
    /// Range and prefix deletes, added after a delete from a stream of their own: the
    /// other operations of a seed's log stay as they were.
    ranges: SmallRng,
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
            side: SmallRng::seed_from_u64(seed ^ 0x6E7_3A17),
            ranges: SmallRng::seed_from_u64(seed ^ 0xDE1_4A6E),
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

    /// A capacity about the size of a namespace's records (a few KB to tens of KB), or none.
    fn configure(&mut self) -> Op {
        let capacity = [None, Some(3_000), Some(10_000), Some(30_000)][self.rng.gen_range(0..4)];
        Op::Configure {
            ns: self.ns(),
            capacity,
        }
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

    /// Sometimes (one delete in six) a range or prefix delete, from its own stream: a few
    /// to a few tens of keys, now and then no end, an inverted range, or long keys.
    fn range_delete(&mut self) -> Option<Op> {
        let r = &mut self.ranges;
        if r.gen_range(0..6) != 0 {
            return None;
        }
        let ns = match r.gen_range(0..10) {
            0..=3 => 0,
            4..=6 => 1,
            _ => r.gen_range(0..NS_SLOTS),
        };
        let start = match r.gen_range(0..20) {
            0 => 1000 + r.gen_range(0..8),
            _ => r.gen_range(0..KEYS),
        };
        Some(match r.gen_range(0..2) {
            0 => Op::DeleteRange {
                ns,
                start,
                end: match r.gen_range(0..10) {
                    0 => None,
                    1 => Some(start.saturating_sub(r.gen_range(0..5))),
                    _ => Some(start + r.gen_range(1..30)),
                },
            },
            _ => {
                let key = String::from_utf8_lossy(&super::ops::key_bytes(start)).into_owned();
                let len = [2, 3, 3, 4, 4, 4][r.gen_range(0..6)];
                Op::DeletePrefix {
                    ns,
                    prefix: key[..len.min(key.len())].to_string(),
                }
            }
        })
    }

    /// A key as [`Gen::key`] draws them, from the side stream.
    fn side_key(&mut self) -> u16 {
        match self.side.gen_range(0..100) {
            0..=29 if !self.hot.is_empty() => self.hot[self.side.gen_range(0..self.hot.len())],
            30..=31 => 1000 + self.side.gen_range(0..8),
            _ => self.side.gen_range(0..KEYS),
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
            (_, 11) => big_number(r),
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
            "delete" => {
                let op = Op::Delete {
                    ns: self.ns(),
                    key: self.key(),
                };
                match self.range_delete() {
                    Some(range) => {
                        out.push(op);
                        range
                    }
                    None => op,
                }
            }
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
            "get" => {
                let (ns, key) = (self.ns(), self.key());
                // One get in four asks for more keys at once, drawn from a stream of its
                // own: the logs of older seeds (regression seeds) stay as they were.
                match self.side.gen_range(0..4) {
                    0 => {
                        let more = self.side.gen_range(0..9);
                        let mut keys = vec![key];
                        keys.extend((0..more).map(|_| self.side_key()));
                        Op::GetMany { ns, keys }
                    }
                    _ => Op::Get { ns, key },
                }
            }
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
                work: (self.rng.gen_range(0..4) == 0).then(|| self.rng.gen_range(1..3_000)),
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
            "flush" => {
                // One flush in three follows a checkpoint (often of unflushed writes), drawn
                // from the side stream: the main stream, and so older seeds' logs, stay aligned.
                if self.side.gen_ratio(1, 3) {
                    out.push(Op::Checkpoint);
                }
                Op::Flush
            }
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
            "configure" => {
                let op = self.configure();
                // One in three makes its namespace read-only or writable instead, drawn from
                // the side stream: the main stream, and so older seeds' logs, stay aligned.
                match (op, self.side.gen_range(0..3)) {
                    (Op::Configure { ns, .. }, 0) => Op::ReadOnly {
                        ns,
                        on: self.side.gen_bool(0.4),
                    },
                    (op, _) => op,
                }
            }
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

/// A number where `f64` is not exact, so that values an `f64` would merge are told apart:
/// integers at and past 2^53 (both signs), at the ends of `i64` and `u64`, the decimals
/// nearest them, snowflake-sized ids, and zero's two forms. Picked from few values each, so
/// filters and duplicates hit them.
fn big_number(r: &mut SmallRng) -> Value {
    const P53: i64 = 1 << 53;
    let d = r.gen_range(-1i64..=1);
    match r.gen_range(0..9) {
        0 => json!(P53 + d),
        1 => json!(-P53 - d),
        2 => json!(i64::MAX - d.abs()),
        3 => json!(i64::MIN + d.abs()),
        4 => json!(u64::MAX - d.unsigned_abs()),
        5 => json!((1u64 << 63) + d.unsigned_abs()),
        6 => json!(1_234_567_890_123_456_789i64 + d),
        // Decimals: 2^53 and its even neighbours, 2^63, -0.0.
        7 => json!(
            [
                P53 as f64,
                (P53 + 2) as f64,
                -(P53 as f64),
                (1u64 << 63) as f64
            ][d.unsigned_abs() as usize % 4]
        ),
        _ => json!(-0.0),
    }
}
