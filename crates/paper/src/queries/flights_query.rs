//! The flights query set both sides of `--set flights` run, and what they share: the indexed
//! attributes, what a run returns and its answer, the write batches. Below the sides and the
//! run that compares them, so that neither imports the other.

use anyhow::Result;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha1::{Digest, Sha1};
/// The attributes indexed on both sides.
pub const ATTRS: [&str; 6] = ["carrier", "origin", "dest", "month", "dep_delay", "tailnum"];
/// Records per write batch (and per SQLite transaction) of a load or the mutations.
pub const BATCH: usize = 1_000;

/// What a query returns.
#[derive(Clone, Debug)]
pub enum Kind {
    /// The records meeting the filter: (key, value) or, `keys_only`, keys alone.
    Find { keys_only: bool },
    /// The `k` keys with the largest `by` (ties by key), with the value ranked by.
    Top { by: &'static str, k: usize },
    /// `count` (of `attr` if given) or `sum|avg|min|max` of `attr`.
    Agg {
        op: &'static str,
        attr: Option<&'static str>,
    },
}

#[derive(Clone, Debug)]
pub struct FlightQuery {
    pub name: String,
    pub filter: Value,
    pub kind: Kind,
}

/// The query set: each find whole and keys-only, top-K at each of `top_k`, every aggregate.
pub fn queries(top_k: &[usize]) -> Vec<FlightQuery> {
    let finds = [
        ("eq-large", json!({"carrier": "UA"})),
        ("eq-small", json!({"tailnum": "N725MQ"})),
        ("eq-number", json!({"month": 7})),
        ("range", json!({"dep_delay": {"$gte": 60, "$lt": 120}})),
        (
            "range-small",
            json!({"dep_delay": {"$gte": 300, "$lt": 400}}),
        ),
        ("prefix", json!({"tailnum": {"$prefix": "N5"}})),
        ("two-attrs", json!({"origin": "JFK", "dest": "LAX"})),
    ];
    let mut out = Vec::new();
    for (name, filter) in finds {
        for (suffix, keys_only) in [("", false), (" keys", true)] {
            out.push(FlightQuery {
                name: format!("{name}{suffix}"),
                filter: filter.clone(),
                kind: Kind::Find { keys_only },
            });
        }
    }
    let q = |name: &str, filter: Value, kind| FlightQuery {
        name: name.into(),
        filter,
        kind,
    };
    for &k in top_k {
        out.push(q(
            &format!("top{k} indexed"),
            json!({"origin": "LGA"}),
            Kind::Top { by: "dep_delay", k },
        ));
        out.push(q(
            &format!("top{k} other"),
            json!({"month": 12}),
            Kind::Top { by: "arr_delay", k },
        ));
    }
    let dl = json!({"carrier": "DL"});
    for (op, attr) in [
        ("count", None),
        ("count", Some("arr_delay")),
        ("sum", Some("arr_delay")),
        ("avg", Some("dep_delay")),
        ("min", Some("dep_delay")),
        ("max", Some("arr_delay")),
    ] {
        let name = match attr {
            None => op.to_string(),
            Some(a) => format!("{op}({a})"),
        };
        out.push(q(&name, dl.clone(), Kind::Agg { op, attr }));
    }
    out
}

/// What a run returned, taken apart for the answer off the clock.
#[derive(Clone)]
pub enum Out {
    /// (key, value) pairs of a find (values empty when keys only).
    Rows(Vec<(Bytes, Bytes)>),
    /// Top-K keys in rank order.
    Ranked(Vec<Bytes>),
    Value(Value),
}

/// A query's answer: how many results and a digest of them (sha1, 16 hex digits): of the
/// (key, value) pairs sorted by key, of the top-K keys in order, or of an aggregate's value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub count: u64,
    pub digest: String,
}

impl Out {
    /// The same with each value's document in one layout (keys sorted, no spaces), for a
    /// side that keeps documents parsed and gives back its own layout (PostgreSQL's jsonb).
    pub fn canonical(self) -> Result<Out> {
        Ok(match self {
            Out::Rows(rows) => Out::Rows(
                rows.into_iter()
                    .map(|(k, v)| match v.is_empty() {
                        true => Ok((k, v)),
                        false => {
                            let doc: Value = serde_json::from_slice(&v)?;
                            let mut text = String::new();
                            sorted_json(&doc, &mut text);
                            Ok((k, Bytes::from(text)))
                        }
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
            other => other,
        })
    }

    pub fn answer(self) -> Answer {
        let mut h = Sha1::new();
        let count = match self {
            Out::Rows(mut rows) => {
                rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                for (k, v) in &rows {
                    h.update(k);
                    h.update([0]);
                    h.update(v);
                    h.update([b'\n']);
                }
                rows.len()
            }
            Out::Ranked(keys) => {
                for k in &keys {
                    h.update(k);
                    h.update([b'\n']);
                }
                keys.len()
            }
            Out::Value(v) => {
                h.update(canonical(&v).as_bytes());
                1
            }
        };
        let digest = h.finalize();
        Answer {
            count: count as u64,
            digest: digest[..8].iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

/// An aggregate's value as text both sides agree on: integral numbers as integers (a sum is
/// an integer in SQLite, maybe a float here), others to 10 significant digits (a mean's last
/// bits depend on the order of the additions).
fn canonical(v: &Value) -> String {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => format!("{}", f as i64),
            Some(f) => format!("{f:.9e}"),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// `v` as JSON text with every object's keys sorted.
fn sorted_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                sorted_json(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                sorted_json(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A put (`Some` value) or a delete (`None`) of a key.
pub type WriteOp<'a> = (&'a Vec<u8>, Option<&'a Vec<u8>>);

/// Hands `ops` to `write` in chunks of [`BATCH`], in order.
pub fn in_batches<'a>(
    ops: impl Iterator<Item = WriteOp<'a>>,
    mut write: impl FnMut(&[WriteOp<'a>]) -> Result<()>,
) -> Result<()> {
    let mut chunk = Vec::with_capacity(BATCH);
    for op in ops {
        chunk.push(op);
        if chunk.len() == BATCH {
            write(&chunk)?;
            chunk.clear();
        }
    }
    match chunk.is_empty() {
        true => Ok(()),
        false => write(&chunk),
    }
}
