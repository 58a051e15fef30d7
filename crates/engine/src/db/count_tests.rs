use crate::storage::{MemStorage, StorageRef};
use crate::{Aggregate, Db, Filter, IndexKind, Options, Readable};
use serde_json::json;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

thread_local! {
    /// Counts cut on this thread.
    pub(super) static CUTS: Cell<u64> = const { Cell::new(0) };
}

/// A filter and which values of `a` meet it.
type Case = (serde_json::Value, fn(i64) -> bool);

fn expected(model: &BTreeMap<u32, i64>, keep: impl Fn(i64) -> bool) -> u64 {
    model.values().filter(|a| keep(**a)).count() as u64
}

#[test]
fn counts_cut_in_two_equal_the_records_at_every_snapshot() {
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
        let put = |model: &mut BTreeMap<u32, i64>, i: u32, a: i64| {
            let v = json!({"a": a, "pad": "p".repeat((i % 17) as usize)});
            ns.put(
                format!("k{i:06}").as_bytes(),
                &serde_json::to_vec(&v).unwrap(),
            )
            .unwrap();
            model.insert(i, a);
        };
        for i in 0..6_000u32 {
            put(&mut model, i, i64::from(i % 4));
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let before = ns.snapshot();
        let old = model.clone();
        // Newer versions in the memtable: values moved, records deleted.
        for i in (0..6_000u32).step_by(7) {
            put(&mut model, i, 9 - i64::from(i % 4));
        }
        for i in (3..6_000u32).step_by(11) {
            ns.delete(format!("k{i:06}").as_bytes()).unwrap();
            model.remove(&i);
        }
        let filters: [Case; 4] = [
            (json!({"a": 1}), |a| a == 1),
            (json!({"a": {"$gte": 1}}), |a| a >= 1),
            (json!({"a": {"$lt": 3}}), |a| a < 3),
            (json!({"a": {"$in": [0, 2, 7]}}), |a| {
                a == 0 || a == 2 || a == 7
            }),
        ];
        let cuts = CUTS.with(Cell::get);
        for (f, keep) in filters {
            let filter = Filter::parse(&f).unwrap();
            let now = ns.aggregate(&filter, &Aggregate::Count).unwrap().value;
            assert_eq!(now, json!(expected(&model, keep)), "{f} now ({kind:?})");
            let then = before.aggregate(&filter, &Aggregate::Count).unwrap().value;
            assert_eq!(
                then,
                json!(expected(&old, keep)),
                "{f} at the snapshot ({kind:?})"
            );
        }
        assert!(CUTS.with(Cell::get) > cuts, "no count was cut ({kind:?})");
    }
}
