//! Snapshots count per namespace: a snapshot (or an open iterator) of one namespace holds back
//! that namespace's garbage alone. Another namespace's overwritten versions, tombstones and
//! value-log segments go at its flushes, compactions and GC as if no snapshot were open, while
//! the snapshot keeps reading its own namespace (records and index entries) as it was.

use crate::common;

use cerberus_engine::storage::{MemStorage, Storage};
use cerberus_engine::QueryResult;
use cerberus_engine::Readable;
use cerberus_engine::{Db, IndexKind, Layout, Namespace, Options, ReadOptions, Snapshot};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::BTreeMap;
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

/// The value-log segments in `storage`, by id.
fn segments(storage: &MemStorage) -> Vec<u64> {
    let mut ids: Vec<u64> = storage
        .list()
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_suffix(".vlog")?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

fn check(snap: &Snapshot, model: &Model, what: &str) {
    for k in 0..KEYS {
        let got = snap.get(&key(k)).unwrap();
        assert_eq!(
            got.as_deref(),
            model.get(&key(k)).map(|v| v.as_slice()),
            "{what}: key {k}"
        );
    }
    let listed: Model = snap
        .iter(ReadOptions::default())
        .unwrap()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    assert_eq!(&listed, model, "{what}: iteration");
}

/// A JSON record with attribute `g`, padded to about `len` bytes (so it lives in the value
/// log, not inline).
fn record(k: u32, version: u64, g: u32, len: usize) -> Vec<u8> {
    let pad = "x".repeat(len.saturating_sub(40));
    serde_json::to_vec(&json!({"k": k, "v": version, "g": g, "pad": pad})).unwrap()
}

/// Namespace A holds a snapshot and an open iterator while B overwrites and deletes every
/// key it has: B's dead versions leave the tables and the segments holding only B's records
/// are collected, while A keeps its old versions (and its own garbage) and its snapshot and
/// iterator read them.
fn others_garbage_goes_while_a_snapshot_is_held(layout: Layout) {
    let storage = Arc::new(MemStorage::new());
    let db = Db::builder(options(layout))
        .open_storage(storage.clone())
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    // B first: its first versions fill segments of their own.
    for k in 0..KEYS {
        b.put(&key(k), &common::value_for(k, 1, 500)).unwrap();
    }
    let mut only_b = segments(&storage);
    // The newest may take A's records too.
    only_b.pop();
    assert!(only_b.len() >= 2, "segments {only_b:?}");
    for k in 0..KEYS {
        a.put(&key(k), &common::value_for(k, 1, 500)).unwrap();
    }
    let a_old: Model = (0..KEYS)
        .map(|k| (key(k), common::value_for(k, 1, 500)))
        .collect();
    let snap = a.snapshot();
    let mut it = a.iter(ReadOptions::default()).unwrap();
    let first = it.next().unwrap().unwrap();
    assert_eq!(
        (first.0.to_vec(), first.1.to_vec()),
        (key(0), a_old[&key(0)].clone())
    );
    // A's own garbage, which its snapshot holds back.
    for k in 0..KEYS {
        a.put(&key(k), &common::value_for(k, 2, 500)).unwrap();
    }
    let mut b_now = Model::new();
    for k in 0..KEYS {
        if k % 2 == 0 {
            b.delete(&key(k)).unwrap();
        } else {
            let v = common::value_for(k, 2, 300);
            b.put(&key(k), &v).unwrap();
            b_now.insert(key(k), v);
        }
    }
    db.flush().unwrap();
    db.compact_all().unwrap();
    // B: only its newest versions are left, no tombstone; A: both versions of every key.
    assert_eq!(b.stats().unwrap().keys_estimate, u64::from(KEYS / 2));
    assert_eq!(a.stats().unwrap().keys_estimate, 2 * u64::from(KEYS));
    assert_eq!(db.stats().snapshots, 2);
    assert_eq!(
        (a.stats().unwrap().snapshots, b.stats().unwrap().snapshots),
        (2, 0)
    );

    let gc = db.gc_value_log().unwrap();
    let left = segments(&storage);
    assert!(
        only_b.iter().all(|s| !left.contains(s)),
        "B's segments {only_b:?} still there: {left:?} ({gc:?})"
    );
    assert!(gc.segments_deleted >= only_b.len(), "{gc:?}");

    // A's snapshot and iterator read A as it was; A and B read their newest state.
    check(&snap, &a_old, "A's snapshot after B's GC");
    let rest: Vec<(Vec<u8>, Vec<u8>)> = it
        .by_ref()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = a_old.clone().into_iter().skip(1).collect();
    assert_eq!(rest, want, "A's iterator after B's GC");
    for k in 0..KEYS {
        assert_eq!(
            a.get(&key(k)).unwrap(),
            Some(common::value_for(k, 2, 500).into())
        );
        assert_eq!(
            b.get(&key(k)).unwrap().map(|v| v.to_vec()),
            b_now.get(&key(k)).cloned()
        );
    }

    // Once A lets go, its own garbage goes as well.
    drop(it);
    drop(snap);
    assert_eq!(db.stats().snapshots, 0);
    db.compact_all().unwrap();
    assert_eq!(a.stats().unwrap().keys_estimate, u64::from(KEYS));
    let freed = db.gc_value_log().unwrap();
    assert!(freed.segments_deleted > 0, "{freed:?}");
    for k in 0..KEYS {
        assert_eq!(
            a.get(&key(k)).unwrap(),
            Some(common::value_for(k, 2, 500).into())
        );
    }
}

#[test]
fn others_garbage_goes_while_a_snapshot_is_held_per_namespace() {
    others_garbage_goes_while_a_snapshot_is_held(Layout::PerNamespace);
}

#[test]
fn others_garbage_goes_while_a_snapshot_is_held_shared() {
    others_garbage_goes_while_a_snapshot_is_held(Layout::Shared);
}

/// What namespace A was when a snapshot was taken: its records, and the pks by `g`.
struct Pinned {
    snap: Snapshot,
    model: Model,
}

const GROUPS: u32 = 4;

fn check_pinned(p: &Pinned, what: &str) {
    check(&p.snap, &p.model, what);
    for g in 0..GROUPS {
        let QueryResult { value: pks, .. } = p
            .snap
            .get_by_secondary("g", &json!(g), None)
            .unwrap_or_else(|e| panic!("{what}: get_by_secondary: {e}"));
        let mut got: Vec<Vec<u8>> = pks.iter().map(|p| p.to_vec()).collect();
        got.sort();
        let want: Vec<Vec<u8>> = p
            .model
            .iter()
            .filter(|(_, v)| serde_json::from_slice::<Value>(v).unwrap()["g"] == json!(g))
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(got, want, "{what}: get_by_secondary g = {g}");
    }
}

/// Namespace A, with an index, holds snapshots taken at random points (and writes a little
/// meanwhile); B (indexed too) and C write much, with flushes, compactions, `compact_range`s
/// and GC among the writes. Every snapshot of A reads A's records and index entries as they
/// were, against a model; at the end, with A's snapshots still held, B's and C's trees hold
/// their live keys alone.
fn a_snapshot_reads_its_namespace_through_the_others_churn(layout: Layout, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let db = Db::builder(options(layout))
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    let c = db.create_namespace("c").unwrap();
    a.create_index("g", IndexKind::Classic).unwrap();
    b.create_index("g", IndexKind::Vas).unwrap();
    let spaces: [&Namespace; 3] = [&a, &b, &c];
    let mut models = [Model::new(), Model::new(), Model::new()];
    let mut pinned: Vec<Pinned> = Vec::new();
    let mut version = 0u64;
    for step in 0..4_000 {
        // A writes one operation in ten.
        let i = match rng.gen_range(0..10) {
            0 => 0,
            1..=5 => 1,
            _ => 2,
        };
        let k = rng.gen_range(0..KEYS);
        match rng.gen_range(0..1000) {
            0..=599 => {
                version += 1;
                let v = record(k, version, rng.gen_range(0..GROUPS), rng.gen_range(60..400));
                spaces[i].put(&key(k), &v).unwrap();
                models[i].insert(key(k), v);
            }
            600..=799 => {
                spaces[i].delete(&key(k)).unwrap();
                models[i].remove(&key(k));
            }
            800..=829 => {
                if pinned.len() < 4 {
                    pinned.push(Pinned {
                        snap: a.snapshot(),
                        model: models[0].clone(),
                    });
                } else {
                    let p = pinned.remove(rng.gen_range(0..pinned.len()));
                    check_pinned(&p, &format!("seed {seed} step {step} at release"));
                }
            }
            830..=869 => db.flush().unwrap(),
            870..=899 => db.compact_all().unwrap(),
            900..=919 => {
                let lo = key(rng.gen_range(0..KEYS));
                spaces[rng.gen_range(1..3)]
                    .compact_range(Some(&lo), None)
                    .unwrap();
            }
            920..=959 => {
                db.gc_value_log().unwrap();
            }
            _ => {
                for (j, p) in pinned.iter().enumerate() {
                    check_pinned(p, &format!("seed {seed} step {step} snapshot {j}"));
                }
            }
        }
    }
    // One snapshot of A at least, taken before the last of B's and C's writes.
    pinned.push(Pinned {
        snap: a.snapshot(),
        model: models[0].clone(),
    });
    for i in 1..3 {
        for k in 0..KEYS {
            version += 1;
            let v = record(k, version, k % GROUPS, 100);
            spaces[i].put(&key(k), &v).unwrap();
            models[i].insert(key(k), v);
        }
        for k in (0..KEYS).step_by(3) {
            spaces[i].delete(&key(k)).unwrap();
            models[i].remove(&key(k));
        }
    }
    db.gc_value_log().unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();
    for (j, p) in pinned.iter().enumerate() {
        check_pinned(p, &format!("seed {seed} final, snapshot {j}"));
    }
    for i in 1..3 {
        assert_eq!(
            spaces[i].stats().unwrap().keys_estimate,
            models[i].len() as u64,
            "seed {seed}: namespace {i} keeps garbage for A's snapshots"
        );
        for k in 0..KEYS {
            assert_eq!(
                spaces[i].get(&key(k)).unwrap().map(|v| v.to_vec()),
                models[i].get(&key(k)).cloned()
            );
        }
    }
    assert_eq!(db.stats().snapshots, pinned.len());
    drop(pinned);
    assert_eq!(db.stats().snapshots, 0);
}

#[test]
fn a_snapshot_reads_its_namespace_through_the_others_churn_per_namespace() {
    a_snapshot_reads_its_namespace_through_the_others_churn(Layout::PerNamespace, common::seed(51));
}

#[test]
fn a_snapshot_reads_its_namespace_through_the_others_churn_shared() {
    a_snapshot_reads_its_namespace_through_the_others_churn(Layout::Shared, common::seed(52));
}

/// An iterator opened before its namespace is destroyed reads its snapshot to the end, even
/// when GC collects the segments around it meanwhile (no long-lived value-log pin does that:
/// the snapshot of the destroyed namespace keeps that namespace's segments).
#[test]
fn an_iterator_of_a_destroyed_namespace_reads_on_through_gc() {
    let db = Db::builder(options(Layout::PerNamespace))
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    let model: Model = (0..KEYS)
        .map(|k| (key(k), common::value_for(k, 1, 400)))
        .collect();
    for (k, v) in &model {
        a.put(k, v).unwrap();
    }
    let mut it = a
        .iter(ReadOptions {
            prefetch_degree: 4,
            ..ReadOptions::default()
        })
        .unwrap();
    let mut got = Model::new();
    for _ in 0..10 {
        let (k, v) = it.next().unwrap().unwrap();
        got.insert(k.to_vec(), v.to_vec());
    }
    db.destroy_namespace(a.id()).unwrap();
    for round in 1..4 {
        for k in 0..KEYS {
            b.put(&key(k), &common::value_for(k, round, 400)).unwrap();
        }
        db.flush().unwrap();
        db.compact_all().unwrap();
        db.gc_value_log().unwrap();
    }
    for e in it {
        let (k, v) = e.unwrap();
        got.insert(k.to_vec(), v.to_vec());
    }
    assert_eq!(got, model);
    // Gone with the iterator: A's segments are collected.
    let freed = db.gc_value_log().unwrap();
    assert!(freed.segments_deleted > 0, "{freed:?}");
    assert_eq!(
        b.get(&key(3)).unwrap(),
        Some(common::value_for(3, 3, 400).into())
    );
}
