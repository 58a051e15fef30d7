//! `Readable::get_many` against a `BTreeMap` and against `get`: random puts, deletes and
//! overwrites spread over memtables, L0, runs and levels; batches with repeated and absent
//! keys in any order; through namespaces and snapshots, on memory and the NAND model.

use crate::common;

use cerberus_engine::storage::{MemStorage, NandConfig, NandStorage, StorageRef};
use cerberus_engine::{Db, ErrorKind, Namespace, Readable, MAX_GET_MANY_KEYS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

const KEYS: u32 = 600;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// A batch of random keys (some asked twice, some never written), in random order.
fn batch(rng: &mut SmallRng) -> Vec<Vec<u8>> {
    let n = rng.gen_range(0..40);
    let mut keys: Vec<Vec<u8>> = (0..n).map(|_| key(rng.gen_range(0..KEYS + 50))).collect();
    if n > 2 && rng.gen_bool(0.3) {
        keys.push(keys[0].clone());
    }
    keys
}

fn check(ns: &impl Readable, model: &BTreeMap<Vec<u8>, Vec<u8>>, keys: &[Vec<u8>], what: &str) {
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let got = ns.get_many(&refs).unwrap();
    assert_eq!(got.len(), keys.len(), "{what}");
    for (k, v) in keys.iter().zip(&got) {
        assert_eq!(
            v.as_deref(),
            model.get(k).map(|v| v.as_slice()),
            "{what}: {k:?}"
        );
        assert_eq!(v, &ns.get(k).unwrap(), "{what}: get_many and get of {k:?}");
    }
}

fn run(storage: StorageRef, seed: u64, steps: usize) -> cerberus_engine::NamespaceStats {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut opts = common::small_options();
    opts.run_compaction_trigger = 3;
    let db = Db::builder(opts).open_storage(storage).unwrap();
    let ns: Namespace = db.create_namespace("many").unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    // Snapshots kept a while, with the model as they saw it.
    let mut snaps = Vec::new();
    for step in 0..steps {
        let k = rng.gen_range(0..KEYS);
        match rng.gen_range(0..100) {
            0..=54 => {
                let len = match rng.gen_range(0..10) {
                    0 => rng.gen_range(0..8), // inline in the tables
                    _ => rng.gen_range(20..400),
                };
                let v = common::value_for(k, step as u64, len);
                ns.put(&key(k), &v).unwrap();
                model.insert(key(k), v);
            }
            55..=69 => {
                ns.delete(&key(k)).unwrap();
                model.remove(&key(k));
            }
            70..=89 => check(&ns, &model, &batch(&mut rng), &format!("step {step}")),
            90..=93 => {
                if snaps.len() > 3 {
                    snaps.remove(0);
                }
                snaps.push((ns.snapshot(), model.clone()));
            }
            94..=96 => {
                let i = rng.gen_range(0..snaps.len().max(1));
                if let Some((s, m)) = snaps.get(i) {
                    check(s, m, &batch(&mut rng), &format!("step {step}, snapshot"));
                }
            }
            97 => db.flush().unwrap(),
            98 => db.compact_range(None, None).unwrap(),
            _ => {}
        }
    }
    let all: Vec<Vec<u8>> = (0..KEYS + 50).map(key).collect();
    check(&ns, &model, &all, "all keys");
    db.flush().unwrap();
    check(&ns, &model, &all, "all keys after a flush");
    for (s, m) in &snaps {
        check(s, m, &all, "all keys at a kept snapshot");
    }
    ns.stats().unwrap()
}

#[test]
fn get_many_agrees_with_the_model_and_get() {
    let st = run(Arc::new(MemStorage::new()), common::seed(33), 6_000);
    // The batches were answered from every place a key can be.
    assert!(st.gets_memtable > 0, "{st:?}");
    assert!(st.gets_runs > 0, "{st:?}");
    assert!(st.gets_by_level[0] > 0, "{st:?}");
    assert!(st.gets_by_level.iter().skip(1).any(|&n| n > 0), "{st:?}");
}

#[test]
fn get_many_on_the_nand_model_reads_values_together_and_agrees() {
    let cfg = NandConfig {
        t_read: std::time::Duration::from_micros(5),
        t_prog: std::time::Duration::from_micros(5),
        ..NandConfig::default()
    };
    let storage: StorageRef = Arc::new(NandStorage::new(Arc::new(MemStorage::new()), cfg));
    run(storage, common::seed(34), 2_000);
}

#[test]
fn get_many_refuses_more_keys_than_its_bound() {
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.default_namespace();
    ns.put(b"k", b"v").unwrap();
    let k: &[u8] = b"k";
    let at_bound = vec![k; MAX_GET_MANY_KEYS];
    assert_eq!(ns.get_many(&at_bound).unwrap().len(), MAX_GET_MANY_KEYS);
    let over = vec![k; MAX_GET_MANY_KEYS + 1];
    let err = ns.get_many(&over).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(ns.get_many(&[]).unwrap().is_empty());
}
