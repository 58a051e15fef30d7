use super::super::database::Db;
use crate::index::IndexKind;
use crate::options::Options;
use crate::query::Filter;
use crate::storage::MemStorage;
use crate::{FindOptions, Readable, TopOptions};
use bytes::Bytes;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const N: u64 = 300;

fn keys(from: u64, to: u64) -> Vec<Bytes> {
    (from..to)
        .rev()
        .map(|i| Bytes::from(format!("k{i:05}")))
        .collect()
}

/// A query loads its super version; then the memtable is frozen and an index on the
/// attribute it ranks by is created, its entries all in a memtable that super version does
/// not hold, and made ready. The query must not read that index, which holds none of its
/// records for it (CI once saw a top 3 of 1,500 records answer records 1021-1023: an index
/// whose last backfill chunk went to a memtable made after the query's super version).
#[test]
fn a_query_never_reads_an_index_made_ready_after_its_super_version() {
    let db = Db::builder(Options::default())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for i in 0..N {
        let v = json!({ "n": i }).to_string();
        ns.put(format!("k{i:05}").as_bytes(), v.as_bytes()).unwrap();
    }
    let all = Filter::parse(&json!({"n": {"$gte": 0}})).unwrap();
    let top = TopOptions {
        by: "n".into(),
        desc: true,
        k: 3,
        projection: None,
    };
    let (admin, once) = (ns.clone(), AtomicBool::new(false));
    *db.inner.hooks.query_super_version.lock() = Some(Box::new(move |inner| {
        if !once.swap(true, Ordering::SeqCst) {
            inner.flusher().flush().unwrap();
            admin.create_index("n", IndexKind::Vas).unwrap();
        }
    }));
    let raced = ns.top(&all, &top).unwrap();
    *db.inner.hooks.query_super_version.lock() = None;
    let pks: Vec<Bytes> = raced.value.into_iter().map(|r| r.pk).collect();
    assert_eq!(pks, keys(N - 3, N), "plan: {}", raced.stats.plan);
    // The next query reads the index, and answers the same.
    let after = ns.top(&all, &top).unwrap();
    assert!(
        after.stats.plan.contains("ranked walk"),
        "{}",
        after.stats.plan
    );
    let pks: Vec<Bytes> = after.value.into_iter().map(|r| r.pk).collect();
    assert_eq!(pks, keys(N - 3, N));
    let page = ns.find(&all, &FindOptions::default()).unwrap();
    assert_eq!(page.value.len() as u64, N);
}
