//! Issue 60, defects 3 and 4: integers past 2^53 are told apart (find, count, aggregates,
//! top-K, with and without an index, in the memtable and in tables); `{}` matches every
//! record, JSON or not; `null` and a missing attribute are no value to every aggregate and to
//! top-K alike (docs/queries.md, Numbers and nulls).

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{
    Aggregate, Db, Filter, FindOptions, IndexKind, Namespace, Readable, TopOptions,
};
use serde_json::{json, Value};
use std::sync::Arc;

fn open() -> Db {
    let storage: StorageRef = Arc::new(MemStorage::new());
    Db::builder(common::small_options())
        .open_storage(storage)
        .unwrap()
}

fn pks(ns: &Namespace, filter: Value) -> Vec<String> {
    let f = Filter::parse(&filter).unwrap();
    let res = ns.find(&f, &FindOptions::default()).unwrap();
    res.value
        .iter()
        .map(|r| String::from_utf8_lossy(&r.pk).into_owned())
        .collect()
}

fn agg(ns: &Namespace, filter: Value, op: &str, attr: Option<&str>) -> Value {
    let f = Filter::parse(&filter).unwrap();
    let op = Aggregate::parse(op, attr).unwrap();
    ns.aggregate(&f, &op).unwrap().value
}

fn top(ns: &Namespace, filter: Value, by: &str, desc: bool, k: usize) -> Vec<(String, Value)> {
    let f = Filter::parse(&filter).unwrap();
    let opts = TopOptions {
        by: by.into(),
        desc,
        k,
        projection: None,
    };
    ns.top(&f, &opts)
        .unwrap()
        .value
        .into_iter()
        .map(|r| (String::from_utf8_lossy(&r.pk).into_owned(), r.key))
        .collect()
}

/// Each case three ways: no index, a classic one, a VAS one; before and after a flush.
fn each_setup(records: &[(&str, &[u8])], attr: &str, check: impl Fn(&Namespace, &str)) {
    for kind in [None, Some(IndexKind::Classic), Some(IndexKind::Vas)] {
        let db = open();
        let ns = db.create_namespace("n").unwrap();
        if let Some(k) = kind {
            ns.create_index(attr, k).unwrap();
        }
        for (pk, v) in records {
            ns.put(pk.as_bytes(), v).unwrap();
        }
        check(&ns, &format!("{kind:?} in the memtable"));
        db.flush().unwrap();
        check(&ns, &format!("{kind:?} in tables"));
    }
}

#[test]
fn integers_past_2_53_are_told_apart() {
    let records: [(&str, &[u8]); 6] = [
        ("a", br#"{"id": 9007199254740992}"#),
        ("b", br#"{"id": 9007199254740993}"#),
        ("c", br#"{"id": 1234567890123456789}"#),
        ("d", br#"{"id": 18446744073709551615}"#),
        ("e", br#"{"id": -9223372036854775808}"#),
        ("f", br#"{"id": 9007199254740992.0}"#),
    ];
    each_setup(&records, "id", |ns, how| {
        assert_eq!(pks(ns, json!({"id": 9007199254740993u64})), ["b"], "{how}");
        assert_eq!(
            agg(ns, json!({"id": 9007199254740993u64}), "count", None),
            json!(1),
            "{how}"
        );
        // 2^53 written as an integer and as a decimal are one value.
        assert_eq!(
            pks(ns, json!({"id": 9007199254740992u64})),
            ["a", "f"],
            "{how}"
        );
        let gt = json!({"id": {"$gt": 1234567890123456788i64}});
        assert_eq!(pks(ns, gt.clone()), ["c", "d"], "{how}");
        assert_eq!(agg(ns, gt, "count", None), json!(2), "{how}");
        let above = json!({"id": {"$gt": 9007199254740992.0}});
        assert_eq!(pks(ns, above), ["b", "c", "d"], "{how}");
        assert_eq!(
            agg(ns, json!({}), "max", Some("id")),
            json!(u64::MAX),
            "{how}"
        );
        assert_eq!(
            agg(ns, json!({}), "min", Some("id")),
            json!(i64::MIN),
            "{how}"
        );
        // Integers only: an exact sum (as f64s: 1243575089378197760).
        let ints = json!({"id": {"$gt": 9007199254740992u64, "$lte": 1234567890123456789u64}});
        assert_eq!(
            agg(ns, ints, "sum", Some("id")),
            json!(1243575089378197782u64),
            "{how}"
        );
        // With a decimal (f, 2^53 written 9007199254740992.0) the sum is as exact: the
        // value, not its form, counts (an index gives it back as an integer).
        let big = json!({"id": {"$gte": 9007199254740992u64, "$lt": 9007199254740994u64}});
        assert_eq!(
            agg(ns, big, "sum", Some("id")),
            json!(27021597764222977u64),
            "{how}"
        );
        let ranked = top(ns, json!({}), "id", true, 3);
        let want = [
            ("d", json!(u64::MAX)),
            ("c", json!(1234567890123456789u64)),
            ("b", json!(9007199254740993u64)),
        ];
        let want: Vec<(String, Value)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        assert_eq!(ranked, want, "{how}");
        let low = top(ns, json!({}), "id", false, 2);
        assert_eq!(low[0], ("e".to_string(), json!(i64::MIN)), "{how}");
        // Equal keys rank by pk.
        assert_eq!(low[1].0, "a", "{how}");
    });
}

#[test]
fn negative_zero_is_zero() {
    let records: [(&str, &[u8]); 3] = [
        ("a", br#"{"x": -0.0}"#),
        ("b", br#"{"x": 0}"#),
        ("c", br#"{"x": -0}"#),
    ];
    each_setup(&records, "x", |ns, how| {
        assert_eq!(pks(ns, json!({"x": 0})), ["a", "b", "c"], "{how}");
        assert_eq!(
            pks(ns, json!({"x": {"$lt": 0}})),
            Vec::<String>::new(),
            "{how}"
        );
        assert_eq!(agg(ns, json!({}), "min", Some("x")), json!(0), "{how}");
    });
}

#[test]
fn an_empty_filter_matches_every_record_json_or_not() {
    let records: [(&str, &[u8]); 4] = [
        ("a", br#"{"x": 1}"#),
        ("b", b"plain text"),
        ("c", b""),
        ("d", br#"{"x": 2}"#),
    ];
    each_setup(&records, "x", |ns, how| {
        assert_eq!(agg(ns, json!({}), "count", None), json!(4), "{how}");
        assert_eq!(pks(ns, json!({})), ["a", "b", "c", "d"], "{how}");
        // Top, min and max have no value for the records that are not JSON.
        let ranked: Vec<String> = top(ns, json!({}), "x", true, 10)
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(ranked, ["d", "a"], "{how}");
        assert_eq!(agg(ns, json!({}), "min", Some("x")), json!(1), "{how}");
        assert_eq!(agg(ns, json!({}), "count", Some("x")), json!(2), "{how}");
    });
}

#[test]
fn nulls_and_missing_values_are_no_value_to_top_and_aggregates_alike() {
    let records: [(&str, &[u8]); 6] = [
        ("a", br#"{"x": null}"#),
        ("b", br#"{"x": 3}"#),
        ("c", br#"{"y": 1}"#),
        ("d", br#"{"x": false}"#),
        ("e", br#"{"x": "s"}"#),
        ("f", br#"{"x": [1]}"#),
    ];
    each_setup(&records, "x", |ns, how| {
        // Ascending, a null used to rank first; it ranks nowhere, as min skips it.
        let up: Vec<String> = top(ns, json!({}), "x", false, 10)
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(up, ["d", "b", "e"], "{how}");
        let down: Vec<String> = top(ns, json!({}), "x", true, 10)
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(down, ["e", "b", "d"], "{how}");
        assert_eq!(agg(ns, json!({}), "min", Some("x")), json!(false), "{how}");
        assert_eq!(agg(ns, json!({}), "max", Some("x")), json!("s"), "{how}");
        // count(x) counts values other than null, arrays included; sum and avg numbers.
        assert_eq!(agg(ns, json!({}), "count", Some("x")), json!(4), "{how}");
        assert_eq!(agg(ns, json!({}), "sum", Some("x")), json!(3), "{how}");
        assert_eq!(agg(ns, json!({}), "avg", Some("x")), json!(3), "{how}");
        // A filter still finds null when asked for it.
        assert_eq!(pks(ns, json!({"x": null})), ["a"], "{how}");
        assert_eq!(
            agg(ns, json!({"x": null}), "count", None),
            json!(1),
            "{how}"
        );
        assert_eq!(
            agg(ns, json!({"x": null}), "max", Some("x")),
            json!(null),
            "{how}"
        );
        assert!(
            top(ns, json!({"x": null}), "x", true, 10).is_empty(),
            "{how}"
        );
    });
}
