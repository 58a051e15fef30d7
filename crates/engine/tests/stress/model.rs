//! The expected state: a map per namespace and its index definitions, and the answers every
//! read and query must give, computed from the map alone (no engine code: the filter is
//! evaluated here on parsed JSON).

use super::ops::{cmp_json, type_rank, AggFn, Cond, FilterSpec, IdxKind, ATTRS};
use serde_json::{json, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

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
    /// Acknowledged writes so far (a paged find is complete only if none came between
    /// its pages).
    pub writes: u64,
    /// The capacity every accepted put keeps the records under (`None`: none, or a failed
    /// configure left it unknown); `may_refuse`: a capacity may be set.
    pub capacity: Option<u64>,
    pub may_refuse: bool,
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

/// Whether a stored value meets the filter: with no condition every JSON value does; else
/// each condition's attribute holds a scalar that meets it.
pub fn matches(f: &FilterSpec, value: &[u8]) -> Option<Value> {
    let doc = parse(value)?;
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

/// Numbers as f64, recursively: the engine prints integral f64 as integers.
pub fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
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
                    None => doc,
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
            let key = scalar(&doc, ATTRS[by as usize])?.clone();
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
    let numbers = |a: &u8| -> Vec<f64> { at(a).iter().filter_map(Value::as_f64).collect() };
    let v = match func {
        AggFn::Count => json!(docs.len() as f64),
        AggFn::CountOf(a) => json!(docs
            .iter()
            .filter(|d| lookup(d, ATTRS[*a as usize]).is_some_and(|v| !v.is_null()))
            .count() as f64),
        AggFn::Sum(a) => json!(numbers(a).iter().sum::<f64>()),
        AggFn::Avg(a) => {
            let n = numbers(a);
            if n.is_empty() {
                Value::Null
            } else {
                json!(n.iter().sum::<f64>() / n.len() as f64)
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
