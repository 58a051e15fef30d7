//! Queries answered from index entries alone (issue 33): a keys-only find gives the pks of the
//! whole find, page after page, for random filters through writes, deletes, flushes and
//! compactions; counts, aggregates and top-K of the indexed attribute equal what the records
//! say. Where every condition is on the index's attribute, no record is read.

use crate::common;

use bytes::Bytes;
use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{
    Aggregate, Db, Error, Filter, FindOptions, IndexKind, Namespace, QueryStats, Scalar, TopOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::sync::Arc;

fn random_value(rng: &mut SmallRng) -> Vec<u8> {
    if rng.gen_ratio(1, 25) {
        return b"not json".to_vec();
    }
    let a = match rng.gen_range(0..12) {
        0 => None,
        1 => Some(json!(null)),
        2 => Some(json!([1, 2])),
        3 => Some(json!({"b": 1})),
        4 => Some(json!(rng.gen_bool(0.5))),
        5 | 6 => Some(json!(["x", "xa", "xb", "y", "ya"][rng.gen_range(0..5)])),
        _ => Some(json!(f64::from(rng.gen_range(-4i32..12)) / 2.0)),
    };
    let mut doc = json!({"b": rng.gen_range(0..4), "pad": "p".repeat(rng.gen_range(0..40))});
    if let Some(a) = a {
        doc["a"] = a;
    }
    serde_json::to_vec(&doc).unwrap()
}

/// A random filter: conditions on `a` (indexed) and sometimes on `b` (not).
fn random_filter(rng: &mut SmallRng) -> Filter {
    const ON_A: &[&str] = &[
        r#"{"a": 1}"#,
        r#"{"a": null}"#,
        r#"{"a": "xa"}"#,
        r#"{"a": {"$gte": 0.5, "$lt": 4}}"#,
        r#"{"a": {"$gt": -1}}"#,
        r#"{"a": {"$lte": "xb"}}"#,
        r#"{"a": {"$in": [0, 2.5, "y", true]}}"#,
        r#"{"a": {"$prefix": "x"}}"#,
        r#"{"a": {"$gte": 1}}"#,
        r#"{"a": {"$in": [1, 3, "x"]}}"#,
    ];
    let mut parts = vec![ON_A[rng.gen_range(0..ON_A.len())].to_string()];
    if rng.gen_ratio(1, 3) {
        parts.push(ON_A[rng.gen_range(0..ON_A.len())].to_string());
    }
    if rng.gen_ratio(1, 3) {
        parts.push(format!(r#"{{"b": {}}}"#, rng.gen_range(0..4)));
    }
    if rng.gen_ratio(1, 10) {
        parts = vec![r#"{"b": 1}"#.to_string()];
    }
    Filter::parse_str(&format!(r#"{{"$and": [{}]}}"#, parts.join(","))).unwrap()
}

/// Every page of a find: the records, and the reads of records over all pages.
fn find_all(ns: &impl Readable, filter: &Filter, keys_only: bool) -> (Vec<(Bytes, Bytes)>, u64) {
    let mut opts = FindOptions {
        page_bytes: 40,
        keys_only,
        ..FindOptions::default()
    };
    let (mut out, mut reads) = (Vec::new(), 0);
    loop {
        let page = ns.find(filter, &opts).unwrap();
        reads += record_reads(&page.stats);
        out.extend(page.value.into_iter().map(|f| (f.pk, f.value)));
        match page.continuation {
            Some(c) => opts.continuation = Some(c),
            None => return (out, reads),
        }
    }
}

fn record_reads(stats: &QueryStats) -> u64 {
    stats.primary_lookups + stats.value_reads
}

/// Whether the index on `a` decides `filter`: every condition is on `a`.
fn on_a_only(filter: &Filter) -> bool {
    filter.conditions.iter().all(|(p, _)| p.as_str() == "a")
}

fn check(ns: &Namespace, rng: &mut SmallRng, step: usize, seen: &mut usize) {
    for _ in 0..6 {
        let filter = random_filter(rng);
        let (whole, _) = find_all(ns, &filter, false);
        let (keys, reads) = find_all(ns, &filter, true);
        let whole_pks: Vec<&Bytes> = whole.iter().map(|(k, _)| k).collect();
        let key_pks: Vec<&Bytes> = keys.iter().map(|(k, _)| k).collect();
        assert_eq!(key_pks, whole_pks, "step {step}: keys-only find {filter:?}");
        assert!(keys.iter().all(|(_, v)| v.is_empty()));
        let decided = on_a_only(&filter);
        if decided {
            assert_eq!(reads, 0, "step {step}: {filter:?} read records");
        }
        let count = ns.aggregate(&filter, &Aggregate::Count).unwrap();
        assert_eq!(
            count.value,
            json!(whole.len()),
            "step {step}: count {filter:?}"
        );
        if decided {
            assert_eq!(
                record_reads(&count.stats),
                0,
                "step {step}: count {filter:?}"
            );
        }
        // Aggregates and top-K of `a`, against the documents found.
        let docs: Vec<(Bytes, Value)> = whole
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::from_slice(v).unwrap()))
            .collect();
        let numbers: Vec<f64> = docs.iter().filter_map(|(_, d)| d["a"].as_f64()).collect();
        let sum = ns
            .aggregate(&filter, &Aggregate::parse("sum", Some("a")).unwrap())
            .unwrap();
        assert_eq!(sum.value.as_f64(), Some(numbers.iter().sum::<f64>()));
        let of_a = docs
            .iter()
            .filter(|(_, d)| d.get("a").is_some_and(|v| !v.is_null()));
        let count_a = ns
            .aggregate(&filter, &Aggregate::parse("count", Some("a")).unwrap())
            .unwrap();
        assert_eq!(
            count_a.value,
            json!(of_a.count()),
            "step {step}: {filter:?}"
        );
        let scalars: Vec<(Scalar, &Bytes)> = docs
            .iter()
            .filter_map(|(k, d)| Some((Scalar::from_json(d.get("a")?)?, k)))
            .collect();
        let not_null = || {
            scalars
                .iter()
                .map(|(s, _)| s)
                .filter(|s| **s != Scalar::Null)
        };
        for (op, want) in [("min", not_null().min()), ("max", not_null().max())] {
            let got = ns
                .aggregate(&filter, &Aggregate::parse(op, Some("a")).unwrap())
                .unwrap();
            let got = Scalar::from_json(&got.value).filter(|s| *s != Scalar::Null);
            assert_eq!(got.as_ref(), want, "step {step}: {op} {filter:?}");
        }
        let desc = rng.gen_bool(0.5);
        let top = ns
            .top(
                &filter,
                &TopOptions {
                    by: "a".into(),
                    desc,
                    k: 4,
                    projection: None,
                },
            )
            .unwrap();
        // Top-K ranks no null (the null rule, docs/queries.md).
        let mut ranked: Vec<(Scalar, &Bytes)> = scalars
            .iter()
            .filter(|(s, _)| *s != Scalar::Null)
            .cloned()
            .collect();
        ranked.sort_by(|x, y| match desc {
            true => y.0.cmp(&x.0).then(x.1.cmp(y.1)),
            false => x.0.cmp(&y.0).then(x.1.cmp(y.1)),
        });
        let want: Vec<(&Bytes, Scalar)> = ranked
            .iter()
            .take(4)
            .map(|(s, k)| (*k, s.clone()))
            .collect();
        let got: Vec<(&Bytes, Scalar)> = top
            .value
            .iter()
            .map(|r| (&r.pk, Scalar::from_json(&r.key).unwrap()))
            .collect();
        assert_eq!(got, want, "step {step}: top {filter:?}");
        *seen += usize::from(decided && !whole.is_empty());
        if decided {
            for stats in [&sum.stats, &count_a.stats, &top.stats] {
                assert_eq!(record_reads(stats), 0, "step {step}: {filter:?}");
            }
        }
    }
}

fn run(kind: IndexKind, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(common::small_options())
        .open_storage(storage)
        .unwrap();
    let ns = db.create_namespace("docs").unwrap();
    let key = |i: u32| format!("pk{i:03}").into_bytes();
    for i in 0..150 {
        ns.put(&key(i), &random_value(&mut rng)).unwrap();
    }
    ns.create_index("a", kind).unwrap();
    // Filters the index decided that found records.
    let mut seen = 0;
    for step in 0..25 {
        for _ in 0..rng.gen_range(10..60) {
            let k = key(rng.gen_range(0..200));
            if rng.gen_ratio(1, 6) {
                ns.delete(&k).unwrap();
            } else {
                ns.put(&k, &random_value(&mut rng)).unwrap();
            }
        }
        match rng.gen_range(0..5) {
            0 => db.flush().unwrap(),
            1 => db.wait_for_compactions().unwrap(),
            _ => {}
        }
        check(&ns, &mut rng, step, &mut seen);
    }
    assert!(seen >= 30, "{seen} filters the index decided found records");
}

#[test]
fn classic_keys_only_finds_and_counts_equal_whole_finds() {
    run(IndexKind::Classic, common::seed(0x33a));
}

#[test]
fn vas_keys_only_finds_and_counts_equal_whole_finds() {
    run(IndexKind::Vas, common::seed(0x33b));
}

#[test]
fn a_keys_only_find_reads_no_record_and_takes_no_projection() {
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for i in 0..100u32 {
        let doc = json!({"n": i % 10, "m": i});
        ns.put(format!("{i:03}").as_bytes(), doc.to_string().as_bytes())
            .unwrap();
    }
    ns.create_index("n", IndexKind::Classic).unwrap();
    let f = Filter::parse_str(r#"{"n": {"$gte": 3, "$lt": 5}}"#).unwrap();
    let opts = FindOptions {
        keys_only: true,
        ..FindOptions::default()
    };
    let page = ns.find(&f, &opts).unwrap();
    assert_eq!(page.value.len(), 20);
    assert_eq!(page.value[0].pk, Bytes::from_static(b"003"));
    assert_eq!(page.stats.index_entries, 20);
    assert_eq!(record_reads(&page.stats), 0);
    // A condition on another attribute needs the records.
    let f2 = Filter::parse_str(r#"{"n": 3, "m": {"$lt": 50}}"#).unwrap();
    let page = ns.find(&f2, &opts).unwrap();
    assert_eq!(page.value.len(), 5);
    assert_eq!(page.stats.primary_lookups, 10);
    let both = FindOptions {
        projection: Some(vec!["m".into()]),
        ..opts.clone()
    };
    assert!(matches!(ns.find(&f, &both), Err(Error::InvalidQuery(_))));
    // The same through a query document (the device's Query command, the Python package).
    let doc = br#"{"op": "find", "filter": {"n": {"$gte": 3, "$lt": 5}}, "keys_only": true}"#;
    let out = ns.run_query(doc, 1 << 20).unwrap();
    assert_eq!(out.records.len(), 20);
    assert!(out.records.iter().all(|(_, v)| v.is_empty()));
    assert_eq!(out.summary["stats"]["primary_lookups"], json!(0));
    assert_eq!(out.summary["stats"]["value_reads"], json!(0));
    let doc = br#"{"op": "find", "filter": {"n": 3}, "keys_only": true, "project": ["m"]}"#;
    assert!(matches!(
        ns.run_query(doc, 1 << 20),
        Err(Error::InvalidQuery(_))
    ));
    // Min, max and avg of the indexed attribute from the entries alone.
    let avg = ns
        .aggregate(&f, &Aggregate::parse("avg", Some("n")).unwrap())
        .unwrap();
    assert_eq!(avg.value, json!(3.5));
    assert_eq!(record_reads(&avg.stats), 0);
}

/// A query with thousands of index hits after hundreds of writes still in the memtable: it
/// takes the namespace's memtable keys at once (after a first try finds more than it has
/// checked), and every newer version and delete there still hides the entry it supersedes.
/// The maps taken are shared with later queries: after more writes a read sees them, and a
/// snapshot taken before them still does not.
fn many_hits_beside_unflushed_writes(kind: IndexKind) {
    let mut rng = SmallRng::seed_from_u64(common::seed(0x33c));
    let db = Db::builder(cerberus_engine::Options::default())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    ns.create_index("a", kind).unwrap();
    let key = |i: u32| Bytes::from(format!("pk{i:05}"));
    let mut model = std::collections::BTreeMap::new();
    for i in 0..6_000u32 {
        model.insert(key(i), i64::from(i % 2));
        ns.put(&key(i), &serde_json::to_vec(&json!({"a": i % 2})).unwrap())
            .unwrap();
    }
    db.flush().unwrap();
    // 900 writes in the memtable: more than the checks of the first tries, fewer than a
    // later one's; then 300 more after the first queries took their maps.
    let mut write = |model: &mut std::collections::BTreeMap<Bytes, i64>, n: usize| {
        for _ in 0..n {
            let k = key(rng.gen_range(0..6_000));
            if rng.gen_ratio(1, 3) {
                ns.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let a = rng.gen_range(0..3);
                ns.put(&k, &serde_json::to_vec(&json!({"a": a})).unwrap())
                    .unwrap();
                model.insert(k, a);
            }
        }
    };
    write(&mut model, 900);
    check_every_value(&ns, &model, "first");
    let (before, model_before) = (ns.snapshot(), model.clone());
    write(&mut model, 300);
    check_every_value(&ns, &model, "after more writes");
    check_every_value(&before, &model_before, "snapshot before them");
}

/// Finds (keys only and whole) and counts of `a` = 0, 1 and 2 through `r` equal `model`.
fn check_every_value(
    r: &impl Readable,
    model: &std::collections::BTreeMap<Bytes, i64>,
    when: &str,
) {
    for a in 0..3 {
        let filter = Filter::parse_str(&format!(r#"{{"a": {a}}}"#)).unwrap();
        let want: Vec<Bytes> = model
            .iter()
            .filter(|(_, v)| **v == a)
            .map(|(k, _)| k.clone())
            .collect();
        for keys_only in [true, false] {
            let (mut got, _) = find_all(r, &filter, keys_only);
            got.sort();
            let got: Vec<Bytes> = got.into_iter().map(|(k, _)| k).collect();
            assert_eq!(got, want, "{when}: a = {a}, keys only {keys_only}");
        }
        let count = r.aggregate(&filter, &Aggregate::Count).unwrap().value;
        assert_eq!(count, json!(want.len()), "{when}: count of a = {a}");
    }
}

#[test]
fn classic_many_hits_beside_unflushed_writes() {
    many_hits_beside_unflushed_writes(IndexKind::Classic);
}

#[test]
fn vas_many_hits_beside_unflushed_writes() {
    many_hits_beside_unflushed_writes(IndexKind::Vas);
}
