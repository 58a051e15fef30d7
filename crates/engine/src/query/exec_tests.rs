//! Aggregates and top-K over records held in memory (a scan: no index).

use super::*;
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
