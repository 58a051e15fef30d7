//! Random operations checked step by step against a `BTreeMap`, with flushes, compactions and
//! reopens, on in-memory and real-file storage.

use crate::common;

use cerberus_engine::storage::{MemStorage, PosixStorage, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{Db, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

const STEPS: usize = 100_000;
const KEYS: u32 = 3_000;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

fn run_model(storage: StorageRef, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let opts = common::small_options();
    let mut db = Db::builder(opts.clone())
        .open_storage(storage.clone())
        .unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut version = 0u64;
    let (mut flushes, mut compactions) = (0, 0);
    let mut value = |rng: &mut SmallRng, k: u32| {
        version += 1;
        let len = match rng.gen_range(0..100) {
            0 => rng.gen_range(2_000..20_000),
            1..=20 => rng.gen_range(0..16),
            _ => rng.gen_range(16..300),
        };
        common::value_for(k, version, len)
    };
    for step in 0..STEPS {
        let k = rng.gen_range(0..KEYS);
        match rng.gen_range(0..1000) {
            0..=399 => {
                let v = value(&mut rng, k);
                db.default_namespace().put(&key(k), &v).unwrap();
                model.insert(key(k), v);
            }
            400..=499 => {
                db.default_namespace().delete(&key(k)).unwrap();
                model.remove(&key(k));
            }
            500..=939 => {
                let got = db.default_namespace().get(&key(k)).unwrap();
                assert_eq!(
                    got.as_deref(),
                    model.get(&key(k)).map(|v| v.as_slice()),
                    "seed {seed} step {step}: get {k}"
                );
            }
            940..=989 => {
                let mut batch = WriteBatch::new();
                let mut staged = Vec::new();
                for _ in 0..rng.gen_range(1..8) {
                    let k = rng.gen_range(0..KEYS);
                    if rng.gen_bool(0.7) {
                        let v = value(&mut rng, k);
                        batch.put(key(k), v.clone());
                        staged.push((key(k), Some(v)));
                    } else {
                        batch.delete(key(k));
                        staged.push((key(k), None));
                    }
                }
                db.default_namespace().write(batch).unwrap();
                for (k, v) in staged {
                    match v {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            990..=994 => db.flush().unwrap(),
            995 => db.compact_all().unwrap(),
            996 => {
                db.gc_value_log().unwrap();
            }
            _ => {
                let st = db.stats();
                flushes += st.flushes;
                compactions += st.compactions;
                db.close().unwrap();
                drop(db);
                db = Db::builder(opts.clone())
                    .open_storage(storage.clone())
                    .unwrap();
            }
        }
    }
    // Everything, once more, after a final reopen and a full compaction.
    let st = db.stats();
    flushes += st.flushes;
    compactions += st.compactions;
    assert!(
        flushes > 100 && compactions > 50,
        "{flushes} flushes, {compactions} compactions"
    );
    db.close().unwrap();
    drop(db);
    let db = Db::builder(opts).open_storage(storage).unwrap();
    db.compact_all().unwrap();
    for k in 0..KEYS {
        assert_eq!(
            db.default_namespace().get(&key(k)).unwrap().as_deref(),
            model.get(&key(k)).map(|v| v.as_slice()),
            "seed {seed} final check of {k}"
        );
    }
}

#[test]
fn model_mem() {
    run_model(Arc::new(MemStorage::new()), common::seed(1));
}

#[test]
fn model_posix() {
    let dir = tempfile::tempdir().unwrap();
    run_model(
        Arc::new(PosixStorage::new(dir.path()).unwrap()),
        common::seed(2),
    );
}
