//! A checkpoint cut short by a power cut at each of its writes in turn: the target then holds
//! nothing, or a directory `Db::open` refuses (the checkpoint's marker is still there); once
//! the checkpoint returns, the target opens to the source's state.

use super::options;
use cerberus_engine::storage::{FaultStorage, MemStorage, Storage, StorageRef};
use cerberus_engine::{Db, Error, IndexKind, Readable, WriteBatch, CHECKPOINT_MARKER};
use std::collections::BTreeMap;
use std::sync::Arc;

fn contents(db: &Db, nsid: u32) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.namespace(nsid)
        .unwrap()
        .iter(Default::default())
        .unwrap()
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

#[test]
fn a_checkpoint_interrupted_at_any_write_is_refused_or_absent() {
    let db = Db::builder(options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("app").unwrap();
    ns.create_index("n", IndexKind::Classic).unwrap();
    for i in 0..300u32 {
        let v = format!(r#"{{"n": {}, "pad": "{}"}}"#, i % 7, "x".repeat(30));
        if i.is_multiple_of(50) {
            let mut b = WriteBatch::new();
            b.put(format!("k{i:04}"), v.clone())
                .put(format!("b{i:04}"), v);
            ns.write(b).unwrap();
        } else {
            ns.put(format!("k{i:04}").as_bytes(), v.as_bytes()).unwrap();
        }
    }
    let want = contents(&db, ns.id());
    let (mut refused, mut empty) = (0, 0);
    for n in 0.. {
        let target = FaultStorage::new();
        target.crash_after_ops(Some(n));
        let result = db.checkpoint_to(&(Arc::new(target.clone()) as StorageRef));
        if !target.is_crashed() {
            let info = result.unwrap();
            target.crash_after_ops(None);
            assert!(info.files_copied > 0, "{info:?}");
            let copy = Db::builder(options())
                .open_storage(Arc::new(target))
                .unwrap();
            assert_eq!(contents(&copy, ns.id()), want);
            assert_eq!(
                copy.namespace(ns.id())
                    .unwrap()
                    .list_indexes()
                    .unwrap()
                    .len(),
                1
            );
            break;
        }
        assert!(
            result.is_err(),
            "a checkpoint that crashed at op {n} returned Ok"
        );
        target.restart();
        if target.list().unwrap().is_empty() {
            empty += 1;
            continue;
        }
        match Db::builder(options()).open_storage(Arc::new(target)) {
            Err(Error::Corruption { file, .. }) if file == CHECKPOINT_MARKER => refused += 1,
            Err(e) => panic!("a checkpoint cut at op {n}: unexpected error {e}"),
            Ok(_) => panic!("a checkpoint cut at op {n} opened"),
        }
    }
    assert!(
        refused > 10 && empty > 0,
        "refused {refused}, empty {empty}"
    );
    // The source never noticed.
    ns.put(b"after", b"1").unwrap();
    assert_eq!(ns.get(b"after").unwrap().as_deref(), Some(&b"1"[..]));
}
