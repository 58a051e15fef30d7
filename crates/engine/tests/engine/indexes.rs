//! Secondary indexes and queries against a `BTreeMap` reference: random inserts, updates that
//! change the indexed attributes, deletes, values that stop being JSON, destroys of another
//! namespace, flushes, compactions, value-log GC and reopens; after each step every query kind
//! equals what a scan of the reference gives.

use crate::common;

use bytes::Bytes;
use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::QueryResult;
use cerberus_engine::Readable;
use cerberus_engine::{
    Aggregate, Db, Error, Filter, FindOptions, IndexKind, Namespace, Options, Scalar, TopOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    let mut o = common::small_options();
    o.vlog_gc_dead_ratio = 0.3;
    o
}

fn random_value(rng: &mut SmallRng) -> Vec<u8> {
    if rng.gen_ratio(1, 20) {
        return b"not json at all".to_vec();
    }
    let groups = [
        json!("a"),
        json!("b"),
        json!("c"),
        json!(1),
        json!(2.5),
        json!(null),
    ];
    let mut doc = json!({
        "n": {"v": rng.gen_range(0..20)},
        "s": format!("{}{}", ["x", "xy", "y"][rng.gen_range(0..3)], rng.gen_range(0..100)),
        "pad": "p".repeat(rng.gen_range(0..60)),
    });
    // Sometimes the attribute is missing, or not a scalar.
    match rng.gen_range(0..10) {
        0 => {}
        1 => doc["g"] = json!(["a"]),
        _ => doc["g"] = groups[rng.gen_range(0..groups.len())].clone(),
    }
    serde_json::to_vec(&doc).unwrap()
}

/// The records of the reference that meet `filter`, in pk order.
fn reference(model: &Model, filter: &Filter) -> Vec<(Vec<u8>, Value)> {
    model
        .iter()
        .filter_map(|(k, v)| match serde_json::from_slice::<Value>(v) {
            Ok(doc) => filter.matches(&doc).then(|| (k.clone(), doc)),
            // `{}` matches every record, JSON or not (docs/queries.md).
            Err(_) => filter
                .conditions
                .is_empty()
                .then(|| (k.clone(), Value::Null)),
        })
        .collect()
}

fn filters() -> Vec<Filter> {
    [
        r#"{"g": "a"}"#,
        r#"{"g": 1}"#,
        r#"{"g": null}"#,
        r#"{"g": {"$in": ["b", 2.5]}}"#,
        r#"{"n.v": {"$gte": 5, "$lt": 9}}"#,
        r#"{"n.v": {"$gt": 17}}"#,
        r#"{"s": {"$prefix": "xy"}}"#,
        r#"{"g": "c", "n.v": {"$lte": 10}}"#,
        r#"{"$and": [{"g": {"$gte": "b"}}, {"s": {"$prefix": "x"}}]}"#,
        r#"{}"#,
    ]
    .iter()
    .map(|f| Filter::parse_str(f).unwrap())
    .collect()
}

/// Every record of a find, page after page, with a small budget so there are many pages.
fn find_all(ns: &Namespace, filter: &Filter, limit: Option<u64>) -> Vec<(Bytes, Bytes)> {
    let mut opts = FindOptions {
        page_bytes: 300,
        limit,
        ..FindOptions::default()
    };
    let mut out = Vec::new();
    loop {
        let page = ns.find(filter, &opts).unwrap();
        assert!(!page.value.is_empty() || page.continuation.is_none());
        out.extend(page.value.into_iter().map(|r| (r.pk, r.value)));
        match page.continuation {
            Some(c) => opts.continuation = Some(c),
            None => return out,
        }
    }
}

fn check(ns: &Namespace, model: &Model, step: usize, kind: IndexKind) {
    for filter in filters() {
        let want = reference(model, &filter);
        let mut got = find_all(ns, &filter, None);
        let n = got.len();
        got.sort();
        got.dedup();
        assert_eq!(got.len(), n, "step {step}: duplicates for {filter:?}");
        let got_pks: Vec<&[u8]> = got.iter().map(|(k, _)| &k[..]).collect();
        let want_pks: Vec<&[u8]> = want.iter().map(|(k, _)| &k[..]).collect();
        if got_pks != want_pks {
            let show = |v: Vec<&&[u8]>| -> Vec<String> {
                v.iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect()
            };
            let extra = show(got_pks.iter().filter(|k| !want_pks.contains(k)).collect());
            let missing = show(want_pks.iter().filter(|k| !got_pks.contains(k)).collect());
            panic!("step {step}: find {filter:?}: extra {extra:?}, missing {missing:?}");
        }
        for (k, v) in &got {
            assert_eq!(
                Some(&v.to_vec()),
                model.get(&k[..]),
                "step {step}: value of {k:?}"
            );
        }
        // A limit cuts the same stream.
        assert_eq!(find_all(ns, &filter, Some(3)).len(), want.len().min(3));

        let count = ns.aggregate(&filter, &Aggregate::Count).unwrap().value;
        assert_eq!(count, json!(want.len()), "step {step}: count {filter:?}");
        let sum: f64 = want.iter().filter_map(|(_, d)| d["n"]["v"].as_f64()).sum();
        let got_sum = ns
            .aggregate(&filter, &Aggregate::parse("sum", Some("n.v")).unwrap())
            .unwrap()
            .value;
        assert_eq!(got_sum.as_f64(), Some(sum), "step {step}: sum {filter:?}");

        for desc in [false, true] {
            let opts = TopOptions {
                by: "n.v".into(),
                desc,
                k: 5,
                projection: Some(vec!["s".into()]),
            };
            let QueryResult { value: top, .. } = ns.top(&filter, &opts).unwrap();
            let mut ranked: Vec<(i64, &[u8], &Value)> = want
                .iter()
                .filter_map(|(k, d)| Some((d["n"]["v"].as_i64()?, &k[..], d)))
                .collect();
            ranked.sort_by(|a, b| {
                let by = if desc { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) };
                by.then(a.1.cmp(b.1))
            });
            let want_top: Vec<(Vec<u8>, Value)> = ranked
                .iter()
                .take(5)
                .map(|(v, k, d)| (k.to_vec(), json!({"v": v, "s": d["s"]})))
                .collect();
            let got_top: Vec<(Vec<u8>, Value)> = top
                .iter()
                .map(|r| {
                    let p = r.projection.clone().unwrap();
                    (r.pk.to_vec(), json!({"v": r.key, "s": p["s"]}))
                })
                .collect();
            assert_eq!(got_top.len(), want_top.len(), "step {step}: top {filter:?}");
            for (g, w) in got_top.iter().zip(&want_top) {
                assert_eq!(g.0, w.0, "step {step}: top {filter:?} desc {desc}");
                assert_eq!(g.1["s"], w.1["s"]);
                assert_eq!(g.1["v"].as_f64(), w.1["v"].as_f64());
            }
        }
    }
    for g in [json!("a"), json!(1), json!(null)] {
        let QueryResult {
            value: pks, stats, ..
        } = ns.get_by_secondary("g", &g, None).unwrap();
        let filter = Filter::parse(&json!({ "g": g })).unwrap();
        let want: Vec<Vec<u8>> = reference(model, &filter)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let mut got: Vec<Vec<u8>> = pks.iter().map(|p| p.to_vec()).collect();
        got.sort();
        assert_eq!(got, want, "step {step}: get_by_secondary {g}");
        assert!(stats.index_entries >= want.len() as u64);
        assert_eq!(stats.plan, format!("{kind} index on g"));
        // The pks come from the index alone.
        assert_eq!(stats.primary_lookups + stats.value_reads, 0);
    }
}

#[test]
fn classic_queries_equal_a_reference_through_writes_compactions_gc_and_reopens() {
    model_run(IndexKind::Classic, common::seed(0x1d3));
}

#[test]
fn vas_queries_equal_a_reference_through_writes_compactions_gc_and_reopens() {
    model_run(IndexKind::Vas, common::seed(0x1d4));
}

fn model_run(kind: IndexKind, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let storage: StorageRef = Arc::new(MemStorage::new());
    let mut db = Db::builder(options())
        .open_storage(storage.clone())
        .unwrap();
    let mut ns = db.create_namespace("docs").unwrap();
    let mut model = Model::new();
    let mut other = Some(db.create_namespace("other").unwrap());
    let key = |i: u32| format!("pk{i:04}").into_bytes();
    // Records before the indexes: the backfill must find them.
    for i in 0..300 {
        let v = random_value(&mut rng);
        ns.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    ns.create_index("g", kind).unwrap();
    ns.create_index("n.v", kind).unwrap();
    let steps = 40;
    // A snapshot and the reference as it was then: its queries must not change.
    let mut pinned: Option<(cerberus_engine::Snapshot, Model)> = None;
    for step in 0..steps {
        if pinned.is_none() && rng.gen_ratio(1, 4) {
            pinned = Some((ns.snapshot(), model.clone()));
        }
        for _ in 0..rng.gen_range(20..120) {
            let k = key(rng.gen_range(0..400));
            if rng.gen_ratio(1, 6) {
                ns.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = random_value(&mut rng);
                ns.put(&k, &v).unwrap();
                model.insert(k.clone(), v);
            }
            if let Some(o) = &other {
                o.put(&k, &random_value(&mut rng)).unwrap();
            }
        }
        match rng.gen_range(0..8) {
            0 => db.flush().unwrap(),
            1 => db.wait_for_compactions().unwrap(),
            2 => {
                db.gc_value_log().unwrap();
            }
            3 => {
                let id = ns.id();
                pinned = None;
                drop(ns);
                other = None;
                db.close().unwrap();
                db = Db::builder(options())
                    .open_storage(storage.clone())
                    .unwrap();
                ns = db.namespace(id).unwrap();
            }
            4 => match other.take() {
                Some(o) => db.destroy_namespace(o.id()).unwrap(),
                None => other = Some(db.create_namespace(&format!("other{step}")).unwrap()),
            },
            5 => {
                // Dropped and built again from what the namespace holds now.
                ns.drop_index("n.v").unwrap();
                ns.create_index("n.v", kind).unwrap();
            }
            _ => {}
        }
        check(&ns, &model, step, kind);
        if let Some((snap, then)) = &pinned {
            for filter in filters() {
                let want: Vec<Vec<u8>> = reference(then, &filter)
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                let page = snap.find(&filter, &FindOptions::default()).unwrap();
                let mut got: Vec<Vec<u8>> = page.value.iter().map(|r| r.pk.to_vec()).collect();
                got.sort();
                assert_eq!(got, want, "step {step}: snapshot find {filter:?}");
            }
        }
    }
    let mut indexes = ns.list_indexes().unwrap();
    indexes.sort_by(|a, b| a.attr.cmp(&b.attr));
    assert_eq!(indexes.len(), 2);
    assert!(indexes.iter().all(|i| i.ready && i.kind == kind));
}

#[test]
fn the_planner_uses_the_most_selective_index_and_says_when_it_scans() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(common::small_options())
        .open_storage(storage)
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for i in 0..500u32 {
        let doc = json!({"common": i % 2, "rare": i % 100, "free": i});
        ns.put(format!("{i:05}").as_bytes(), doc.to_string().as_bytes())
            .unwrap();
    }
    ns.create_index("common", IndexKind::Classic).unwrap();
    ns.create_index("rare", IndexKind::Classic).unwrap();
    let f = Filter::parse_str(r#"{"common": 1, "rare": 7}"#).unwrap();
    let page = ns.find(&f, &FindOptions::default()).unwrap();
    assert_eq!(page.stats.plan, "classic index on rare");
    assert_eq!(page.value.len(), 5);
    assert_eq!(page.stats.index_entries, 5);
    assert_eq!(page.stats.primary_lookups, 5);
    assert_eq!(page.stats.records_matched, 5);
    assert!(page.stats.bytes_returned > 0);
    // A limit stops the index walk: the first pks in index order.
    let QueryResult {
        value: two, stats, ..
    } = ns.get_by_secondary("rare", &json!(7), Some(2)).unwrap();
    assert_eq!(
        two,
        ["00007", "00107"].map(|p| bytes::Bytes::from_static(p.as_bytes()))
    );
    assert!(stats.index_entries >= 2 && stats.index_entries <= 5);
    assert!(ns
        .get_by_secondary("rare", &json!(7), Some(0))
        .unwrap()
        .value
        .is_empty());
    let f = Filter::parse_str(r#"{"free": {"$lt": 10}}"#).unwrap();
    let page = ns.find(&f, &FindOptions::default()).unwrap();
    assert_eq!(page.stats.plan, "scan (no usable index)");
    assert_eq!(page.value.len(), 10);
    assert_eq!(page.stats.primary_lookups, 0);
    assert_eq!(page.stats.records_examined, 500);
}

#[test]
fn bad_index_and_query_input_gets_clear_errors() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(common::small_options())
        .open_storage(storage)
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    for i in 0..50u32 {
        let doc = json!({"x": i % 5}).to_string();
        a.put(format!("{i:03}").as_bytes(), doc.as_bytes()).unwrap();
        b.put(format!("{i:03}").as_bytes(), doc.as_bytes()).unwrap();
    }
    // An index on an attribute no record has is allowed, and empty.
    a.create_index("missing", IndexKind::Classic).unwrap();
    assert!(a
        .get_by_secondary("missing", &json!(1), None)
        .unwrap()
        .value
        .is_empty());
    assert!(matches!(
        a.create_index("missing", IndexKind::Classic),
        Err(Error::IndexExists { .. })
    ));
    assert!(matches!(
        a.create_index("", IndexKind::Classic),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(a.drop_index("nope"), Err(Error::UnknownIndex(_))));
    assert!(matches!(
        a.get_by_secondary("x", &json!(1), None),
        Err(Error::UnknownIndex(_))
    ));
    assert!(matches!(
        a.get_by_secondary("missing", &json!([1]), None),
        Err(Error::InvalidQuery(_))
    ));
    assert!(Filter::parse_str(r#"{"x": {"$regex": "a"}}"#).is_err());
    assert!(matches!(
        Aggregate::parse("median", Some("x")),
        Err(Error::InvalidQuery(_))
    ));
    assert!(matches!(
        Aggregate::parse("sum", None),
        Err(Error::InvalidQuery(_))
    ));

    // Continuations: another namespace, another filter, garbage, a dropped index.
    a.create_index("x", IndexKind::Classic).unwrap();
    let f = Filter::parse_str(r#"{"x": {"$gte": 0}}"#).unwrap();
    let small = FindOptions {
        page_bytes: 20,
        ..FindOptions::default()
    };
    let page = a.find(&f, &small).unwrap();
    let c = page.continuation.clone().unwrap();
    let with = |c: Vec<u8>| FindOptions {
        continuation: Some(c),
        ..FindOptions::default()
    };
    assert!(matches!(
        b.find(&f, &with(c.clone())),
        Err(Error::InvalidQuery(_))
    ));
    let other = Filter::parse_str(r#"{"x": {"$gte": 1}}"#).unwrap();
    assert!(matches!(
        a.find(&other, &with(c.clone())),
        Err(Error::InvalidQuery(_))
    ));
    assert!(matches!(
        a.find(&f, &with(b"junk".to_vec())),
        Err(Error::InvalidQuery(_))
    ));
    let rest = a.find(&f, &with(c.clone())).unwrap();
    assert_eq!(page.value.len() + rest.value.len(), 50);
    a.drop_index("x").unwrap();
    assert!(matches!(a.find(&f, &with(c)), Err(Error::UnknownIndex(_))));
    // Without the index the same query scans, and finds the same records.
    let all = a.find(&f, &FindOptions::default()).unwrap();
    assert_eq!(all.value.len(), 50);
    // Destroying the namespace drops its indexes with it.
    let id = a.id();
    db.destroy_namespace(id).unwrap();
    assert!(matches!(a.list_indexes(), Err(Error::UnknownNamespace(_))));
    let _ = Scalar::Null;
}

#[test]
fn an_index_built_while_writers_go_on_misses_nothing() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(options())
        .open_storage(storage.clone())
        .unwrap();
    let ns = db.create_namespace("live").unwrap();
    for i in 0..20_000u32 {
        let doc = json!({"g": i % 7, "w": 0});
        ns.put(format!("k{i:05}").as_bytes(), doc.to_string().as_bytes())
            .unwrap();
    }
    let stop = AtomicBool::new(false);
    let models: Vec<Model> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let (ns, stop) = (&ns, &stop);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(common::seed(7) + w);
                    let mut model = Model::new();
                    let mut n = 0;
                    // Each writer owns the keys of its parity, so the models merge.
                    while !stop.load(Ordering::Relaxed) || n < 500 {
                        let i = rng.gen_range(0..10_000u32) * 2 + w as u32;
                        let k = format!("k{i:05}").into_bytes();
                        if rng.gen_ratio(1, 5) {
                            ns.delete(&k).unwrap();
                            model.insert(k, Vec::new());
                        } else {
                            let v = json!({"g": rng.gen_range(0..7), "w": w + 1}).to_string();
                            ns.put(&k, v.as_bytes()).unwrap();
                            model.insert(k, v.into_bytes());
                        }
                        n += 1;
                    }
                    model
                })
            })
            .collect();
        // Let the writers start first.
        std::thread::sleep(std::time::Duration::from_millis(20));
        ns.create_index("g", IndexKind::Classic).unwrap();
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut model = Model::new();
    for i in 0..20_000u32 {
        let doc = json!({"g": i % 7, "w": 0});
        model.insert(
            format!("k{i:05}").into_bytes(),
            doc.to_string().into_bytes(),
        );
    }
    for m in models {
        for (k, v) in m {
            if v.is_empty() {
                model.remove(&k);
            } else {
                model.insert(k, v);
            }
        }
    }
    for g in 0..7 {
        let filter = Filter::parse(&json!({ "g": g })).unwrap();
        let want: Vec<Vec<u8>> = reference(&model, &filter)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let QueryResult { value: pks, .. } = ns.get_by_secondary("g", &json!(g), None).unwrap();
        let mut got: Vec<Vec<u8>> = pks.iter().map(|p| p.to_vec()).collect();
        got.sort();
        let show = |v: Vec<&Vec<u8>>| -> Vec<String> {
            v.iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect()
        };
        let extra = show(got.iter().filter(|k| !want.contains(k)).collect());
        let missing = show(want.iter().filter(|k| !got.contains(k)).collect());
        assert!(
            extra.is_empty() && missing.is_empty(),
            "g = {g}: extra {extra:?}, missing {missing:?}"
        );
    }
    // And after a reopen, from tables and the replayed log.
    let id = ns.id();
    drop(ns);
    db.close().unwrap();
    drop(db);
    let db = Db::builder(options()).open_storage(storage).unwrap();
    let ns = db.namespace(id).unwrap();
    let filter = Filter::parse(&json!({ "g": 3 })).unwrap();
    let want = reference(&model, &filter).len();
    assert_eq!(
        ns.get_by_secondary("g", &json!(3), None)
            .unwrap()
            .value
            .len(),
        want
    );
}

#[test]
fn vas_finds_on_the_nand_model_read_values_ahead_and_agree() {
    use cerberus_engine::storage::{NandConfig, NandStorage};
    let cfg = NandConfig {
        t_read: std::time::Duration::from_micros(20),
        t_prog: std::time::Duration::from_micros(20),
        ..NandConfig::default()
    };
    let storage: StorageRef = Arc::new(NandStorage::new(Arc::new(MemStorage::new()), cfg));
    let mut opts = common::small_options();
    opts.cache_bytes = 0;
    let db = Db::builder(opts).open_storage(storage).unwrap();
    let ns = db.create_namespace("nand").unwrap();
    let mut rng = SmallRng::seed_from_u64(common::seed(77));
    let mut model = Model::new();
    for round in 0..3 {
        for i in 0..400u32 {
            let k = format!("k{:04}", rng.gen_range(0..300)).into_bytes();
            let v = random_value(&mut rng);
            ns.put(&k, &v).unwrap();
            model.insert(k, v);
            if round == 0 && i == 200 {
                ns.create_index("g", IndexKind::Vas).unwrap();
            }
        }
        db.flush().unwrap();
        for filter in filters() {
            let want: Vec<Vec<u8>> = reference(&model, &filter)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            let mut got: Vec<Vec<u8>> = find_all(&ns, &filter, None)
                .into_iter()
                .map(|(k, v)| {
                    assert_eq!(Some(&v.to_vec()), model.get(&k[..]));
                    k.to_vec()
                })
                .collect();
            got.sort();
            assert_eq!(got, want, "round {round}: {filter:?}");
        }
    }
}

#[test]
fn a_close_during_a_backfill_stops_it_and_the_next_open_finishes_it() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(options())
        .open_storage(storage.clone())
        .unwrap();
    let ns = db.create_namespace("big").unwrap();
    let id = ns.id();
    for i in 0..60_000u32 {
        let doc = json!({"g": i % 7});
        ns.put(format!("k{i:05}").as_bytes(), doc.to_string().as_bytes())
            .unwrap();
    }
    let created = std::thread::scope(|s| {
        let creating = s.spawn(|| ns.create_index("g", IndexKind::Classic));
        // Closed once the index exists (its backfill under way, or done already).
        let t = std::time::Instant::now();
        while ns.list_indexes().unwrap().is_empty() {
            assert!(t.elapsed() < std::time::Duration::from_secs(10));
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        db.close().unwrap();
        creating.join().unwrap()
    });
    drop((ns, db));
    let db = Db::builder(options()).open_storage(storage).unwrap();
    let ns = db.namespace(id).unwrap();
    // Finished before the close or by the open: ready either way, and whole.
    if let Err(e) = created {
        assert!(matches!(e, Error::Closed), "{e}");
    }
    assert!(ns.list_indexes().unwrap()[0].ready);
    let QueryResult { value: pks, .. } = ns.get_by_secondary("g", &json!(3), None).unwrap();
    assert_eq!(pks.len(), (0..60_000u32).filter(|i| i % 7 == 3).count());
}

/// With background work stopped by a disk that stays full, `create_index` answers `NoSpace`
/// and the index is built once space is back. (The 60-minute stress run found a
/// `create_index` waiting forever behind a flush retried every 200 ms; this test takes the
/// same path but does not hit that timing: the stress seed in docs/stress.md does.)
#[test]
fn create_index_on_a_full_disk_answers() {
    use cerberus_engine::storage::{Fault, FaultError, FaultStorage, IoKind};
    let fs = FaultStorage::new();
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(fs.clone()))
        .unwrap();
    let ns = db.create_namespace("a").unwrap();
    for k in 0..200u32 {
        ns.put(
            format!("k{k:04}").as_bytes(),
            format!(r#"{{"g":{}}}"#, k % 5).as_bytes(),
        )
        .unwrap();
    }
    fs.inject(Some(Fault {
        kind: IoKind::Create,
        nth: 0,
        error: FaultError::NoSpace,
        sticky: true,
        partial: false,
    }));
    // A memtable frozen and never flushed: the flush comes first at every retry. How many
    // puts fit before writes stop depends on where the memtables stood: `stored` counts
    // the acknowledged ones (the one that failed is in doubt).
    let mut stored = 300u32;
    for k in 0..300u32 {
        let pad = "p".repeat(80);
        let v = format!(r#"{{"g":{},"pad":"{pad}"}}"#, k % 5);
        if ns.put(format!("k{k:04}").as_bytes(), v.as_bytes()).is_err() {
            stored = k;
            break;
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let ns2 = ns.clone();
    std::thread::spawn(move || {
        let _ = tx.send(ns2.create_index("g", IndexKind::Classic));
    });
    // A liveness bound, not a speed one.
    let answer = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("create_index did not return with the disk full");
    assert!(
        matches!(answer, Err(cerberus_engine::Error::NoSpace { .. })),
        "{answer:?}"
    );
    // The index stays defined and unready (queries scan); with space back, the next open
    // backfills it.
    fs.inject(None);
    drop(ns);
    db.close().unwrap();
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(fs.clone()))
        .unwrap();
    let ns = db
        .namespace(
            db.list_namespaces()
                .iter()
                .find(|n| n.name == "a")
                .unwrap()
                .nsid,
        )
        .unwrap();
    let QueryResult { value: found, .. } = ns.get_by_secondary("g", &json!(3), None).unwrap();
    let with_g3 = |keys: u32| (0..keys.max(200)).filter(|k| k % 5 == 3).count();
    let in_doubt = with_g3(stored + 1).min(with_g3(300));
    assert!(
        found.len() == with_g3(stored) || found.len() == in_doubt,
        "{} found, {stored} puts acknowledged",
        found.len()
    );
}

/// A query meets an index being dropped and created again, over and over: whether it reads
/// the index or scans the records, it answers for every record (issue 33's hostile-tenant
/// run found a top over an index that was being dropped returning part of its records: the
/// query still listed the index while its deeper tables were already gone).
#[test]
fn queries_answer_for_every_record_while_their_index_is_dropped_and_created() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(options()).open_storage(storage).unwrap();
    let ns = db.create_namespace("t").unwrap();
    const N: u64 = 1_500;
    for i in 0..N {
        let v = json!({"n": i, "pad": "p".repeat(40)});
        ns.put(format!("k{i:05}").as_bytes(), v.to_string().as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let storm = {
        let (ns, stop) = (ns.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut rounds = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || rounds < 20 {
                let kind = [IndexKind::Vas, IndexKind::Classic][rounds % 2];
                ns.create_index("n", kind).unwrap();
                ns.drop_index("n").unwrap();
                rounds += 1;
            }
            rounds
        })
    };
    let all = Filter::parse(&json!({"n": {"$gte": 0}})).unwrap();
    let top = TopOptions {
        by: "n".into(),
        desc: true,
        k: 3,
        projection: None,
    };
    for q in 0..300 {
        let count = ns.aggregate(&all, &Aggregate::Count).unwrap().value;
        assert_eq!(count, json!(N), "count {q}");
        let ranked = ns.top(&all, &top).unwrap().value;
        let keys: Vec<Bytes> = ranked.into_iter().map(|r| r.pk).collect();
        let want: Vec<Bytes> = (N - 3..N)
            .rev()
            .map(|i| Bytes::from(format!("k{i:05}")))
            .collect();
        assert_eq!(keys, want, "top {q}");
        if q % 10 == 0 {
            // One page (a continuation over a dropped index is refused, as documented).
            let page = ns.find(&all, &FindOptions::default()).unwrap();
            assert!(page.continuation.is_none(), "find {q}: one page");
            assert_eq!(page.value.len() as u64, N, "find {q}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(storm.join().unwrap() >= 20);
}
