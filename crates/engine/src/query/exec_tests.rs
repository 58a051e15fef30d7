//! Aggregates and top-K over records held in memory (a scan: no index).

use super::*;
use crate::key::{SeqNo, ValueAddr};
use crate::query::{aggregate, top_k, Aggregate, KeyRange, Ranked, TopSpec};
use serde_json::Value;

/// Records in pk order, read by scans only.
struct Mem(Vec<(Bytes, Bytes)>);

impl Mem {
    fn of(docs: &[&str]) -> Mem {
        Mem(docs
            .iter()
            .enumerate()
            .map(|(i, d)| (Bytes::from(format!("k{i:04}")), Bytes::from(d.to_string())))
            .collect())
    }
}

impl Records for Mem {
    fn index_entries(
        &mut self,
        _: crate::key::Nsid,
        _: &KeyRange,
        _: Option<&[u8]>,
        _: usize,
        out: &mut EntryBatch,
        _: &mut QueryStats,
    ) -> Result<()> {
        out.clear();
        Ok(())
    }

    fn superseded(&mut self, _: &[u8], _: SeqNo, _: &mut QueryStats) -> Result<bool> {
        Ok(false)
    }

    fn get(&mut self, pk: &[u8], _: &mut QueryStats) -> Result<Option<Bytes>> {
        Ok(self.0.iter().find(|(k, _)| k == pk).map(|(_, v)| v.clone()))
    }

    fn read_at(&mut self, pk: &[u8], _: ValueAddr, s: &mut QueryStats) -> Result<Bytes> {
        self.get(pk, s)?
            .ok_or_else(|| Error::InvalidQuery("no such record".into()))
    }

    fn scan(
        &mut self,
        after: Option<&[u8]>,
        max: usize,
        _: &mut QueryStats,
    ) -> Result<Vec<(Bytes, Bytes)>> {
        Ok(self
            .0
            .iter()
            .filter(|(k, _)| after.is_none_or(|a| k.as_ref() > a))
            .take(max)
            .cloned()
            .collect())
    }
}

fn scan() -> Plan {
    Plan {
        access: Access::Scan,
        estimate: None,
    }
}

fn agg(docs: &[&str], op: &str, attr: Option<&str>) -> Value {
    let op = Aggregate::parse(op, attr).unwrap();
    let mut stats = QueryStats::default();
    aggregate(
        &mut Mem::of(docs),
        &Filter::default(),
        &scan(),
        &op,
        &mut stats,
    )
    .unwrap()
}

/// Flight-like records: some with no `air_time`, some with `null` there.
const FLIGHTS: &[&str] = &[
    r#"{"air_time": 40}"#,
    r#"{"air_time": null}"#,
    r#"{"air_time": 26}"#,
    r#"{"dest": "SEA"}"#,
    r#"{"air_time": 31.5}"#,
    r#"{"air_time": "n/a"}"#,
    r#"{"air_time": [1, 2]}"#,
];

#[test]
fn count_of_an_attribute_skips_missing_and_null_as_sql_count_does() {
    assert_eq!(agg(FLIGHTS, "count", None), Value::from(7));
    // COUNT(air_time): present and not null (the string and the array count, as in SQL
    // a non-null value of any type does).
    assert_eq!(agg(FLIGHTS, "count", Some("air_time")), Value::from(5));
    assert_eq!(agg(FLIGHTS, "count", Some("nowhere")), Value::from(0));
}

#[test]
fn min_and_max_skip_null_and_missing() {
    let numbers: Vec<&str> = FLIGHTS
        .iter()
        .copied()
        .filter(|d| !d.contains("n/a"))
        .collect();
    assert_eq!(agg(&numbers, "min", Some("air_time")), Value::from(26));
    assert_eq!(agg(&numbers, "max", Some("air_time")), Value::from(40));
    // Only nulls and missing: no value.
    let none = [r#"{"a": null}"#, r#"{"b": 1}"#];
    assert_eq!(agg(&none, "min", Some("a")), Value::Null);
    assert_eq!(agg(&none, "max", Some("a")), Value::Null);
    // Across types, the order of secondary keys: numbers before strings.
    assert_eq!(agg(FLIGHTS, "min", Some("air_time")), Value::from(26));
    assert_eq!(agg(FLIGHTS, "max", Some("air_time")), Value::from("n/a"));
}

#[test]
fn sum_and_avg_take_numbers_only() {
    assert_eq!(agg(FLIGHTS, "sum", Some("air_time")), Value::from(97.5));
    assert_eq!(agg(FLIGHTS, "avg", Some("air_time")), Value::from(32.5));
    assert_eq!(agg(&[r#"{"a": null}"#], "avg", Some("a")), Value::Null);
}

fn top(docs: &[&str], k: usize) -> Vec<Ranked> {
    let spec = TopSpec {
        by: AttrPath::parse("n").unwrap(),
        desc: true,
        k,
        projection: None,
    };
    let mut stats = QueryStats::default();
    top_k(
        &mut Mem::of(docs),
        &Filter::default(),
        &scan(),
        &spec,
        &mut stats,
    )
    .unwrap()
}

#[test]
fn top_with_a_huge_k_allocates_by_what_matches() {
    let docs = [r#"{"n": 1}"#, r#"{"n": 3}"#, r#"{"n": 2}"#, r#"{"m": 9}"#];
    // Sized from k, these would abort the process (or overflow `k + 1`).
    for k in [1_000_000_000_000_000, usize::MAX] {
        let got = top(&docs, k);
        let keys: Vec<Value> = got.iter().map(|r| r.key.clone()).collect();
        assert_eq!(keys, vec![Value::from(3), Value::from(2), Value::from(1)]);
    }
    assert!(top(&docs, 0).is_empty());
    assert_eq!(top(&docs, 1).len(), 1);
}

mod lazy_equals_serde {
    //! Filters, aggregates and top-K read attributes off the bytes in one pass; the same
    //! queries answered from documents `serde_json` builds must agree on random records.
    use super::*;
    use crate::index::{AttrValue, PathSet, Scalar};
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5i32..5).prop_map(Value::from),
            (-50i32..50).prop_map(|x| Value::from(f64::from(x) / 4.0)),
            "[ab]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::btree_map("[ab]", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A record: a random document, sometimes one `serde_json` skips but will not build
    /// (a number out of range), or no JSON at all.
    fn record() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => json_value().prop_map(|v| v.to_string()),
            1 => json_value().prop_map(|v| format!("{{\"a\": {v}, \"x\": 1e400}}")),
            1 => Just("not json".to_string()),
        ]
    }

    fn path() -> impl Strategy<Value = AttrPath> {
        prop_oneof![Just("a"), Just("b"), Just("a.b"), Just("b.a")]
            .prop_map(|p| AttrPath::parse(p).unwrap())
    }

    fn filter() -> impl Strategy<Value = Filter> {
        let condition = prop_oneof![
            Just(r#"null"#),
            Just(r#"1"#),
            Just(r#""a""#),
            Just(r#"{"$gte": 0}"#),
            Just(r#"{"$lt": "b"}"#),
            Just(r#"{"$in": [true, 0.5, "ab"]}"#),
            Just(r#"{"$prefix": "a"}"#),
        ];
        proptest::collection::vec((path(), condition), 0..3).prop_map(|cs| {
            let parts: Vec<String> = cs
                .iter()
                .map(|(p, c)| format!("{{\"{p}\": {c}}}"))
                .collect();
            Filter::parse_str(&format!("{{\"$and\": [{}]}}", parts.join(","))).unwrap()
        })
    }

    /// The records `filter` takes, as documents (`None`: taken, but no document).
    fn reference(docs: &[String], filter: &Filter) -> Vec<(Bytes, Option<Value>)> {
        let mem = Mem::of(&docs.iter().map(String::as_str).collect::<Vec<_>>());
        mem.0
            .into_iter()
            .filter_map(|(pk, v)| {
                let doc = serde_json::from_slice::<Value>(&v).ok();
                let taken = match &doc {
                    // `{}` takes every record, JSON or not.
                    _ if filter.conditions.is_empty() => true,
                    Some(d) => filter.matches(d),
                    None => false,
                };
                taken.then_some((pk, doc))
            })
            .collect()
    }

    fn number(x: f64) -> Value {
        Scalar::Number(crate::index::Number::Float(x)).to_json()
    }

    /// An aggregate as the documents say.
    fn reference_aggregate(found: &[(Bytes, Option<Value>)], op: &Aggregate) -> Value {
        let at = |p: &AttrPath| -> Vec<Scalar> {
            found
                .iter()
                .filter_map(|(_, d)| p.scalar(d.as_ref()?))
                .collect()
        };
        let numbers = |p| -> Vec<f64> {
            at(p)
                .into_iter()
                .filter_map(|s| match s {
                    Scalar::Number(n) => Some(n.as_f64()),
                    _ => None,
                })
                .collect()
        };
        let not_null = |p| at(p).into_iter().filter(|s| *s != Scalar::Null);
        match op {
            Aggregate::Count => Value::from(found.len()),
            Aggregate::CountOf(p) => Value::from(
                found
                    .iter()
                    .filter(|(_, d)| {
                        d.as_ref()
                            .and_then(|d| p.lookup(d))
                            .is_some_and(|v| !v.is_null())
                    })
                    .count(),
            ),
            Aggregate::Min(p) => not_null(p).min().map_or(Value::Null, |s| s.to_json()),
            Aggregate::Max(p) => not_null(p).max().map_or(Value::Null, |s| s.to_json()),
            Aggregate::Sum(p) => number(numbers(p).iter().sum()),
            Aggregate::Avg(p) => {
                let n = numbers(p);
                match n.len() {
                    0 => Value::Null,
                    len => number(n.iter().sum::<f64>() / len as f64),
                }
            }
        }
    }

    proptest! {
        #[test]
        fn filters_aggregates_and_top_agree_with_parsed_documents(
            docs in proptest::collection::vec(record(), 0..12),
            filter in filter(),
            p in path(),
        ) {
            let found = reference(&docs, &filter);
            let strs: Vec<&str> = docs.iter().map(String::as_str).collect();
            // The records taken, with what they hold at `p`.
            let wanted = [&p];
            let mut got = Vec::new();
            let mut stats = QueryStats::default();
            let wants = Wants { record: false, attrs: &wanted };
            for_each_match(&mut Mem::of(&strs), &filter, &scan(), None, None, wants,
                           &mut stats, &mut |m| {
                got.push((Bytes::copy_from_slice(m.pk), m.attrs.to_vec()));
                Ok(true)
            })?;
            let set = PathSet::new(&wanted);
            let want: Vec<(Bytes, Vec<Option<AttrValue>>)> = found
                .iter()
                .map(|(pk, d)| {
                    let attrs = match d {
                        Some(d) => set.attrs_of(d),
                        None => vec![None],
                    };
                    (pk.clone(), attrs)
                })
                .collect();
            prop_assert_eq!(&got, &want);
            for op in ["count", "min", "max", "sum", "avg"] {
                for attr in [None, Some(p.as_str())] {
                    let Ok(op) = Aggregate::parse(op, attr) else { continue };
                    let mut stats = QueryStats::default();
                    let v = aggregate(&mut Mem::of(&strs), &filter, &scan(), &op, &mut stats)?;
                    prop_assert_eq!(v, reference_aggregate(&found, &op), "{:?}", op);
                }
            }
            let spec = TopSpec { by: p.clone(), desc: true, k: 3, projection: None };
            let mut stats = QueryStats::default();
            let top = top_k(&mut Mem::of(&strs), &filter, &scan(), &spec, &mut stats)?;
            let mut ranked: Vec<(Scalar, Bytes)> = found
                .iter()
                .filter_map(|(pk, d)| Some((p.scalar(d.as_ref()?)?, pk.clone())))
                .filter(|(s, _)| *s != Scalar::Null)
                .collect();
            ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let want: Vec<(Bytes, Value)> =
                ranked.into_iter().take(3).map(|(s, pk)| (pk, s.to_json())).collect();
            let got: Vec<(Bytes, Value)> = top.into_iter().map(|r| (r.pk, r.key)).collect();
            prop_assert_eq!(got, want);
        }
    }
}
