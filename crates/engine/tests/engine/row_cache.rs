//! The row cache (`Options::row_cache_bytes`): a model test against a `BTreeMap` with a cache
//! small enough to evict, readers racing writers on hot keys, each write path's invalidation,
//! snapshots kept off it, and its counters.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{Db, Namespace, Options, Readable, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn opts(row_cache_bytes: u64) -> Options {
    let mut o = common::small_options();
    o.row_cache_bytes = row_cache_bytes;
    o
}

fn open(row_cache_bytes: u64) -> Db {
    let storage: StorageRef = Arc::new(MemStorage::new());
    Db::builder(opts(row_cache_bytes))
        .open_storage(storage)
        .unwrap()
}

fn check_get(ns: &impl Readable, model: &Model, k: &[u8], what: &str) {
    let got = ns.get(k).unwrap();
    assert_eq!(got.as_deref(), model.get(k).map(|v| v.as_slice()), "{what}");
}

fn check_many(ns: &impl Readable, model: &Model, keys: &[Vec<u8>], what: &str) {
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    for (k, v) in keys.iter().zip(ns.get_many(&refs).unwrap()) {
        assert_eq!(v.as_deref(), model.get(k).map(|v| v.as_slice()), "{what}");
    }
}

/// One random write to `ns` and `model`: a put, an overwrite, a delete or a batch.
fn random_write(rng: &mut SmallRng, ns: &Namespace, model: &mut Model, version: u64) {
    // Mostly the keys gets read, so writes meet cached entries.
    let hot = if rng.gen_bool(0.8) { 60 } else { 300 };
    let k = rng.gen_range(0..hot);
    match rng.gen_range(0..10) {
        0..=5 => {
            let v = common::value_for(k, version, rng.gen_range(1..300));
            ns.put(&key(k), &v).unwrap();
            model.insert(key(k), v);
        }
        6..=7 => {
            ns.delete(&key(k)).unwrap();
            model.remove(&key(k));
        }
        _ => {
            let mut b = WriteBatch::new();
            for i in 0..rng.gen_range(1..6) {
                let k = key(rng.gen_range(0..60));
                if rng.gen_bool(0.3) {
                    b.delete(k.clone());
                    model.remove(&k);
                } else {
                    let v = common::value_for(i, version, rng.gen_range(1..200));
                    b.put(k.clone(), v.clone());
                    model.insert(k, v);
                }
            }
            ns.write(b).unwrap();
        }
    }
}

#[test]
fn model_with_a_tiny_row_cache() {
    let seed = common::seed(33);
    let mut rng = SmallRng::seed_from_u64(seed);
    // A few dozen entries: eviction all along.
    let db = open(16 << 10);
    let mut spaces: Vec<(Namespace, Model)> = ["a", "b"]
        .iter()
        .map(|n| (db.create_namespace(n).unwrap(), Model::new()))
        .collect();
    let mut snap: Option<(cerberus_engine::Snapshot, Model)> = None;
    let mut dropped = 0;
    for step in 0..12_000u64 {
        let what = format!("seed {seed} step {step}");
        let s = rng.gen_range(0..spaces.len());
        let (ns, model) = &mut spaces[s];
        match rng.gen_range(0..1000) {
            0..=349 => random_write(&mut rng, ns, model, step),
            350..=749 => {
                // Hot keys most of the time, so gets hit the cache.
                let hot = if rng.gen_bool(0.7) { 60 } else { 300 };
                let k = key(rng.gen_range(0..hot));
                check_get(ns, model, &k, &what);
            }
            750..=939 => {
                let keys: Vec<Vec<u8>> = (0..rng.gen_range(1..12))
                    .map(|_| key(rng.gen_range(0..60)))
                    .collect();
                check_many(ns, model, &keys, &what);
            }
            940..=979 => {
                if let Some((sn, m)) = &snap {
                    let k = key(rng.gen_range(0..20));
                    check_get(sn, m, &k, &format!("{what} (snapshot)"));
                    check_many(sn, m, &[k], &format!("{what} (snapshot)"));
                }
                if rng.gen_bool(0.2) {
                    snap = Some((ns.snapshot(), model.clone()));
                }
            }
            980..=989 => db.flush().unwrap(),
            990..=998 => {
                db.gc_value_log().unwrap();
            }
            _ => {
                // Drop a namespace and make a new one under the same name (a new id).
                let name = ns.name().to_string();
                if snap
                    .as_ref()
                    .is_some_and(|(sn, _)| sn.namespace().id() == ns.id())
                {
                    snap = None;
                }
                db.destroy_namespace(ns.id()).unwrap();
                spaces[s] = (db.create_namespace(&name).unwrap(), Model::new());
                dropped += 1;
            }
        }
    }
    for (ns, model) in &spaces {
        for k in 0..300 {
            check_get(ns, model, &key(k), "at the end");
        }
    }
    let rc = db.stats().row_cache;
    assert!(dropped > 0);
    assert!(rc.hits > 1000 && rc.misses > 1000, "{rc:?}");
    assert!(rc.evictions > 100, "{rc:?}");
    assert!(rc.bytes <= 16 << 10, "{rc:?}");
}

#[test]
fn after_racing_writers_stop_every_get_is_the_last_write() {
    let db = Arc::new(open(1 << 20));
    let ns = db.default_namespace();
    const KEYS: u32 = 8;
    const WRITERS: u32 = 2;
    let stop = AtomicBool::new(false);
    let last: Vec<Vec<u8>> = std::thread::scope(|s| {
        for r in 0..3 {
            let (ns, stop) = (&ns, &stop);
            s.spawn(move || {
                // What a thread read must never go back to an older version.
                let mut seen = vec![0u64; KEYS as usize];
                while !stop.load(Ordering::Relaxed) {
                    for k in 0..KEYS {
                        let v = if r == 0 {
                            ns.get_many(&[&key(k)]).unwrap().remove(0)
                        } else {
                            ns.get(&key(k)).unwrap()
                        };
                        let n = v.map_or(0, |v| String::from_utf8_lossy(&v).parse().unwrap());
                        assert!(n >= seen[k as usize], "key {k}: {n} after {seen:?}");
                        seen[k as usize] = n;
                    }
                }
            });
        }
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let ns = &ns;
                s.spawn(move || {
                    // Writer w owns the keys k with k % WRITERS == w; versions grow.
                    let mut last = Vec::new();
                    for n in 1..=3000u64 {
                        let k = (n as u32 * WRITERS + w) % KEYS;
                        ns.put(&key(k), n.to_string().as_bytes()).unwrap();
                        last.push((k, n));
                    }
                    last
                })
            })
            .collect();
        let mut last = vec![Vec::new(); KEYS as usize];
        for w in writers {
            for (k, n) in w.join().unwrap() {
                last[k as usize] = n.to_string().into_bytes();
            }
        }
        stop.store(true, Ordering::Relaxed);
        last
    });
    for k in 0..KEYS {
        let want = Some(&last[k as usize][..]);
        assert_eq!(ns.get(&key(k)).unwrap().as_deref(), want, "key {k}");
        assert_eq!(ns.get(&key(k)).unwrap().as_deref(), want, "key {k}, cached");
    }
    assert!(db.stats().row_cache.hits > 0);
}

#[test]
fn every_write_path_invalidates() {
    let db = open(1 << 20);
    let ns = db.create_namespace("w").unwrap();
    let cached = |k: &[u8], want: Option<&[u8]>| {
        // Three times: a key's first miss is not cached, its second fills the cache, and the
        // third get is answered by it (the key's later misses fill it at once).
        for _ in 0..3 {
            assert_eq!(ns.get(k).unwrap().as_deref(), want);
        }
    };
    ns.put(b"k", b"1").unwrap();
    cached(b"k", Some(b"1"));
    ns.put(b"k", b"2").unwrap();
    cached(b"k", Some(b"2"));
    ns.delete(b"k").unwrap();
    cached(b"k", None);
    ns.put(b"k", b"3").unwrap();
    cached(b"k", Some(b"3"));
    let mut b = WriteBatch::new();
    b.put(b"k".to_vec(), b"4".to_vec())
        .put(b"j".to_vec(), b"5".to_vec());
    ns.write(b).unwrap();
    cached(b"k", Some(b"4"));
    let mut b = WriteBatch::new();
    b.delete(b"k".to_vec());
    ns.write(b).unwrap();
    cached(b"k", None);
    // get_many fills and is answered too; a put after it is seen by both.
    ns.put(b"k", b"6").unwrap();
    assert_eq!(ns.get_many(&[b"k"]).unwrap()[0].as_deref(), Some(&b"6"[..]));
    ns.put(b"k", b"7").unwrap();
    assert_eq!(ns.get_many(&[b"k"]).unwrap()[0].as_deref(), Some(&b"7"[..]));
    cached(b"k", Some(b"7"));
    // Value-log GC moves the record: the cached value stays right.
    for i in 0..200u32 {
        ns.put(&i.to_be_bytes(), &[9; 300]).unwrap();
        ns.delete(&i.to_be_bytes()).unwrap();
    }
    db.gc_value_log().unwrap();
    cached(b"k", Some(b"7"));
    ns.put(b"k", b"8").unwrap();
    cached(b"k", Some(b"8"));
    // A destroyed namespace's entries go; its successor under the name starts empty.
    db.destroy_namespace(ns.id()).unwrap();
    assert!(ns.get(b"k").is_err());
    let again = db.create_namespace("w").unwrap();
    assert_eq!(again.get(b"k").unwrap(), None);
    assert_eq!(db.stats().row_cache.entries, 0);
}

#[test]
fn snapshots_read_the_tree_not_the_cache() {
    let db = open(1 << 20);
    let ns = db.default_namespace();
    ns.put(b"k", b"old").unwrap();
    let snap = ns.snapshot();
    ns.put(b"k", b"new").unwrap();
    for _ in 0..3 {
        assert_eq!(ns.get(b"k").unwrap().as_deref(), Some(&b"new"[..]));
    }
    assert_eq!(snap.get(b"k").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(
        snap.get_many(&[b"k"]).unwrap()[0].as_deref(),
        Some(&b"old"[..])
    );
    // The snapshot's reads neither count nor fill.
    let rc = db.stats().row_cache;
    assert_eq!(
        (rc.hits, rc.misses, rc.inserts, rc.deferred),
        (1, 2, 1, 1),
        "{rc:?}"
    );
}

#[test]
fn stats_count_hits_misses_inserts_and_bytes() {
    let db = open(1 << 20);
    let ns = db.create_namespace("s").unwrap();
    ns.put(b"key", b"value").unwrap();
    assert_eq!(ns.get(b"absent").unwrap(), None);
    for _ in 0..4 {
        ns.get(b"key").unwrap();
    }
    ns.get_many(&[b"key", b"absent"]).unwrap();
    let rc = db.stats().row_cache;
    // Misses: "absent" twice (not-found is not cached, nor counted as deferred) and the
    // first two gets of "key": the first deferred, the second cached.
    assert_eq!(
        (rc.hits, rc.misses, rc.inserts, rc.deferred, rc.entries),
        (3, 4, 1, 1, 1)
    );
    assert_eq!(rc.bytes, 3 + 5 + 128);
    assert_eq!(rc.capacity_bytes, 1 << 20);
    let s = ns.stats().unwrap();
    assert_eq!((s.row_cache_hits, s.row_cache_misses, s.gets), (3, 4, 7));
    // Off: nothing cached, nothing counted.
    let off = open(0);
    let ns = off.default_namespace();
    ns.put(b"key", b"value").unwrap();
    ns.get(b"key").unwrap();
    assert_eq!(
        off.stats().row_cache,
        cerberus_engine::RowCacheStats::default()
    );
}

/// A pass over many keys, each read once (a scan by gets), caches few of them (a first
/// miss only marks its key; one in 8 to 16 passes as seen, sharing a bit): the hot keys
/// keep their places, where caching every miss pushed them all out.
#[test]
fn a_pass_over_keys_read_once_leaves_the_hot_keys_cached() {
    // About 250 entries of 4 KB values fit.
    let db = open(1 << 20);
    let ns = db.default_namespace();
    let value = vec![7u8; 4000];
    for k in 0..4_000 {
        ns.put(&key(k), &value).unwrap();
    }
    // The hot keys: read twice, the second read caches them; a third is a hit.
    let hot = 0..100;
    for _ in 0..3 {
        for k in hot.clone() {
            ns.get(&key(k)).unwrap();
        }
    }
    let before = db.stats().row_cache;
    assert_eq!(before.entries, 100, "{before:?}");
    // Twelve times the cache's worth of other keys, once each.
    for k in 1_000..4_000 {
        assert_eq!(ns.get(&key(k)).unwrap().as_deref(), Some(&value[..]));
    }
    let after = db.stats().row_cache;
    assert!(after.inserts - before.inserts <= 3_000 / 8, "{after:?}");
    for k in hot {
        ns.get(&key(k)).unwrap();
    }
    let hits = db.stats().row_cache.hits - after.hits;
    assert!(
        hits >= 90,
        "{hits} of the 100 hot keys still cached: {after:?}"
    );
}
