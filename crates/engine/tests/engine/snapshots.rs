//! Snapshots: reads at a snapshot see exactly the writes made before it, whatever puts,
//! deletes, flushes, compactions and value-log GC happen after; and namespace handles.

use crate::common;

use cerberus_engine::storage::MemStorage;
use cerberus_engine::Readable;
use cerberus_engine::{Db, Error, Layout, Namespace, Options, Snapshot, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const KEYS: u32 = 300;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn options(layout: Layout) -> Options {
    let mut o = common::small_options();
    o.layout = layout;
    // Every sealed segment with a dead byte is collected by `gc_value_log`.
    o.vlog_gc_dead_ratio = 0.0;
    o
}

fn check(snap: &Snapshot, model: &Model, what: &str) {
    for k in 0..KEYS {
        let got = snap.get(&key(k)).unwrap();
        assert_eq!(
            got.as_deref(),
            model.get(&key(k)).map(|v| v.as_slice()),
            "{what}: key {k}"
        );
        assert_eq!(snap.contains(&key(k)).unwrap(), got.is_some(), "{what}");
    }
}

/// Random writes to two namespaces with snapshots taken, checked and released among them,
/// while flushes, compactions and value-log GC run; every live snapshot keeps its state.
fn model_run(layout: Layout, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let db = Db::builder(options(layout))
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let spaces = [db.create_namespace("a").unwrap(), db.default_namespace()];
    let mut models = [Model::new(), Model::new()];
    let mut snaps: Vec<(usize, Snapshot, Model)> = Vec::new();
    let mut version = 0u64;
    for step in 0..6_000 {
        let i = rng.gen_range(0..spaces.len());
        let ns = &spaces[i];
        let k = rng.gen_range(0..KEYS);
        match rng.gen_range(0..1000) {
            0..=549 => {
                version += 1;
                let v = common::value_for(k, version, rng.gen_range(1..200));
                ns.put(&key(k), &v).unwrap();
                models[i].insert(key(k), v);
            }
            550..=699 => {
                ns.delete(&key(k)).unwrap();
                models[i].remove(&key(k));
            }
            700..=759 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.gen_range(1..6) {
                    let k = rng.gen_range(0..KEYS);
                    version += 1;
                    let v = common::value_for(k, version, 40);
                    b.put(key(k), v.clone());
                    models[i].insert(key(k), v);
                }
                ns.write(b).unwrap();
            }
            760..=819 => {
                if snaps.len() < 6 {
                    snaps.push((i, ns.snapshot(), models[i].clone()));
                }
            }
            820..=859 => {
                if !snaps.is_empty() {
                    let (_, snap, model) = snaps.remove(rng.gen_range(0..snaps.len()));
                    check(
                        &snap,
                        &model,
                        &format!("seed {seed} step {step} at release"),
                    );
                }
            }
            860..=899 => db.flush().unwrap(),
            900..=929 => db.compact_all().unwrap(),
            930..=969 => {
                db.gc_value_log().unwrap();
            }
            _ => {
                for (j, (_, snap, model)) in snaps.iter().enumerate() {
                    check(
                        snap,
                        model,
                        &format!("seed {seed} step {step} snapshot {j}"),
                    );
                }
            }
        }
    }
    assert_eq!(db.stats().snapshots, snaps.len());
    for (i, snap, model) in &snaps {
        check(snap, model, &format!("seed {seed} final, namespace {i}"));
    }
    // The newest state, through fresh snapshots and plain reads.
    for (ns, model) in spaces.iter().zip(&models) {
        check(&ns.snapshot(), model, &format!("seed {seed} now"));
        for k in 0..KEYS {
            assert_eq!(
                ns.get(&key(k)).unwrap().as_deref(),
                model.get(&key(k)).map(|v| v.as_slice())
            );
        }
    }
    drop(snaps);
    assert_eq!(db.stats().snapshots, 0);
}

#[test]
fn snapshots_keep_their_state_per_namespace() {
    model_run(Layout::PerNamespace, common::seed(31));
}

#[test]
fn snapshots_keep_their_state_shared() {
    model_run(Layout::Shared, common::seed(32));
}

/// A writer commits generations as batches (every key gets the generation's value, some
/// keys are deleted in some generations) while flushes, compactions and GC run; readers take
/// snapshots and must find exactly one generation in each, however long they hold it.
#[test]
fn concurrent_snapshots_see_whole_batches_while_the_tree_changes() {
    const N: u32 = 64;
    let db = Arc::new(
        Db::builder(options(Layout::PerNamespace))
            .open_storage(Arc::new(MemStorage::new()))
            .unwrap(),
    );
    let ns = db.create_namespace("t").unwrap();
    fn value(k: u32, g: u64) -> Vec<u8> {
        common::value_for(k, g, 20 + (k as usize % 3) * 40)
    }
    // Generation g deletes the keys with k % 5 == g % 5.
    fn deleted(k: u32, g: u64) -> bool {
        u64::from(k % 5) == g % 5 && k != 0
    }
    fn write_gen(ns: &Namespace, g: u64) {
        let mut b = WriteBatch::new();
        for k in 0..N {
            if deleted(k, g) {
                b.delete(key(k));
            } else {
                b.put(key(k), value(k, g));
            }
        }
        ns.write(b).unwrap();
    }
    write_gen(&ns, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    {
        let (ns, stop) = (ns.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let mut g = 2;
            while !stop.load(Ordering::Relaxed) {
                write_gen(&ns, g);
                g += 1;
            }
            g
        }));
    }
    {
        let (db, stop) = (db.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                db.flush().unwrap();
                db.compact_all().unwrap();
                db.gc_value_log().unwrap();
                rounds += 1;
            }
            rounds
        }));
    }
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let ns = ns.clone();
            std::thread::spawn(move || {
                let mut seen = 0u64;
                for _ in 0..40 {
                    let snap = ns.snapshot();
                    let first = snap.get(&key(0)).unwrap().expect("key 0 is never deleted");
                    let g: u64 = std::str::from_utf8(&first)
                        .unwrap()
                        .split(':')
                        .nth(1)
                        .unwrap()
                        .parse()
                        .unwrap();
                    // Read the whole generation twice, the tree changing in between.
                    for pass in 0..2 {
                        for k in 0..N {
                            let want = (!deleted(k, g)).then(|| value(k, g));
                            assert_eq!(
                                snap.get(&key(k)).unwrap().as_deref(),
                                want.as_deref(),
                                "reader {r}: generation {g}, key {k}, pass {pass}"
                            );
                        }
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    seen = seen.max(g);
                }
                seen
            })
        })
        .collect();
    let seen: Vec<u64> = readers.into_iter().map(|t| t.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    let written = threads.remove(0).join().unwrap();
    let rounds = threads.remove(0).join().unwrap();
    assert!(
        seen.iter().any(|&g| g > 2) && rounds > 0,
        "the readers saw generations {seen:?} of {written}, with {rounds} background rounds"
    );
    assert_eq!(db.stats().snapshots, 0);
}

/// GC leaves a segment whose records a snapshot reads, and collects it once the snapshot
/// is gone.
#[test]
fn gc_waits_for_the_snapshots_that_read_a_segment() {
    let db = Db::builder(options(Layout::PerNamespace))
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    let old = |k: u32| common::value_for(k, 1, 500);
    for k in 0..KEYS {
        ns.put(&key(k), &old(k)).unwrap();
    }
    let snap = ns.snapshot();
    let model: Model = (0..KEYS).map(|k| (key(k), old(k))).collect();
    for k in 0..KEYS {
        ns.put(&key(k), &common::value_for(k, 2, 500)).unwrap();
    }
    db.compact_all().unwrap();
    let held = db.gc_value_log().unwrap();
    check(&snap, &model, "after GC with the snapshot held");
    assert_eq!(held.segments_deleted, 0, "{held:?}");
    drop(snap);
    let freed = db.gc_value_log().unwrap();
    assert!(freed.segments_deleted > 0, "{freed:?}");
    for k in 0..KEYS {
        assert_eq!(
            ns.get(&key(k)).unwrap(),
            Some(common::value_for(k, 2, 500).into())
        );
    }
}

#[test]
fn handles_fail_clearly_once_destroyed_or_closed() {
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    assert_eq!(a.name(), "a");
    assert_eq!(db.namespace(a.id()).unwrap().name(), "a");
    a.put(b"k", b"v").unwrap();
    let snap = a.snapshot();
    let synced = a.with_write_options(cerberus_engine::WriteOptions { sync: true });
    db.destroy_namespace(a.id()).unwrap();
    let gone = |r: Result<(), Error>| matches!(r, Err(Error::UnknownNamespace(n)) if n == a.id());
    assert!(gone(a.put(b"k", b"v")));
    assert!(gone(synced.delete(b"k")));
    assert!(gone(a.get(b"k").map(drop)));
    assert!(gone(a.contains(b"k").map(drop)));
    assert!(gone(
        a.iter(cerberus_engine::ReadOptions::default()).map(drop)
    ));
    assert!(gone(a.stats().map(drop)));
    assert!(gone(a.compact_range(None, None)));
    assert!(gone(snap.get(b"k").map(drop)));
    assert!(gone(db.namespace(a.id()).map(drop)));

    let b = db.create_namespace("b").unwrap();
    assert!(b.id() > a.id());
    b.put(b"k", b"v").unwrap();
    db.close().unwrap();
    assert!(matches!(b.get(b"k"), Err(Error::Closed)));
    assert!(matches!(b.put(b"k", b"v"), Err(Error::Closed)));
}

/// Compaction keeps the versions a live snapshot reads, and drops them once it is released.
#[test]
fn compaction_drops_what_a_released_snapshot_kept() {
    let db = Db::builder(options(Layout::PerNamespace))
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for k in 0..KEYS {
        ns.put(&key(k), &common::value_for(k, 1, 100)).unwrap();
    }
    let snap = ns.snapshot();
    for k in 0..KEYS {
        ns.put(&key(k), &common::value_for(k, 2, 100)).unwrap();
    }
    db.compact_all().unwrap();
    // Both versions of every key are still in the tree.
    assert_eq!(ns.stats().unwrap().keys_estimate, 2 * u64::from(KEYS));
    assert_eq!(
        snap.get(&key(7)).unwrap(),
        Some(common::value_for(7, 1, 100).into())
    );
    drop(snap);
    db.compact_all().unwrap();
    assert_eq!(ns.stats().unwrap().keys_estimate, u64::from(KEYS));
    assert_eq!(
        ns.get(&key(7)).unwrap(),
        Some(common::value_for(7, 2, 100).into())
    );
}
