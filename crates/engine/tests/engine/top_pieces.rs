//! The pieces of a ranked walk largest first: each holds about a block of entries of each
//! table, however the tables' keys are spread, and a walk whose record budget is spent stops
//! there, reading neither more of the index nor values ahead. In a memtable, the keys it
//! samples cut the pieces.

use crate::common;

use cerberus_engine::storage::{MemStorage, NandConfig, NandStorage, StorageRef};
use cerberus_engine::{Db, Filter, IndexKind, Namespace, Options, Readable, TopOptions};
use serde_json::json;
use std::sync::Arc;

/// Options keeping each flush one table of many small blocks, never compacted.
fn options() -> Options {
    let mut o = common::small_options();
    o.memtable_bytes = 64 << 20;
    o.target_table_bytes = 256 << 20;
    o.vlog_segment_bytes = 64 << 20;
    o.l0_compaction_trigger = 100;
    o.l0_slowdown_trigger = 200;
    o.l0_stop_trigger = 300;
    o
}

/// Two tables over the same values of `v`: `sparse` records spread thin over 0..1,000,000
/// (each table gives the block ends nearest its top, so this one's reach far down), then
/// 40,000 dense ones, the first `rare` of them (the smallest values) tagged "rare".
fn load(db: &Db, ns: &Namespace, kind: IndexKind, sparse: u32, rare: u32) {
    ns.create_index("v", kind).unwrap();
    ns.create_index("tag", kind).unwrap();
    let long = "x".repeat(100);
    for i in 0..sparse {
        let v = json!({ "v": i * (1_000_000 / sparse), "tag": "common" });
        let key = format!("b{i:06}{long}");
        ns.put(key.as_bytes(), v.to_string().as_bytes()).unwrap();
    }
    db.flush().unwrap();
    for i in 0..40_000u32 {
        let tag = if i < rare { "rare" } else { "common" };
        let v = json!({ "v": i * 25 + 1, "tag": tag });
        let key = format!("a{i:06}{long}");
        ns.put(key.as_bytes(), v.to_string().as_bytes()).unwrap();
    }
    db.flush().unwrap();
}

fn top(ns: &Namespace, filter: serde_json::Value, k: usize) -> cerberus_engine::QueryStats {
    let opts = TopOptions {
        by: "v".into(),
        desc: true,
        k,
        projection: None,
    };
    let res = ns.top(&Filter::parse(&filter).unwrap(), &opts).unwrap();
    assert_eq!(res.value.len(), k);
    res.stats
}

#[test]
fn a_piece_holds_about_a_block_of_each_table() {
    let db = Db::builder(options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    load(&db, &ns, IndexKind::Classic, 400, 0);
    let stats = top(&ns, json!({}), 300);
    assert!(stats.plan.starts_with("ranked walk"), "{}", stats.plan);
    // The answer is the top 300 of the dense table and a few sparse ones; pieces of up to
    // 64 blocks of each table (a block holds a few dozen entries here) around it.
    assert!(stats.index_entries <= 4_000, "{stats:?}");
}

#[test]
fn a_walk_that_gives_up_reads_no_more_of_the_index_than_its_budget_needs() {
    let db = Db::builder(options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    load(&db, &ns, IndexKind::Classic, 64, 5_000);
    let stats = top(&ns, json!({"tag": "rare"}), 10);
    // The ranked walk reads its budget of records near the top, gives up, and the plan
    // through the tag index reads the 5,000 rare ones.
    assert!(stats.plan.contains("gave up"), "{}", stats.plan);
    assert!(stats.index_entries < 15_000, "{stats:?}");
}

#[test]
fn no_value_is_read_ahead_once_the_budget_is_spent() {
    let cfg = NandConfig {
        t_read: std::time::Duration::from_micros(1),
        t_prog: std::time::Duration::from_micros(1),
        ..NandConfig::default()
    };
    let storage: StorageRef = Arc::new(NandStorage::new(Arc::new(MemStorage::new()), cfg));
    let mut o = options();
    o.cache_bytes = 0;
    let db = Db::builder(o).open_storage(storage).unwrap();
    let ns = db.create_namespace("t").unwrap();
    load(&db, &ns, IndexKind::Vas, 64, 5_000);
    let stats = top(&ns, json!({"tag": "rare"}), 10);
    assert!(stats.plan.contains("gave up"), "{}", stats.plan);
    // Values read from the device (reads ahead included) against values the query used:
    // at most one batch read ahead (16) unused, where a walk ends inside it. Reading ahead
    // past the budget read 250 more here.
    let value_ios = stats.reads[3];
    assert!(
        value_ios <= stats.value_reads + 16,
        "{value_ios} reads: {stats:?}"
    );
}

/// 40,000 records in the memtable, none in a table: its sampled keys (about one in 64) cut the
/// walk, where the whole range was one piece walked forward, every record read.
#[test]
fn a_walk_from_the_top_of_the_memtable_gathers_a_few_samples_of_it() {
    let db = Db::builder(options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for kind in [IndexKind::Classic, IndexKind::Vas] {
        ns.create_index("v", kind).unwrap();
        for i in 0..40_000u32 {
            let v = json!({ "v": i, "w": i % 3 });
            ns.put(format!("k{i:06}").as_bytes(), v.to_string().as_bytes())
                .unwrap();
        }
        for (k, filter) in [(5, json!({})), (50, json!({"w": 1}))] {
            let stats = top(&ns, filter.clone(), k);
            assert!(stats.plan.starts_with("ranked walk"), "{}", stats.plan);
            // About 3 k records (one in 3 meets the filter), in the first pieces: a few
            // hundred entries, where the forward walk read 40,000 records.
            assert!(stats.value_reads <= 3 * k as u64 + 3, "{kind:?} {stats:?}");
            assert!(stats.index_entries <= 2_000, "{kind:?} {stats:?}");
            // Under a work limit the same walk: it was one piece forward, read whole.
            let limited = ns.with_query_work_limit(4 * 17 * k as u64 + 1_000);
            let opts = TopOptions {
                by: "v".into(),
                desc: true,
                k,
                projection: None,
            };
            let f = Filter::parse(&filter).unwrap();
            assert_eq!(
                limited.top(&f, &opts).unwrap().value,
                ns.top(&f, &opts).unwrap().value
            );
        }
        ns.drop_index("v").unwrap();
    }
}
