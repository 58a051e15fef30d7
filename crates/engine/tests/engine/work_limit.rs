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

/// The least work limit under which `q` answers (the work it is charged), found by halving:
/// a query's charge does not depend on its limit, so it answers at every limit from there.
fn charge<T>(ns: &Namespace, q: &dyn Fn(&Namespace) -> cerberus_engine::Result<T>) -> u64 {
    let (mut lo, mut hi) = (0u64, 1 << 24);
    assert!(q(&ns.with_query_work_limit(hi)).is_ok(), "too much work");
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        match q(&ns.with_query_work_limit(mid)) {
            Ok(_) => hi = mid,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::WorkLimit, "{e}");
                lo = mid;
            }
        }
    }
    hi
}

/// Issue 66 (seed 37067912830268 of the stress test): the same top-K over the same records
/// answered under its limit in one configuration and stopped in another, by where flushes
/// and compactions had left the index (its tombstones were charged, and superseded entries,
/// and table blocks). What a query is charged must not change when a flush or a compaction
/// changes nothing but the tree's shape.
#[test]
fn the_work_charged_does_not_depend_on_the_trees_shape() {
    let (db, ns) = open();
    // Rewrites that move records between colors and values of `n`, and deletes: superseded
    // entries while they are in the memtable, tombstones on the old entries once flushed.
    for i in (0..N).step_by(7) {
        let v = json!({"n": i + 5_000, "color": "green", "other": i % 3});
        ns.put(format!("k{i:05}").as_bytes(), v.to_string().as_bytes())
            .unwrap();
    }
    for i in (3..N).step_by(11) {
        ns.delete(format!("k{i:05}").as_bytes()).unwrap();
    }
    let top = |by: &str, desc, k, projection: Option<&str>| TopOptions {
        by: by.into(),
        desc,
        k,
        projection: projection.map(|p| vec![p.to_string()]),
    };
    let (green, red) = (
        filter(json!({"color": "green", "other": 1})),
        filter(json!({"color": "red"})),
    );
    let two = filter(json!({"color": "green", "n": {"$gte": 6_000}}));
    let blue_below = filter(json!({"color": "blue", "n": {"$lt": 1_500}}));
    let keys = FindOptions {
        keys_only: true,
        ..FindOptions::default()
    };
    let count = Aggregate::parse("count", None).unwrap();
    let show = |v: &dyn std::fmt::Debug| format!("{v:?}");
    let queries: Vec<(&str, Query)> = vec![
        // The seed's shape: the filter's index read, the ranked index's entries counted.
        (
            "top by n of green, projected",
            Box::new(|h| {
                let t = top("n", true, 1_000, Some("other"));
                h.top(&green, &t).map(|r| show(&r.value))
            }),
        ),
        // A ranked walk from the top (its pieces were table blocks).
        (
            "top 5 by n",
            Box::new(|h| {
                let t = top("n", true, 5, None);
                h.top(&Filter::default(), &t).map(|r| show(&r.value))
            }),
        ),
        // Across many pieces, from the top: the memtables' sampled keys cut them before the
        // flush, table blocks after.
        (
            "top 300 by n",
            Box::new(|h| {
                let t = top("n", true, 300, None);
                h.top(&Filter::default(), &t).map(|r| show(&r.value))
            }),
        ),
        (
            "top 40 by n below 1,500 of blue, beside its index",
            Box::new(|h| {
                let t = top("n", true, 40, None);
                h.top(&blue_below, &t).map(|r| show(&r.value))
            }),
        ),
        (
            "top 5 by n ascending",
            Box::new(|h| {
                let t = top("n", false, 5, None);
                h.top(&Filter::default(), &t).map(|r| show(&r.value))
            }),
        ),
        (
            "find with two indexed conditions",
            Box::new(|h| h.find(&two, &keys).map(|r| show(&r.value))),
        ),
        (
            "count of red",
            Box::new(|h| h.aggregate(&red, &count).map(|r| show(&r.value))),
        ),
        (
            "red by secondary key",
            Box::new(|h| {
                h.get_by_secondary("color", &json!("red"), None)
                    .map(|r| show(&r.value))
            }),
        ),
    ];
    charged_alike_in_every_shape(&db, &ns, &queries);
}

/// A query of a test: its answer printed.
type Query<'a> = Box<dyn Fn(&Namespace) -> cerberus_engine::Result<String> + 'a>;

/// Each of `queries` (named) is charged the same and answers the same with its records in
/// memtables, flushed, and compacted.
fn charged_alike_in_every_shape<N: std::fmt::Display>(
    db: &Db,
    ns: &Namespace,
    queries: &[(N, Query)],
) {
    let measure = || -> Vec<(u64, String)> {
        queries
            .iter()
            .map(|(_, q)| (charge(ns, q), q(ns).unwrap()))
            .collect()
    };
    let in_memtables = measure();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let flushed = measure();
    db.compact_all().unwrap();
    let compacted = measure();
    for (i, (name, _)) in queries.iter().enumerate() {
        let charges = [in_memtables[i].0, flushed[i].0, compacted[i].0];
        assert!(
            charges.iter().all(|c| *c == charges[0]),
            "{name}: charged {charges:?} (in memtables, flushed, compacted)"
        );
        assert!(in_memtables[i].1 == flushed[i].1 && flushed[i].1 == compacted[i].1);
    }
}

/// A walk from the top under a limit is cut by the memtable's sampled keys, then by table
/// blocks: it is charged what it visits, last first, whatever the cuts. (The range's last
/// piece walked forward, read whole, was charged by where its upper bound fell.)
#[test]
fn a_walk_from_the_top_is_charged_alike_in_memtables_and_tables() {
    let mut o = common::small_options();
    o.memtable_bytes = 8 << 20;
    let db = Db::builder(o)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    ns.create_index("n", IndexKind::Classic).unwrap();
    ns.create_index("other", IndexKind::Vas).unwrap();
    for i in 0..6_000u32 {
        let v = json!({"n": i, "other": i % 3});
        ns.put(format!("k{i:05}").as_bytes(), v.to_string().as_bytes())
            .unwrap();
    }
    let cases = [
        (json!({}), 5),
        (json!({}), 300),
        (json!({"other": 2, "n": {"$gte": 1_500, "$lt": 1_700}}), 60),
        (json!({"other": 2, "n": {"$gte": 1_500, "$lt": 1_700}}), 66),
        (json!({"other": 1, "n": {"$lt": 3_000}}), 40),
    ];
    let queries: Vec<(String, Query)> = cases
        .into_iter()
        .map(|(f, k)| {
            let name = format!("top {k} of {f}");
            let (f, t) = (filter(f), top_by_n(k));
            let q: Query = Box::new(move |h| h.top(&f, &t).map(|r| format!("{:?}", r.value)));
            (name, q)
        })
        .collect();
    charged_alike_in_every_shape(&db, &ns, &queries);
}

fn top_by_n(k: usize) -> TopOptions {
    TopOptions {
        by: "n".into(),
        desc: true,
        k,
        projection: None,
    }
}
