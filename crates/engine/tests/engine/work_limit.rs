//! Queries under a work limit (`Namespace::with_query_work_limit`): a query within it answers
//! exactly as without one; a query past it stops with `Error::WorkLimit`, returns nothing and
//! leaves the handle and the data as they were; records cost `RECORD_WORK` units each.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{
    Aggregate, Db, Error, ErrorKind, Filter, FindOptions, IndexKind, Namespace, Readable,
    TopOptions, RECORD_WORK,
};
use serde_json::{json, Value};
use std::sync::Arc;

const N: u32 = 2_000;

fn open() -> (Db, Namespace) {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(common::small_options())
        .open_storage(storage)
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    ns.create_index("color", IndexKind::Vas).unwrap();
    ns.create_index("n", IndexKind::Classic).unwrap();
    for i in 0..N {
        // 10 "red" records, the rest "blue"; part in tables, the rest in the memtable.
        let color = if i % 200 == 7 { "red" } else { "blue" };
        let v = json!({"n": i, "color": color, "other": i % 3});
        ns.put(format!("k{i:05}").as_bytes(), v.to_string().as_bytes())
            .unwrap();
        if i == N / 2 {
            db.flush().unwrap();
        }
    }
    // Rewrites and deletes in the memtable over flushed records: entries to check.
    for i in (0..N / 2).step_by(97) {
        let v = json!({"n": i, "color": "red", "other": 0});
        ns.put(format!("k{i:05}").as_bytes(), v.to_string().as_bytes())
            .unwrap();
    }
    ns.delete(b"k00007").unwrap();
    (db, ns)
}

fn filter(v: Value) -> Filter {
    Filter::parse(&v).unwrap()
}

fn limit_of(e: Error) -> u64 {
    assert_eq!(e.kind(), ErrorKind::WorkLimit, "{e}");
    match e {
        Error::WorkLimit { limit } => limit,
        other => panic!("not a work limit: {other}"),
    }
}

#[test]
fn a_small_query_answers_as_without_a_limit_and_a_large_one_stops() {
    let (_db, ns) = open();
    let red = filter(json!({"color": "red"}));
    let keys = FindOptions {
        keys_only: true,
        ..FindOptions::default()
    };
    let whole = FindOptions::default();
    let count = Aggregate::parse("count", None).unwrap();
    let limited = ns.with_query_work_limit(1_000);

    // Within the limit: the same answers (pages, counts, top-K) as the plain handle.
    let want = ns.find(&red, &keys).unwrap().value;
    assert!(want.len() > 10, "the rewrites made more red records");
    assert_eq!(limited.find(&red, &keys).unwrap().value, want);
    assert_eq!(
        limited.find(&red, &whole).unwrap().value,
        ns.find(&red, &whole).unwrap().value
    );
    assert_eq!(
        limited.aggregate(&red, &count).unwrap().value,
        ns.aggregate(&red, &count).unwrap().value
    );
    let top = TopOptions {
        by: "n".into(),
        desc: true,
        k: 5,
        projection: None,
    };
    assert_eq!(
        limited.top(&red, &top).unwrap().value,
        ns.top(&red, &top).unwrap().value
    );
    let by_sk = ns.get_by_secondary("color", &json!("red"), None).unwrap();
    assert_eq!(
        limited
            .get_by_secondary("color", &json!("red"), None)
            .unwrap()
            .value,
        by_sk.value
    );

    // Past it: every kind of query stops with the limit it ran under.
    let blue = filter(json!({"color": "blue"}));
    assert_eq!(limit_of(limited.find(&blue, &keys).unwrap_err()), 1_000);
    assert_eq!(
        limit_of(limited.aggregate(&blue, &count).unwrap_err()),
        1_000
    );
    let top_blue = TopOptions { k: 900, ..top };
    assert_eq!(limit_of(limited.top(&blue, &top_blue).unwrap_err()), 1_000);
    assert_eq!(
        limit_of(
            limited
                .get_by_secondary("color", &json!("blue"), None)
                .unwrap_err()
        ),
        1_000
    );
    // A scan (no index on `other`) reads records: RECORD_WORK units each.
    let other = filter(json!({"other": 1}));
    assert_eq!(limit_of(limited.find(&other, &whole).unwrap_err()), 1_000);

    // Nothing changed: the plain handle (and the limited one, on a small query) still answer.
    assert_eq!(ns.find(&red, &keys).unwrap().value, want);
    assert_eq!(limited.find(&red, &keys).unwrap().value, want);
    let blue_count = ns.aggregate(&blue, &count).unwrap().value;
    // 10 red at load, 11 rewritten red (none of them red before).
    assert_eq!(blue_count, json!(N as usize - 10 - 11));
}

#[test]
fn records_cost_their_weight_and_snapshots_keep_the_limit() {
    let (_db, ns) = open();
    let red = filter(json!({"color": "red"}));
    let whole = FindOptions::default();
    let hits = ns.find(&red, &whole).unwrap().value.len() as u64;
    // Reading `hits` records whole takes RECORD_WORK units each on top of their entries: a
    // limit of one unit per entry is too little for that.
    let per_entry = ns.with_query_work_limit(hits * 4);
    let keys = FindOptions {
        keys_only: true,
        ..FindOptions::default()
    };
    assert!(per_entry.find(&red, &keys).is_ok());
    assert_eq!(
        per_entry.find(&red, &whole).unwrap_err().kind(),
        ErrorKind::WorkLimit
    );
    let enough = ns.with_query_work_limit(hits * (RECORD_WORK + 8));
    assert_eq!(enough.find(&red, &whole).unwrap().value.len() as u64, hits);

    // A snapshot of a limited handle queries under the same limit.
    let snap = ns.with_query_work_limit(10).snapshot();
    assert_eq!(
        snap.find(&red, &whole).unwrap_err().kind(),
        ErrorKind::WorkLimit
    );
    assert_eq!(
        ns.snapshot().find(&red, &whole).unwrap().value.len() as u64,
        hits
    );
}
