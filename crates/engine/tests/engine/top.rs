//! Top-K through an index on the attribute ranked by: walked from the end the ranking starts
//! at, it reads about as many records as it takes to find the answer, and gives up for the
//! filter's own plan when the filter is rare among the top; answers always equal a reference.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Filter, IndexKind, Namespace, Ranked, TopOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

const N: u32 = 5_000;

fn open() -> Db {
    let storage: StorageRef = Arc::new(MemStorage::new());
    Db::builder(common::small_options())
        .open_storage(storage)
        .unwrap()
}

fn pk(i: u32) -> Vec<u8> {
    format!("f{i:06}").into_bytes()
}

/// Records `0..N`: `delay` a permutation of `0..N` in steps of 7 (ties at every tenth, to
/// test the order among equals), `origin` one of three, and `RARE` for the 1,500 records
/// with the smallest delays.
fn record(i: u32) -> Value {
    let delay = (i * 7) % N / 10 * 10;
    let origin = match (delay < 1_500, i % 3) {
        (true, _) => "RARE",
        (false, 0) => "LGA",
        (false, 1) => "JFK",
        (false, _) => "EWR",
    };
    json!({"id": i, "origin": origin, "delay": delay, "pad": "x".repeat(40)})
}

fn load(ns: &Namespace, db: &Db) -> BTreeMap<Vec<u8>, Value> {
    let mut model = BTreeMap::new();
    for i in 0..N {
        let v = record(i);
        ns.put(&pk(i), &serde_json::to_vec(&v).unwrap()).unwrap();
        model.insert(pk(i), v);
        // Part in tables (several, many blocks each), the rest in the memtable.
        if i % 1_500 == 1_499 {
            db.flush().unwrap();
        }
    }
    model
}

/// A namespace with indexes of `kind` on `origin` and `delay`.
fn two_indexes(db: &Db, kind: IndexKind) -> Namespace {
    let ns = db.create_namespace("flights").unwrap();
    ns.create_index("origin", kind).unwrap();
    ns.create_index("delay", kind).unwrap();
    ns
}

/// A database of the records above with indexes of `kind` on `origin` and `delay`.
fn indexed(kind: IndexKind) -> (Db, Namespace, BTreeMap<Vec<u8>, Value>) {
    let db = open();
    let ns = two_indexes(&db, kind);
    let model = load(&ns, &db);
    (db, ns, model)
}

/// The reference: every record meeting `origin` (all with `None`), ranked by `delay`.
fn reference(
    model: &BTreeMap<Vec<u8>, Value>,
    origin: Option<&str>,
    desc: bool,
    k: usize,
) -> Vec<(Vec<u8>, i64)> {
    let mut all: Vec<(Vec<u8>, i64)> = model
        .iter()
        .filter(|(_, v)| origin.is_none_or(|o| v["origin"] == o))
        .map(|(k, v)| (k.clone(), v["delay"].as_i64().unwrap()))
        .collect();
    all.sort_by(|a, b| {
        let by = if desc { b.1.cmp(&a.1) } else { a.1.cmp(&b.1) };
        by.then(a.0.cmp(&b.0))
    });
    all.truncate(k);
    all
}

fn got(ranked: &[Ranked]) -> Vec<(Vec<u8>, i64)> {
    ranked
        .iter()
        .map(|r| (r.pk.to_vec(), r.key.as_i64().unwrap()))
        .collect()
}

fn top(r: &dyn Readable, origin: Option<&str>, desc: bool, k: usize) -> (Vec<Ranked>, String, u64) {
    let filter = match origin {
        Some(o) => Filter::parse(&json!({ "origin": o })).unwrap(),
        None => Filter::default(),
    };
    let opts = TopOptions {
        by: "delay".into(),
        desc,
        k,
        projection: None,
    };
    let res = r.top(&filter, &opts).unwrap();
    (res.value, res.stats.plan, res.stats.value_reads)
}

#[test]
fn a_top_k_through_the_ranked_index_reads_few_records() {
    for kind in [IndexKind::Vas, IndexKind::Classic] {
        let (_db, ns, model) = indexed(kind);
        // Largest first, each origin but RARE is one record in three at the top; smallest
        // first, RARE holds the bottom 1,500; without a filter the index decides.
        let cases = [
            (Some("LGA"), true, 10),
            (Some("EWR"), true, 1),
            (None, true, 25),
            (Some("RARE"), false, 10),
            (None, false, 25),
        ];
        for (origin, desc, k) in cases {
            let (ranked, plan, reads) = top(&ns, origin, desc, k);
            let what = format!("{kind:?} {origin:?} desc {desc}");
            assert_eq!(got(&ranked), reference(&model, origin, desc, k), "{what}");
            assert!(plan.starts_with("ranked walk"), "{what}: {plan}");
            // About k x 3 records, whatever N is; the filter's plan reads the 1,169 records
            // of LGA (or 1,500 of RARE).
            assert!(reads <= 200, "{what}: {reads} reads");
            if origin.is_none() {
                assert_eq!(reads, 0, "{what}");
            }
        }
    }
}

/// Largest first, a piece of the index is walked from its top and a record read only for an
/// entry that can still take a place: about the entries above the answer's worst (those
/// meeting the filter one in three here, its key's ties), not every entry of the piece (a
/// walk forward through it read all of a table block's, some 100 for k = 10).
#[test]
fn a_top_k_largest_first_reads_no_record_below_its_answer() {
    for kind in [IndexKind::Vas, IndexKind::Classic] {
        let (db, ns, model) = indexed(kind);
        db.flush().unwrap();
        for (origin, k) in [("LGA", 10), ("JFK", 1), ("EWR", 40)] {
            let (ranked, _, reads) = top(&ns, Some(origin), true, k);
            let want = reference(&model, Some(origin), true, k);
            assert_eq!(got(&ranked), want, "{kind:?} {origin}");
            // Every record whose delay is at least the answer's worst: 10 a delay value.
            let worst = want.last().unwrap().1;
            let above = model
                .values()
                .filter(|v| v["delay"].as_i64().unwrap() >= worst)
                .count() as u64;
            assert!(
                reads <= above,
                "{kind:?} {origin} k {k}: {reads} reads, {above} above"
            );
        }
    }
}

#[test]
fn a_ranked_walk_gives_up_when_the_filter_is_rare_among_the_top() {
    let db = open();
    let ns = two_indexes(&db, IndexKind::Vas);
    let model = load(&ns, &db);
    // RARE's 1,500 records have the smallest delays: from the top, 3,500 others come
    // first; from the bottom, LGA's records come after those 1,500.
    for (origin, desc) in [("RARE", true), ("LGA", false)] {
        let held = model.values().filter(|v| v["origin"] == origin).count() as u64;
        let (ranked, plan, reads) = top(&ns, Some(origin), desc, 10);
        assert_eq!(got(&ranked), reference(&model, Some(origin), desc, 10));
        assert!(plan.contains("gave up"), "{origin}: {plan}");
        // The budget (1,024 records), then the records the filter's index holds.
        assert!(reads <= 1_024 + held, "{origin}: {reads} reads");
    }
}

/// A filter whose plan reads fewer records than the walk's budget (LGA's 1,167 against
/// `32 k`): the first try's matches (one in three) say the walk needs about `3 k` records,
/// so it walks again rather than reading every LGA record.
#[test]
fn a_ranked_walk_beside_a_smaller_plan_goes_on_when_its_first_try_matched_densely() {
    let (_db, ns, model) = indexed(IndexKind::Vas);
    let k = 150;
    let (ranked, plan, reads) = top(&ns, Some("LGA"), true, k);
    assert_eq!(got(&ranked), reference(&model, Some("LGA"), true, k));
    assert!(plan.starts_with("ranked walk"), "{plan}");
    // The first try (256), then about 3 k from the top again; the plan read 256 + 1,167.
    assert!(reads <= 256 + 4 * k as u64, "{reads} reads");
}

/// Matches dense in the first try and none after it until the bottom: the walk goes on with
/// at most the plan's records, gives up, and the plan runs: at most the plan twice more
/// than the first try.
#[test]
fn a_ranked_walk_whose_matches_thin_out_costs_at_most_the_plan_twice() {
    let db = open();
    let ns = two_indexes(&db, IndexKind::Vas);
    let mut model = BTreeMap::new();
    // Delays 0..3,000: X every other one of the top 256, and the bottom 872.
    for i in 0..3_000u32 {
        let x = (i >= 3_000 - 256 && i % 2 == 0) || i < 872;
        let v = json!({"origin": if x { "X" } else { "Y" }, "delay": i, "pad": "x".repeat(40)});
        ns.put(&pk(i), &serde_json::to_vec(&v).unwrap()).unwrap();
        model.insert(pk(i), v);
    }
    db.flush().unwrap();
    let held = model.values().filter(|v| v["origin"] == "X").count() as u64;
    assert_eq!(held, 1_000);
    let (ranked, plan, reads) = top(&ns, Some("X"), true, 150);
    assert_eq!(got(&ranked), reference(&model, Some("X"), true, 150));
    assert!(plan.contains("gave up"), "{plan}");
    assert!(reads <= 256 + 2 * held, "{reads} reads");
}

#[test]
fn a_ranked_walk_sees_unflushed_writes_and_keeps_to_its_snapshot() {
    let db = open();
    let ns = two_indexes(&db, IndexKind::Vas);
    let mut model = load(&ns, &db);
    db.flush().unwrap();
    let before = model.clone();
    let snap = ns.snapshot();
    // Unflushed: the top LGA records move to the bottom or leave LGA, some are deleted,
    // and new records take the top.
    for (n, (pk, _)) in reference(&model, Some("LGA"), true, 30)
        .into_iter()
        .enumerate()
    {
        match n % 3 {
            0 => {
                ns.delete(&pk).unwrap();
                model.remove(&pk);
            }
            1 => {
                let mut v = model[&pk].clone();
                v["delay"] = json!(-1);
                ns.put(&pk, &serde_json::to_vec(&v).unwrap()).unwrap();
                model.insert(pk, v);
            }
            _ => {
                let mut v = model[&pk].clone();
                v["origin"] = json!("JFK");
                ns.put(&pk, &serde_json::to_vec(&v).unwrap()).unwrap();
                model.insert(pk, v);
            }
        }
    }
    for i in 0..5 {
        let v = json!({"id": N + i, "origin": "LGA", "delay": 100_000 + i});
        ns.put(&pk(N + i), &serde_json::to_vec(&v).unwrap())
            .unwrap();
        model.insert(pk(N + i), v);
    }
    for desc in [true, false] {
        let (ranked, plan, _) = top(&ns, Some("LGA"), desc, 12);
        assert_eq!(
            got(&ranked),
            reference(&model, Some("LGA"), desc, 12),
            "{plan}"
        );
        let (ranked, plan, _) = top(&snap, Some("LGA"), desc, 12);
        assert_eq!(
            got(&ranked),
            reference(&before, Some("LGA"), desc, 12),
            "{plan}"
        );
    }
    db.flush().unwrap();
    let (ranked, _, _) = top(&ns, Some("LGA"), true, 12);
    assert_eq!(got(&ranked), reference(&model, Some("LGA"), true, 12));
}

/// With a condition on the attribute ranked by, the walk starts at the end of that range,
/// not at the end of the index: it reads about as many records as without one.
#[test]
fn a_ranked_walk_within_a_range_of_its_attribute_reads_few_records() {
    // Tables of many blocks: a walk asks for the block ends nearest where it starts.
    let mut o = common::small_options();
    o.memtable_bytes = 256 << 10;
    o.target_table_bytes = 256 << 10;
    o.level1_bytes = 1 << 20;
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(o).open_storage(storage).unwrap();
    let ns = two_indexes(&db, IndexKind::Vas);
    let model = load(&ns, &db);
    for (range, desc, keep) in [
        (
            json!({"$lt": 3_000}),
            true,
            (|d| d < 3_000) as fn(i64) -> bool,
        ),
        (json!({"$gte": 2_000}), false, |d| d >= 2_000),
    ] {
        let filter = Filter::parse(&json!({"origin": "LGA", "delay": range})).unwrap();
        let opts = TopOptions {
            by: "delay".into(),
            desc,
            k: 10,
            projection: None,
        };
        let res = ns.top(&filter, &opts).unwrap();
        let inside: BTreeMap<Vec<u8>, Value> = model
            .iter()
            .filter(|(_, v)| keep(v["delay"].as_i64().unwrap()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let what = format!("{range} desc {desc}");
        assert_eq!(
            got(&res.value),
            reference(&inside, Some("LGA"), desc, 10),
            "{what}"
        );
        assert!(
            res.stats.plan.starts_with("ranked walk"),
            "{what}: {}",
            res.stats.plan
        );
        // About k x 3 records; the whole range holds about 1,000 of LGA's.
        assert!(
            res.stats.value_reads <= 200,
            "{what}: {} reads",
            res.stats.value_reads
        );
    }
}
