//! The expected state: a map per namespace and its index definitions, and the answers every
//! read and query must give, computed from the map alone (no engine code: the filter is
//! evaluated here on parsed JSON).

use super::ops::{cmp_json, json_int, type_rank, AggFn, Cond, FilterSpec, IdxKind, ATTRS};
use serde_json::{json, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Numbers acknowledged writes in the order they were made, across namespaces.
static WRITE_ORDER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[derive(Clone, Debug, Default)]
pub struct NsModel {
    pub data: BTreeMap<Vec<u8>, Vec<u8>>,
    pub indexes: BTreeMap<u8, IdxKind>,
    /// Keys a failed write left undecided: each may hold any of these (None: no value).
    pub uncertain: BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
    /// A failed index create or drop left the index set undecided.
    pub indexes_uncertain: bool,
    /// Keys written since the last sync point, with the value they had then and every value
    /// written since: what a crash may leave of an unsynced write.
    pub since_sync: BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
    /// The same writes in the order they were acknowledged, numbered by one counter for all
    /// namespaces: a crash keeps a prefix of them (`prefix.rs`).
    pub since_sync_order: Vec<(u64, Vec<u8>, Option<Vec<u8>>)>,
    /// Acknowledged writes so far (a paged find is complete only if none came between
    /// its pages).
    pub writes: u64,
    /// The capacity every accepted put keeps the records under (`None`: none, or a failed
    /// configure left it unknown); `may_refuse`: a capacity may be set.
    pub capacity: Option<u64>,
    pub may_refuse: bool,
    /// The namespace is read-only: every write of it is refused (`read_only.rs`).
    pub read_only: bool,
}

impl NsModel {
    /// A crash without sync: every key written since the last sync point may hold any value
    /// it had since.
    pub fn crash_unsynced(&mut self) {
        for (k, cands) in std::mem::take(&mut self.since_sync) {
            let c = self.uncertain.entry(k).or_default();
            for x in cands {
                if !c.contains(&x) {
                    c.push(x);
                }
            }
        }
    }

    pub fn certain(&self) -> bool {
        self.uncertain.is_empty()
    }

    /// Records a write that failed: the key may hold its old value or the new one.
    pub fn write_failed(&mut self, key: &[u8], new: Option<Vec<u8>>) {
        self.writes += 1;
        let old = self.data.get(key).cloned();
        let c = self.uncertain.entry(key.to_vec()).or_default();
        if !c.contains(&old) {
            c.push(old);
        }
        if !c.contains(&new) {
            c.push(new);
        }
    }

    /// Applies an acknowledged write.
    pub fn write(&mut self, key: &[u8], new: Option<Vec<u8>>) {
        let old = self.data.get(key).cloned();
        let c = self
            .since_sync
            .entry(key.to_vec())
            .or_insert_with(|| vec![old]);
        if !c.contains(&new) {
            c.push(new.clone());
        }
        let order = WRITE_ORDER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.since_sync_order
            .push((order, key.to_vec(), new.clone()));
        self.uncertain.remove(key);
        self.writes += 1;
        match new {
            Some(v) => self.data.insert(key.to_vec(), v),
            None => self.data.remove(key),
        };
    }
}

pub fn parse(v: &[u8]) -> Option<Value> {
    serde_json::from_slice(v).ok()
}

/// A stored value as the harness compares records: its JSON, or for a value that is not
/// JSON (`{}` finds those too) a marker holding its bytes.
pub fn record_json(v: &[u8]) -> Value {
    parse(v).unwrap_or_else(|| json!({ "$not_json": String::from_utf8_lossy(v) }))
}

pub fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, n| v.as_object()?.get(n))
}

/// The scalar at `path`, if there is one.
pub fn scalar<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    lookup(doc, path).filter(|v| type_rank(v) <= 3)
}

fn holds(c: &Cond, s: &Value) -> bool {
    let eq = |a: &Value| type_rank(a) == type_rank(s) && cmp_json(a, s) == Ordering::Equal;
    match c {
        Cond::Eq(v) => eq(v),
        Cond::In(vs) => vs.iter().any(eq),
        Cond::Prefix(p) => s.as_str().is_some_and(|t| t.starts_with(p.as_str())),
        Cond::Range(lo, hi) => {
            let ok_lo = lo.as_ref().is_none_or(|(b, incl)| {
                type_rank(b) == type_rank(s) && {
                    let o = cmp_json(s, b);
                    o.is_gt() || (*incl && o.is_eq())
                }
            });
            let ok_hi = hi.as_ref().is_none_or(|(b, incl)| {
                type_rank(b) == type_rank(s) && {
                    let o = cmp_json(s, b);
                    o.is_lt() || (*incl && o.is_eq())
                }
            });
            ok_lo && ok_hi
        }
    }
}

/// Whether a stored value meets the filter, and its document if so: with no condition every
/// value does, JSON or not (one that is not JSON holds nothing: its document is `null`); else
/// each condition's attribute holds a scalar that meets it.
pub fn matches(f: &FilterSpec, value: &[u8]) -> Option<Value> {
    let Some(doc) = parse(value) else {
        return f.conds.is_empty().then_some(Value::Null);
    };
    let ok = f
        .conds
        .iter()
        .all(|(a, c)| scalar(&doc, ATTRS[*a as usize]).is_some_and(|s| holds(c, s)));
    ok.then_some(doc)
}

pub fn project(doc: &Value, attrs: &[u8]) -> Value {
    let mut m = serde_json::Map::new();
    for a in attrs {
        let p = ATTRS[*a as usize];
        if let Some(v) = lookup(doc, p) {
            m.insert(p.to_string(), v.clone());
        }
    }
    Value::Object(m)
}

/// Numbers in one form per value, recursively, as the engine prints a number it returns: an
/// integer where the value is one that fits `i64`/`u64` (`2.0` and `-0.0` too), else the
/// `f64`. Exact: integers past 2^53 keep every digit.
pub fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => {
            let f = n.as_f64().unwrap();
            let int = json_int(n).or_else(|| {
                (f.fract() == 0.0 && f.abs() < 18_446_744_073_709_551_616.0).then_some(f as i128)
            });
            int_json(int).unwrap_or_else(|| json!(f))
        }
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        other => other.clone(),
    }
}

/// Records of a find: (pk, value or projection) in pk order.
pub fn find(
    data: &BTreeMap<Vec<u8>, Vec<u8>>,
    f: &FilterSpec,
    projection: Option<&[u8]>,
) -> Vec<(Vec<u8>, Value)> {
    data.iter()
        .filter_map(|(k, v)| {
            let doc = matches(f, v)?;
            Some((
                k.clone(),
                match projection {
                    Some(p) => project(&doc, p),
                    None => record_json(v),
                },
            ))
        })
        .collect()
}

pub fn by_secondary(
    data: &BTreeMap<Vec<u8>, Vec<u8>>,
    attr: u8,
    value: &Value,
    limit: Option<usize>,
) -> Vec<Vec<u8>> {
    let f = FilterSpec {
        conds: vec![(attr, Cond::Eq(value.clone()))],
    };
    data.iter()
        .filter(|(_, v)| matches(&f, v).is_some())
        .map(|(k, _)| k.clone())
        .take(limit.unwrap_or(usize::MAX))
        .collect()
}

/// Top-k: (pk, rank key, projection), by key (desc reverses it) then pk ascending.
pub fn top(
    data: &BTreeMap<Vec<u8>, Vec<u8>>,
    f: &FilterSpec,
    by: u8,
    desc: bool,
    k: usize,
    projection: Option<&[u8]>,
) -> Vec<(Vec<u8>, Value, Option<Value>)> {
    let mut all: Vec<(Vec<u8>, Value, Option<Value>)> = data
        .iter()
        .filter_map(|(pk, v)| {
            let doc = matches(f, v)?;
            // The null rule: a null ranks nowhere, as a missing value.
            let key = scalar(&doc, ATTRS[by as usize])
                .filter(|k| !k.is_null())?
                .clone();
            Some((pk.clone(), key, projection.map(|p| project(&doc, p))))
        })
        .collect();
    all.sort_by(|a, b| {
        let o = cmp_json(&a.1, &b.1);
        let o = if desc { o.reverse() } else { o };
        o.then_with(|| a.0.cmp(&b.0))
    });
    all.truncate(k);
    all.into_iter()
        .map(|(pk, key, p)| (pk, norm(&key), p.map(|p| norm(&p))))
        .collect()
}

/// An aggregate as `docs/queries.md` says: an aggregate of an attribute skips the records
/// where it is missing or null (SQL's `COUNT(x)`, `MIN(x)`; MongoDB's `$min`); `min`/`max`
/// compare the other scalars in secondary-key order; `sum`/`avg` take numbers only.
pub fn aggregate(data: &BTreeMap<Vec<u8>, Vec<u8>>, f: &FilterSpec, func: &AggFn) -> Value {
    let docs: Vec<Value> = data.values().filter_map(|v| matches(f, v)).collect();
    let at = |a: &u8| -> Vec<Value> {
        docs.iter()
            .filter_map(|d| scalar(d, ATTRS[*a as usize]).cloned())
            .collect()
    };
    let numbers = |a: &u8| -> Vec<serde_json::Number> {
        at(a)
            .into_iter()
            .filter_map(|v| match v {
                Value::Number(n) => Some(n),
                _ => None,
            })
            .collect()
    };
    let v = match func {
        AggFn::Count => json!(docs.len() as f64),
        AggFn::CountOf(a) => json!(docs
            .iter()
            .filter(|d| lookup(d, ATTRS[*a as usize]).is_some_and(|v| !v.is_null()))
            .count() as f64),
        AggFn::Sum(a) => exact_sum(&numbers(a)).0,
        AggFn::Avg(a) => {
            let n = numbers(a);
            if n.is_empty() {
                Value::Null
            } else {
                json!(exact_sum(&n).1 / n.len() as f64)
            }
        }
        AggFn::Min(a) | AggFn::Max(a) => {
            let mut vals = at(a);
            vals.retain(|v| !v.is_null());
            let best = vals.into_iter().reduce(|b, s| {
                let o = cmp_json(&s, &b);
                let better = if matches!(func, AggFn::Min(_)) {
                    o.is_lt()
                } else {
                    o.is_gt()
                };
                if better {
                    s
                } else {
                    b
                }
            });
            best.unwrap_or(Value::Null)
        }
    };
    norm(&v)
}

/// An integer as JSON, if it fits `i64` or `u64`.
fn int_json(i: Option<i128>) -> Option<Value> {
    let i = i?;
    i64::try_from(i)
        .map(Value::from)
        .ok()
        .or_else(|| u64::try_from(i).ok().map(Value::from))
}

/// A sum as docs/queries.md says: the exact sum of the values, an integer where it is one
/// that fits `i64`/`u64`, else rounded once to `f64`; and that sum as the nearest `f64` (what
/// `avg` divides). Worked out in quarters: every decimal the generator makes is a multiple
/// of 1/4.
fn exact_sum(ns: &[serde_json::Number]) -> (Value, f64) {
    let mut quarters = 0i128;
    for n in ns {
        match json_int(n) {
            Some(i) => quarters += 4 * i,
            None => {
                let q = n.as_f64().unwrap() * 4.0;
                assert!(
                    q.fract() == 0.0 && q.abs() < 1e30,
                    "the model sums quarters: {n}"
                );
                quarters += q as i128;
            }
        }
    }
    // Quarters to f64 rounds once (to nearest, ties to even); the division is exact.
    let f = quarters as f64 / 4.0;
    let int = (quarters % 4 == 0)
        .then(|| int_json(Some(quarters / 4)))
        .flatten();
    (int.unwrap_or_else(|| json!(f)), f)
}
