//! Filters, written as MongoDB-style filter documents: `{"attr": value}` (equality),
//! `{"attr": {"$gt": a, "$lte": b}}` (ranges: `$gt`, `$gte`, `$lt`, `$lte`, `$eq`),
//! `{"attr": {"$in": [v, ...]}}`, `{"attr": {"$prefix": "text"}}` (strings starting with it),
//! and `{"$and": [filter, ...]}`. Conditions side by side in one document are and-ed too;
//! `{}` matches every record.
//!
//! Comparisons stay within a JSON type, as MongoDB's do: `{"elev": {"$gt": 100}}` matches
//! numbers above 100 and never a string. Only scalars (null, booleans, numbers, strings) are
//! compared; a record whose attribute is missing, an array or an object matches no condition
//! on it.

use crate::index::{prefix_successor, string_prefix, type_range, AttrPath, Scalar};
use serde_json::Value;
use std::ops::Bound;

/// One condition on one attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// Equal to this scalar (`{"attr": v}`, `$eq`).
    Eq(Scalar),
    /// Within bounds, both of the same type when both given.
    Range {
        /// From `$gt` (excluded) or `$gte` (included).
        lower: Bound<Scalar>,
        /// From `$lt` (excluded) or `$lte` (included).
        upper: Bound<Scalar>,
    },
    /// Equal to one of these (`$in`), kept sorted so a match is a binary search.
    In(Vec<Scalar>),
    /// Strings starting with this.
    Prefix(String),
}

/// A parsed filter: every condition must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Each condition with the attribute it is on, in the order written.
    pub conditions: Vec<(AttrPath, Condition)>,
}

/// A range of encoded secondary keys, `[start, end)` (`end` `None`: to the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    /// First encoded key in the range (included).
    pub start: Vec<u8>,
    /// First encoded key past the range; `None`: to the end of the key space.
    pub end: Option<Vec<u8>>,
}

impl Filter {
    /// Parses a filter document.
    pub fn parse(doc: &Value) -> Result<Filter, String> {
        let mut f = Filter::default();
        f.add_document(doc)?;
        Ok(f)
    }

    /// Parses a filter given as JSON text.
    pub fn parse_str(text: &str) -> Result<Filter, String> {
        let doc: Value =
            serde_json::from_str(text).map_err(|e| format!("filter is not JSON: {e}"))?;
        Filter::parse(&doc)
    }

    fn add_document(&mut self, doc: &Value) -> Result<(), String> {
        let obj = doc
            .as_object()
            .ok_or_else(|| format!("a filter is a JSON object, not {}", kind(doc)))?;
        for (name, v) in obj {
            if name == "$and" {
                let parts = v
                    .as_array()
                    .ok_or_else(|| "$and takes an array of filters".to_string())?;
                for p in parts {
                    self.add_document(p)?;
                }
                continue;
            }
            if name.starts_with('$') {
                return Err(format!(
                    "unknown top-level operator {name} (supported: $and)"
                ));
            }
            let path = AttrPath::parse(name)?;
            self.add_attribute(path, v)?;
        }
        Ok(())
    }

    fn add_attribute(&mut self, path: AttrPath, v: &Value) -> Result<(), String> {
        let ops = match v.as_object() {
            Some(o) if o.keys().any(|k| k.starts_with('$')) => o,
            Some(_) | None => {
                let s = operand(&path, "equality", v)?;
                self.conditions.push((path, Condition::Eq(s)));
                return Ok(());
            }
        };
        let (mut lower, mut upper) = (Bound::Unbounded, Bound::Unbounded);
        for (op, arg) in ops {
            match op.as_str() {
                "$eq" => {
                    let s = operand(&path, op, arg)?;
                    self.conditions.push((path.clone(), Condition::Eq(s)));
                }
                "$gt" | "$gte" => {
                    let s = operand(&path, op, arg)?;
                    let b = if op == "$gt" {
                        Bound::Excluded(s)
                    } else {
                        Bound::Included(s)
                    };
                    lower = tighter(lower, b, true);
                }
                "$lt" | "$lte" => {
                    let s = operand(&path, op, arg)?;
                    let b = if op == "$lt" {
                        Bound::Excluded(s)
                    } else {
                        Bound::Included(s)
                    };
                    upper = tighter(upper, b, false);
                }
                "$in" => {
                    let items = arg
                        .as_array()
                        .ok_or_else(|| format!("{path}: $in takes an array"))?;
                    let mut set = items
                        .iter()
                        .map(|i| operand(&path, op, i))
                        .collect::<Result<Vec<_>, _>>()?;
                    set.sort();
                    set.dedup();
                    self.conditions.push((path.clone(), Condition::In(set)));
                }
                "$prefix" => {
                    let p = arg
                        .as_str()
                        .ok_or_else(|| format!("{path}: $prefix takes a string"))?;
                    self.conditions
                        .push((path.clone(), Condition::Prefix(p.to_string())));
                }
                other => {
                    return Err(format!(
                        "{path}: unknown operator {other} (supported: $eq, $gt, $gte, $lt, $lte, $in, $prefix)"
                    ))
                }
            }
        }
        if !matches!((&lower, &upper), (Bound::Unbounded, Bound::Unbounded)) {
            if let (Some(a), Some(b)) = (bound_value(&lower), bound_value(&upper)) {
                if a.scalar_type() != b.scalar_type() {
                    return Err(format!(
                        "{path}: a range's bounds must be of one type ({a:?} and {b:?})"
                    ));
                }
            }
            self.conditions
                .push((path, Condition::Range { lower, upper }));
        }
        Ok(())
    }

    /// Whether `doc` meets every condition.
    pub fn matches(&self, doc: &Value) -> bool {
        self.conditions
            .iter()
            .all(|(path, c)| path.scalar(doc).is_some_and(|s| c.holds(&s)))
    }

    /// The conditions on `path`.
    pub fn on<'a>(&'a self, path: &'a AttrPath) -> impl Iterator<Item = &'a Condition> + 'a {
        self.conditions
            .iter()
            .filter(move |(p, _)| p == path)
            .map(|(_, c)| c)
    }
}

impl Condition {
    /// `s` meets this condition (a range never holds across types).
    pub(crate) fn holds(&self, s: &Scalar) -> bool {
        match self {
            Condition::Eq(v) => s == v,
            Condition::In(set) => set.binary_search(s).is_ok(),
            Condition::Prefix(p) => matches!(s, Scalar::String(t) if t.starts_with(p.as_str())),
            Condition::Range { lower, upper } => {
                let t = bound_value(lower).or(bound_value(upper));
                if t.is_some_and(|t| t.scalar_type() != s.scalar_type()) {
                    return false;
                }
                let above = match lower {
                    Bound::Included(l) => s >= l,
                    Bound::Excluded(l) => s > l,
                    Bound::Unbounded => true,
                };
                let below = match upper {
                    Bound::Included(u) => s <= u,
                    Bound::Excluded(u) => s < u,
                    Bound::Unbounded => true,
                };
                above && below
            }
        }
    }

    /// The ranges of encoded secondary keys (index keys are `encoded sk ++ pk`) that hold
    /// every record meeting this condition, in key order and disjoint.
    pub(crate) fn key_ranges(&self) -> Vec<KeyRange> {
        match self {
            Condition::Eq(v) => vec![exact(v)],
            Condition::In(set) => set.iter().map(exact).collect(),
            Condition::Prefix(p) => {
                let start = string_prefix(p);
                let end = prefix_successor(&start);
                vec![KeyRange { start, end }]
            }
            Condition::Range { lower, upper } => {
                // No bound: every scalar holds, so every key.
                let Some(t) = bound_value(lower).or(bound_value(upper)) else {
                    return vec![KeyRange {
                        start: Vec::new(),
                        end: None,
                    }];
                };
                let (type_start, type_end) = type_range(t.scalar_type());
                let start = match lower {
                    Bound::Included(l) => l.encoded(),
                    Bound::Excluded(l) => past(l),
                    Bound::Unbounded => type_start,
                };
                let end = match upper {
                    Bound::Included(u) => past(u),
                    Bound::Excluded(u) => u.encoded(),
                    Bound::Unbounded => type_end,
                };
                if start >= end {
                    return Vec::new();
                }
                vec![KeyRange {
                    start,
                    end: Some(end),
                }]
            }
        }
    }
}

/// The keys of one secondary key value.
fn exact(v: &Scalar) -> KeyRange {
    let start = v.encoded();
    KeyRange {
        end: Some(past(v)),
        start,
    }
}

/// The first encoded key past every index key of `v`.
fn past(v: &Scalar) -> Vec<u8> {
    // Encodings are prefix-free and never all 0xFF (the tag is below it).
    prefix_successor(&v.encoded()).unwrap_or_default()
}

fn bound_value(b: &Bound<Scalar>) -> Option<&Scalar> {
    match b {
        Bound::Included(s) | Bound::Excluded(s) => Some(s),
        Bound::Unbounded => None,
    }
}

/// Of two bounds on the same side, the one that admits less.
fn tighter(old: Bound<Scalar>, new: Bound<Scalar>, lower: bool) -> Bound<Scalar> {
    let (Some(a), Some(b)) = (bound_value(&old), bound_value(&new)) else {
        return if matches!(old, Bound::Unbounded) {
            new
        } else {
            old
        };
    };
    match a.cmp(b) {
        std::cmp::Ordering::Equal => {
            if matches!(old, Bound::Excluded(_)) {
                old
            } else {
                new
            }
        }
        std::cmp::Ordering::Less => {
            if lower {
                new
            } else {
                old
            }
        }
        std::cmp::Ordering::Greater => {
            if lower {
                old
            } else {
                new
            }
        }
    }
}

fn operand(path: &AttrPath, op: &str, v: &Value) -> Result<Scalar, String> {
    Scalar::from_json(v).ok_or_else(|| {
        format!(
            "{path}: {op} compares with a scalar (null, boolean, number or string), not {}",
            kind(v)
        )
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Number;
    use proptest::prelude::*;
    use serde_json::json;

    /// Issue 60: integers past 2^53 are told apart by filters and by the key ranges an index
    /// reads, and compare with decimals by value.
    #[test]
    fn integers_past_2_53_compare_exactly() {
        let in_range = |c: &Condition, v: Value| {
            let k = [Scalar::from_json(&v).unwrap().encoded(), b"pk".to_vec()].concat();
            c.key_ranges()
                .iter()
                .any(|r| k >= r.start && r.end.as_ref().is_none_or(|e| k < *e))
        };
        let eq = f(json!({"id": 9007199254740993u64}));
        assert!(eq.matches(&json!({"id": 9007199254740993u64})));
        assert!(!eq.matches(&json!({"id": 9007199254740992u64})));
        assert!(!in_range(&eq.conditions[0].1, json!(9007199254740992u64)));
        assert!(in_range(&eq.conditions[0].1, json!(9007199254740993u64)));
        let gt = f(json!({"id": {"$gt": 1234567890123456788i64}}));
        assert!(gt.matches(&json!({"id": 1234567890123456789i64})));
        assert!(!gt.matches(&json!({"id": 1234567890123456788i64})));
        assert!(in_range(&gt.conditions[0].1, json!(1234567890123456789i64)));
        assert!(!in_range(
            &gt.conditions[0].1,
            json!(1234567890123456788i64)
        ));
        // Decimals and integers by value; -0 is 0; the ends of u64 and i64.
        assert!(f(json!({"a": 2})).matches(&json!({"a": 2.0})));
        assert!(f(json!({"a": 0})).matches(&json!({"a": -0.0})));
        let above = f(json!({"a": {"$gt": 9007199254740992.0}}));
        assert!(above.matches(&json!({"a": 9007199254740993u64})));
        assert!(!above.matches(&json!({"a": 9007199254740992u64})));
        assert!(f(json!({"a": {"$gt": 18446744073709551614u64}})).matches(&json!({"a": u64::MAX})));
        assert!(f(json!({"a": {"$lt": -9223372036854775807i64}})).matches(&json!({"a": i64::MIN})));
        let within = f(json!({"a": {"$in": [9007199254740993u64, 2.5]}}));
        assert!(!within.matches(&json!({"a": 9007199254740992u64})));
        assert!(within.matches(&json!({"a": 9007199254740993u64})));
    }

    fn f(v: Value) -> Filter {
        Filter::parse(&v).unwrap()
    }

    #[test]
    fn documents_parse_into_conditions() {
        let docs = [
            json!({"political_unit": "AUST", "elev": {"$gte": 100, "$lt": 3000}}),
            json!({"$and": [{"a": {"$in": [3, 1, 1]}}, {"name": {"$prefix": "Fr"}}]}),
            json!({"user.id": {"$eq": 2517}}),
        ];
        let pu = json!({"political_unit": "AUST", "elev": 100});
        assert!(f(docs[0].clone()).matches(&pu));
        assert!(!f(docs[0].clone()).matches(&json!({"political_unit": "AUST", "elev": 3000})));
        assert!(!f(docs[0].clone()).matches(&json!({"political_unit": "AUST", "elev": "150"})));
        assert!(!f(docs[0].clone()).matches(&json!({"elev": 150})));
        let and = f(docs[1].clone());
        assert_eq!(and.conditions.len(), 2);
        assert!(and.matches(&json!({"a": 3, "name": "Franz"})));
        assert!(!and.matches(&json!({"a": 2, "name": "Franz"})));
        assert!(!and.matches(&json!({"a": 3, "name": "franz"})));
        assert!(f(docs[2].clone()).matches(&json!({"user": {"id": 2517.0}})));
        assert!(f(json!({})).matches(&json!({"x": 1})));
        // An object without operators is an equality on a non-scalar: refused.
        assert!(Filter::parse(&json!({"a": {"b": 1}})).is_err());
    }

    #[test]
    fn malformed_filters_say_what_is_wrong() {
        for (doc, says) in [
            (json!([1]), "JSON object"),
            (json!({"$or": []}), "$or"),
            (json!({"a": {"$regex": "x"}}), "$regex"),
            (json!({"a": {"$in": 3}}), "$in takes an array"),
            (json!({"a": {"$gt": [1]}}), "scalar"),
            (json!({"a": {"$prefix": 1}}), "$prefix takes a string"),
            (json!({"a": {"$gt": 1, "$lt": "z"}}), "one type"),
            (json!({"": 1}), "empty"),
            (json!({"$and": {}}), "array"),
        ] {
            let e = Filter::parse(&doc).unwrap_err();
            assert!(e.contains(says), "{doc}: {e}");
        }
        assert!(Filter::parse_str("{").unwrap_err().contains("not JSON"));
    }

    fn scalar() -> impl Strategy<Value = Scalar> {
        prop_oneof![
            Just(Scalar::Null),
            any::<bool>().prop_map(Scalar::Bool),
            (-20i32..20).prop_map(|x| Scalar::Number(Number::Float(f64::from(x) / 2.0))),
            (-3i64..3).prop_map(|d| Scalar::Number(Number::Int((1 << 53) + d))),
            (-2i64..2).prop_map(|d| Scalar::Number(Number::Float(((1i64 << 53) + 2 * d) as f64))),
            (0u64..3).prop_map(|d| Scalar::Number(Number::UInt(u64::MAX - d))),
            "[ab]{0,3}".prop_map(Scalar::String),
        ]
    }

    fn condition() -> impl Strategy<Value = Condition> {
        let bound = || {
            prop_oneof![
                Just(Bound::Unbounded),
                scalar().prop_map(Bound::Included),
                scalar().prop_map(Bound::Excluded),
            ]
        };
        prop_oneof![
            scalar().prop_map(Condition::Eq),
            proptest::collection::vec(scalar(), 0..4).prop_map(|mut v| {
                v.sort();
                v.dedup();
                Condition::In(v)
            }),
            "[ab]{0,2}".prop_map(Condition::Prefix),
            (bound(), bound())
                .prop_filter("one type", |(l, u)| {
                    match (bound_value(l), bound_value(u)) {
                        (Some(a), Some(b)) => a.scalar_type() == b.scalar_type(),
                        _ => true,
                    }
                })
                .prop_map(|(lower, upper)| Condition::Range { lower, upper }),
        ]
    }

    proptest! {
        /// An index scan over the condition's key ranges finds exactly the values it holds for.
        #[test]
        fn key_ranges_hold_exactly_the_matches(c in condition(), s in scalar(),
                                               pk in proptest::collection::vec(any::<u8>(), 0..3)) {
            let key = [s.encoded(), pk].concat();
            let ranges = c.key_ranges();
            let inside = ranges.iter().any(|r| {
                key >= r.start && r.end.as_ref().is_none_or(|e| key < *e)
            });
            prop_assert_eq!(inside, c.holds(&s), "{:?} {:?}", c, ranges);
            for w in ranges.windows(2) {
                prop_assert!(w[0].end.as_ref().is_some_and(|e| *e <= w[1].start));
            }
        }
    }
}
