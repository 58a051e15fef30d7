use crate::storage::{MemStorage, StorageRef};
use crate::{Aggregate, Db, Filter, IndexKind, Namespace, Options, Readable, TopOptions};
use serde_json::json;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

thread_local! {
    /// Walks cut on this thread.
    pub(super) static CUTS: Cell<u64> = const { Cell::new(0) };
}

/// A filter and which values of `a` meet it.
type Case = (serde_json::Value, fn(i64) -> bool);

/// Record number -> (`a`, `b`).
type Model = BTreeMap<u32, (i64, i64)>;

fn expected(model: &Model, keep: impl Fn(i64) -> bool) -> u64 {
    model.values().filter(|(a, _)| keep(*a)).count() as u64
}

fn cases() -> [Case; 4] {
    [
        (json!({"a": 1}), |a| a == 1),
        (json!({"a": {"$gte": 1}}), |a| a >= 1),
        (json!({"a": {"$lt": 3}}), |a| a < 3),
        (json!({"a": {"$in": [0, 2, 7]}}), |a| {
            a == 0 || a == 2 || a == 7
        }),
    ]
}

/// A database of small tables (so a range spans many blocks), and for each index kind a
/// namespace with 6,000 records indexed on `a` (`b` not indexed) in tables, a snapshot of
/// them, then newer versions and deletes in the memtable: the model now and at the snapshot.
fn each_kind(mut check: impl FnMut(IndexKind, &Namespace, &Model, &dyn Readable, &Model)) {
    let o = Options {
        block_size: 256,
        memtable_bytes: 64 << 10,
        target_table_bytes: 16 << 10,
        ..Options::default()
    };
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(o).open_storage(storage).unwrap();
    for kind in [IndexKind::Classic, IndexKind::Vas] {
        let ns = db.create_namespace(&format!("c-{kind:?}")).unwrap();
        ns.create_index("a", kind).unwrap();
        let mut model = BTreeMap::new();
        let put = |model: &mut Model, i: u32, a: i64, b: i64| {
            let v = json!({"a": a, "b": b, "pad": "p".repeat((i % 17) as usize)});
            ns.put(
                format!("k{i:06}").as_bytes(),
                &serde_json::to_vec(&v).unwrap(),
            )
            .unwrap();
            model.insert(i, (a, b));
        };
        for i in 0..6_000u32 {
            put(&mut model, i, i64::from(i % 4), i64::from(i * 7919 % 6007));
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let before = ns.snapshot();
        let old = model.clone();
        // Newer versions in the memtable: values moved, records deleted.
        for i in (0..6_000u32).step_by(7) {
            put(&mut model, i, 9 - i64::from(i % 4), -i64::from(i));
        }
        for i in (3..6_000u32).step_by(11) {
            ns.delete(format!("k{i:06}").as_bytes()).unwrap();
            model.remove(&i);
        }
        check(kind, &ns, &model, &before, &old);
    }
}

#[test]
fn counts_cut_in_two_equal_the_records_at_every_snapshot() {
    each_kind(|kind, ns, model, before, old| {
        let cuts = CUTS.with(Cell::get);
        for (f, keep) in cases() {
            let filter = Filter::parse(&f).unwrap();
            let now = ns.aggregate(&filter, &Aggregate::Count).unwrap().value;
            assert_eq!(now, json!(expected(model, keep)), "{f} now ({kind:?})");
            let then = before.aggregate(&filter, &Aggregate::Count).unwrap().value;
            assert_eq!(
                then,
                json!(expected(old, keep)),
                "{f} at the snapshot ({kind:?})"
            );
        }
        assert!(CUTS.with(Cell::get) > cuts, "no count was cut ({kind:?})");
    });
}

/// Aggregates of an attribute no index holds (each record read) and top-K by it, walked in
/// two pieces, equal the model's, now and at the snapshot.
#[test]
fn aggregates_and_top_k_cut_in_two_equal_the_records() {
    each_kind(|kind, ns, model, before, old| {
        let cuts = CUTS.with(Cell::get);
        for (f, keep) in cases() {
            let filter = Filter::parse(&f).unwrap();
            for (db, model, when) in [(ns as &dyn Readable, model, "now"), (before, old, "then")] {
                let bs: Vec<i64> = model
                    .values()
                    .filter(|(a, _)| keep(*a))
                    .map(|(_, b)| *b)
                    .collect();
                let agg = |op: &str| {
                    let op = Aggregate::parse(op, Some("b")).unwrap();
                    db.aggregate(&filter, &op).unwrap().value
                };
                let at = format!("{f} {when} ({kind:?})");
                assert_eq!(agg("count"), json!(bs.len()), "{at}");
                assert_eq!(agg("sum"), json!(bs.iter().sum::<i64>()), "{at}");
                assert_eq!(agg("min"), json!(bs.iter().min()), "{at}");
                assert_eq!(agg("max"), json!(bs.iter().max()), "{at}");
                let opts = TopOptions {
                    by: "b".into(),
                    desc: true,
                    k: 25,
                    projection: None,
                };
                let top: Vec<i64> = db
                    .top(&filter, &opts)
                    .unwrap()
                    .value
                    .iter()
                    .map(|r| r.key.as_i64().unwrap())
                    .collect();
                let mut want = bs.clone();
                want.sort_unstable_by(|x, y| y.cmp(x));
                want.truncate(25);
                assert_eq!(top, want, "{at}");
            }
        }
        assert!(CUTS.with(Cell::get) > cuts, "no walk was cut ({kind:?})");
    });
}
