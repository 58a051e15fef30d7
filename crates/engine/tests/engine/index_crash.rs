//! Secondary indexes across power cuts (fault-injecting storage): writes, flushes,
//! compactions, value-log GC and index builds cut at random points; after every reopen each
//! index answers exactly what a scan of the recovered records says: no stale record, no
//! missing one, whichever writes the crash kept.

use crate::common;

use cerberus_engine::storage::{FaultStorage, StorageRef};
use cerberus_engine::QueryResult;
use cerberus_engine::Readable;
use cerberus_engine::{Db, Filter, FindOptions, IndexKind, Namespace, Options, ReadOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

fn options() -> Options {
    let mut o = common::small_options();
    o.memtable_bytes = 4 << 10;
    o.vlog_segment_bytes = 16 << 10;
    o.target_table_bytes = 2 << 10;
    o.level1_bytes = 8 << 10;
    o.vlog_gc_dead_ratio = 0.3;
    o
}

/// The records as a scan of the namespace reads them.
fn truth(ns: &Namespace) -> BTreeMap<Vec<u8>, Value> {
    ns.iter(ReadOptions::default())
        .unwrap()
        .filter_map(|r| {
            let (k, v) = r.expect("scan after recovery");
            Some((k.to_vec(), serde_json::from_slice(&v).ok()?))
        })
        .collect()
}

/// Checks every index against a scan; returns how many records and ready indexes there were.
fn check(ns: &Namespace, seed: u64, point: usize) -> (usize, usize) {
    let records = truth(ns);
    let ready: Vec<String> = ns
        .list_indexes()
        .unwrap()
        .into_iter()
        .filter(|i| i.ready)
        .map(|i| i.attr)
        .collect();
    for g in 0..4 {
        let want: Vec<Vec<u8>> = records
            .iter()
            .filter(|(_, d)| d["g"] == json!(g))
            .map(|(k, _)| k.clone())
            .collect();
        let QueryResult {
            value: pks, stats, ..
        } = ns.get_by_secondary("g", &json!(g), None).unwrap();
        let mut got: Vec<Vec<u8>> = pks.iter().map(|p| p.to_vec()).collect();
        got.sort();
        assert_eq!(
            got, want,
            "seed {seed} point {point}: g = {g} ({})",
            stats.plan
        );
    }
    for (attr, filter) in [
        ("n", json!({"n": {"$gte": 5}})),
        ("h", json!({"h": {"$lt": 3}})),
    ] {
        let f = Filter::parse(&filter).unwrap();
        let want: Vec<Vec<u8>> = records
            .iter()
            .filter(|(_, d)| f.matches(d))
            .map(|(k, _)| k.clone())
            .collect();
        let page = ns.find(&f, &FindOptions::default()).unwrap();
        let mut got: Vec<Vec<u8>> = page.value.iter().map(|r| r.pk.to_vec()).collect();
        got.sort();
        assert_eq!(
            got, want,
            "seed {seed} point {point}: {filter} ({})",
            page.stats.plan
        );
        if ready.iter().any(|a| a == attr) {
            assert!(page.stats.plan.contains("index"), "{}", page.stats.plan);
        }
    }
    (records.len(), ready.len())
}

fn crash_run(seed: u64, crash_points: usize) -> (usize, bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let fs = FaultStorage::new();
    let storage: StorageRef = Arc::new(fs.clone());
    let mut db = Db::builder(options())
        .open_storage(storage.clone())
        .unwrap();
    let id = db.create_namespace("docs").unwrap().id();
    let ns = db.namespace(id).unwrap();
    ns.create_index("g", IndexKind::Vas).unwrap();
    ns.create_index("n", IndexKind::Classic).unwrap();
    drop(ns);
    let (mut most_records, mut saw_h) = (0, false);
    for point in 0..crash_points {
        fs.crash_after_ops(Some(rng.gen_range(1..600)));
        let ns = db.namespace(id).unwrap();
        for _ in 0..rng.gen_range(20..200) {
            let k = format!("k{:03}", rng.gen_range(0..60)).into_bytes();
            let res = match rng.gen_range(0..100) {
                0..=69 => {
                    let doc = json!({"g": rng.gen_range(0..4), "n": rng.gen_range(0..10),
                                     "h": rng.gen_range(0..6), "pad": "x".repeat(rng.gen_range(0..80))});
                    ns.put(&k, doc.to_string().as_bytes())
                }
                70..=84 => ns.delete(&k),
                85..=89 => db.flush(),
                90..=93 => db.compact_all(),
                94..=96 => db.gc_value_log().map(|_| ()),
                _ => match ns.list_indexes() {
                    // Build (or drop and build again) an index: the backfill may be cut.
                    Ok(l) if l.iter().any(|i| i.attr == "h") => ns.drop_index("h"),
                    Ok(_) => ns.create_index("h", IndexKind::Vas),
                    Err(e) => Err(e),
                },
            };
            if res.is_err() {
                break;
            }
        }
        fs.crash_after_ops(None);
        fs.crash();
        drop(ns);
        drop(db);
        fs.restart();
        db = Db::builder(options())
            .open_storage(storage.clone())
            .unwrap_or_else(|e| panic!("seed {seed} point {point}: reopen failed: {e}"));
        let (records, ready) = check(&db.namespace(id).unwrap(), seed, point);
        most_records = most_records.max(records);
        saw_h |= ready == 3;
    }
    // Not a run where nothing was written, or the third index never built.
    assert!(
        most_records >= 20,
        "seed {seed}: at most {most_records} records"
    );
    (most_records, saw_h)
}

#[test]
fn indexes_agree_with_the_records_after_every_crash() {
    let base = common::seed(0x5eed1d);
    let mut saw_h = false;
    for s in 0..6 {
        saw_h |= crash_run(base + s, 16).1;
    }
    assert!(saw_h, "no run built the third index across a crash");
}
