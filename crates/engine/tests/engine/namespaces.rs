//! Namespaces: isolation checked against one `BTreeMap` per namespace through random
//! operations with flushes, compactions, destroys and reopens, under both layouts.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Error, Layout, Nsid, Options, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const KEYS: u32 = 400;
const STEPS: usize = 60_000;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn run(layout: Layout, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let storage: StorageRef = Arc::new(MemStorage::new());
    let mut opts = common::small_options();
    opts.layout = layout;
    let mut db = Db::builder(opts.clone())
        .open_storage(storage.clone())
        .unwrap();
    let mut models: BTreeMap<Nsid, BTreeMap<Vec<u8>, Vec<u8>>> = BTreeMap::new();
    models.insert(0, BTreeMap::new());
    let mut destroyed: BTreeSet<Nsid> = BTreeSet::new();
    let mut issued: BTreeSet<Nsid> = BTreeSet::from([0]);
    let mut names = 0;
    let mut version = 0;
    for _ in 0..3 {
        names += 1;
        let ns = db
            .create_namespace(&format!("tenant-{names}"))
            .unwrap()
            .id();
        assert!(issued.insert(ns), "namespace id {ns} handed out twice");
        models.insert(ns, BTreeMap::new());
    }
    for step in 0..STEPS {
        let live: Vec<Nsid> = models.keys().copied().collect();
        let ns = live[rng.gen_range(0..live.len())];
        let k = rng.gen_range(0..KEYS);
        match rng.gen_range(0..1000) {
            0..=399 => {
                version += 1;
                // The same key gets a different value in every namespace.
                let v = common::value_for(k, version * 100 + u64::from(ns), rng.gen_range(1..120));
                db.namespace(ns).unwrap().put(&key(k), &v).unwrap();
                models.get_mut(&ns).unwrap().insert(key(k), v);
            }
            400..=469 => {
                db.namespace(ns).unwrap().delete(&key(k)).unwrap();
                models.get_mut(&ns).unwrap().remove(&key(k));
            }
            470..=899 => {
                let got = db.namespace(ns).unwrap().get(&key(k)).unwrap();
                let want = models[&ns].get(&key(k));
                assert_eq!(
                    got.as_deref(),
                    want.map(|v| v.as_slice()),
                    "seed {seed} step {step} ns {ns} key {k}"
                );
            }
            900..=949 => {
                let mut b = WriteBatch::new();
                let mut staged = Vec::new();
                for _ in 0..rng.gen_range(1..5) {
                    let k = rng.gen_range(0..KEYS);
                    version += 1;
                    let v = common::value_for(k, version, 30);
                    b.put(key(k), v.clone());
                    staged.push((key(k), v));
                }
                db.namespace(ns).unwrap().write(b).unwrap();
                models.get_mut(&ns).unwrap().extend(staged);
            }
            950..=964 => db.flush().unwrap(),
            965..=967 => db.compact_all().unwrap(),
            968..=969 => {
                db.gc_value_log().unwrap();
            }
            970..=979 => {
                if ns != 0 {
                    db.destroy_namespace(ns).unwrap();
                    models.remove(&ns);
                    destroyed.insert(ns);
                    names += 1;
                    let fresh = db
                        .create_namespace(&format!("tenant-{names}"))
                        .unwrap()
                        .id();
                    assert!(
                        issued.insert(fresh),
                        "namespace id {fresh} handed out again"
                    );
                    models.insert(fresh, BTreeMap::new());
                }
            }
            980..=989 => {
                if let Some(&dead) = destroyed.iter().next_back() {
                    assert!(matches!(
                        db.namespace(dead).and_then(|n| n.get(&key(k))),
                        Err(Error::UnknownNamespace(_))
                    ));
                    assert!(matches!(
                        db.namespace(dead).and_then(|n| n.put(&key(k), b"x")),
                        Err(Error::UnknownNamespace(_))
                    ));
                }
            }
            _ => {
                db.close().unwrap();
                drop(db);
                db = Db::builder(opts.clone())
                    .open_storage(storage.clone())
                    .unwrap();
            }
        }
    }
    db.close().unwrap();
    drop(db);
    let db = Db::builder(opts).open_storage(storage).unwrap();
    db.compact_all().unwrap();
    // Background work goes on after `compact_all` (GC's rewrites after the reopen reach the
    // trees through L0 and the runs): the tree counts below are read one call at a time, so
    // they are compared once it has nothing left to do.
    db.wait_for_compactions().unwrap();
    let listed: Vec<Nsid> = db.list_namespaces().iter().map(|n| n.nsid).collect();
    assert_eq!(listed, models.keys().copied().collect::<Vec<_>>());
    for (ns, model) in &models {
        for k in 0..KEYS {
            assert_eq!(
                db.namespace(*ns).unwrap().get(&key(k)).unwrap().as_deref(),
                model.get(&key(k)).map(|v| v.as_slice()),
                "seed {seed}: final check ns {ns} key {k}"
            );
        }
    }
    for dead in destroyed {
        assert!(matches!(
            db.namespace(dead).and_then(|n| n.get(b"k")),
            Err(Error::UnknownNamespace(_))
        ));
    }
    if layout == Layout::PerNamespace {
        // Every table below L0 belongs to exactly one namespace's tree.
        let total = db.stats().levels;
        let mut owned = vec![0; total.len()];
        for info in db.list_namespaces() {
            for (l, s) in db
                .namespace(info.nsid)
                .unwrap()
                .stats()
                .unwrap()
                .levels
                .iter()
                .enumerate()
            {
                owned[l] += s.tables;
            }
        }
        for l in 1..total.len() {
            assert_eq!(
                owned[l], total[l].tables,
                "level {l}: tables outside any namespace tree"
            );
        }
    }
}

#[test]
fn isolation_per_namespace() {
    run(Layout::PerNamespace, common::seed(21));
}

#[test]
fn isolation_shared() {
    run(Layout::Shared, common::seed(22));
}

#[test]
fn namespace_api_errors() {
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap().id();
    assert!(matches!(
        db.create_namespace("a"),
        Err(Error::NamespaceExists(_))
    ));
    assert!(db.create_namespace("").is_err());
    assert!(db.destroy_namespace(0).is_err());
    assert!(matches!(
        db.destroy_namespace(999),
        Err(Error::UnknownNamespace(999))
    ));
    db.namespace(a).unwrap().put(b"k", b"in a").unwrap();
    db.default_namespace().put(b"k", b"in default").unwrap();
    assert_eq!(
        db.namespace(a).unwrap().get(b"k").unwrap().as_deref(),
        Some(&b"in a"[..])
    );
    assert_eq!(
        db.default_namespace().get(b"k").unwrap().as_deref(),
        Some(&b"in default"[..])
    );
    db.destroy_namespace(a).unwrap();
    assert!(matches!(
        db.destroy_namespace(a),
        Err(Error::UnknownNamespace(_))
    ));
    // The name is free again, the id is not.
    let b = db.create_namespace("a").unwrap().id();
    assert!(b > a);
    assert_eq!(db.namespace(b).unwrap().get(b"k").unwrap(), None);
}

/// A get that meets a tombstone answers "not found", and the stats say so, wherever the
/// tombstone sits (the memtable, or a table after a flush).
#[test]
fn a_get_of_a_deleted_key_counts_as_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ns = db.create_namespace("t").unwrap();
    ns.put(b"k", b"v").unwrap();
    ns.delete(b"k").unwrap();
    assert_eq!(ns.get(b"k").unwrap(), None);
    db.flush().unwrap();
    assert_eq!(ns.get(b"k").unwrap(), None);
    assert_eq!(ns.get(b"never").unwrap(), None);
    let s = ns.stats().unwrap();
    assert_eq!((s.gets, s.gets_not_found), (3, 3), "{s:?}");
    assert_eq!(db.stats().gets_not_found, 3);
}

/// In the shared tree a namespace's stats count the tables a get of it can consult: those
/// whose key range takes in the namespace's, not every table of the level.
#[test]
fn shared_tree_stats_count_the_namespace_tables() {
    let mut opts = common::small_options();
    opts.layout = Layout::Shared;
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    let c = db.create_namespace("c").unwrap();
    let deeper = |s: &cerberus_engine::NamespaceStats| -> usize {
        s.levels.iter().skip(1).map(|l| l.tables).sum()
    };
    for k in 0..3_000 {
        a.put(&key(k), &[7; 40]).unwrap();
    }
    db.flush().unwrap();
    db.compact_all().unwrap();
    let in_a = deeper(&a.stats().unwrap());
    assert!(in_a > 1, "a's keys below L0: {in_a} tables");
    assert_eq!(deeper(&b.stats().unwrap()), 0);
    // One key of c: its table leaves out most of a's. A table spanning a and c would take
    // in b's range too, and so count for b as well as c.
    c.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    db.compact_all().unwrap();
    let total: usize = db.stats().levels.iter().skip(1).map(|l| l.tables).sum();
    let (sb, sc) = (b.stats().unwrap(), c.stats().unwrap());
    assert!(
        deeper(&sc) >= 1 && deeper(&sc) < total,
        "c: {sc:?}, {total} tables"
    );
    assert!(deeper(&sb) <= deeper(&sc), "b: {sb:?}");
    assert!(deeper(&a.stats().unwrap()) >= in_a);
}

/// A database in memory with `opts`, and its namespace `a`.
fn open_with_a(opts: Options) -> (Db, cerberus_engine::Namespace) {
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    (db, a)
}

/// Namespace `a` of a database without a block cache, 3,000 keys of `[7; 40]` compacted
/// below L0; filters and index blocks in the (empty) cache if `in_cache`. Tables without
/// point indexes, which would answer the gets without index blocks.
fn settled_without_cache(layout: Layout, in_cache: bool) -> (Db, cerberus_engine::Namespace) {
    let mut opts = common::small_options();
    opts.point_index = false;
    opts.layout = layout;
    opts.cache_bytes = 0;
    opts.cache_filters_and_indexes = in_cache;
    let (db, a) = open_with_a(opts);
    for k in 0..3_000 {
        a.put(&key(k), &[7; 40]).unwrap();
    }
    db.flush().unwrap();
    db.compact_all().unwrap();
    (db, a)
}

/// By default an open table keeps its filter and index block once read: with no block cache
/// at all, gets load each once a table, not once a get; with them in the (empty) cache, every
/// get loads again.
#[test]
fn open_tables_keep_their_filter_and_index_unless_the_cache_holds_them() {
    for in_cache in [false, true] {
        let (_db, a) = settled_without_cache(Layout::PerNamespace, in_cache);
        let read_all = || {
            for k in (0..3_000).step_by(10) {
                assert_eq!(a.get(&key(k)).unwrap().as_deref(), Some(&[7u8; 40][..]));
            }
            a.stats().unwrap()
        };
        let first = read_all();
        let again = read_all();
        assert!(first.filter_loads > 0 && first.index_loads > 0);
        if in_cache {
            // At least the answering table's filter and index, every get.
            assert!(again.filter_loads - first.filter_loads >= 300, "{again:?}");
            assert!(again.index_loads - first.index_loads >= 300, "{again:?}");
        } else {
            assert_eq!(again.filter_loads, first.filter_loads);
            assert_eq!(again.index_loads, first.index_loads);
            // Fewer loads than tables probed: each table's once.
            assert!(first.filter_loads < 300, "{first:?}");
        }
    }
}

/// A get's path names the tables its search would consult: as many as the filter loads a
/// get takes without a cache, when the filters rule the key out everywhere but its table.
#[test]
fn get_path_counts_the_tables_a_get_consults() {
    for layout in [Layout::PerNamespace, Layout::Shared] {
        // Filters in the (empty) cache: every probe loads its table's filter.
        let (db, a) = settled_without_cache(layout, true);
        // A newer version of some keys in L0, above the settled tree.
        for k in (0..3_000).step_by(7) {
            a.put(&key(k), &[8; 40]).unwrap();
        }
        db.flush().unwrap();
        let before = a.stats().unwrap().filter_loads;
        let (mut consulted, mut gets) = (0, 0);
        // Keys not rewritten: answered below L0, after every table on the path down to
        // the level that answers.
        for k in (1..3_000).step_by(50).filter(|k| k % 7 != 0) {
            let path = a.get_path(&key(k)).unwrap();
            assert_eq!(path.levels.len(), 5, "{layout:?}");
            assert!(path.levels[1..].iter().all(|&n| n <= 1));
            let by_level = a.stats().unwrap().gets_by_level;
            assert_eq!(a.get(&key(k)).unwrap().as_deref(), Some(&[7u8; 40][..]));
            let after = a.stats().unwrap().gets_by_level;
            let answered = (1..after.len()).find(|&l| after[l] > by_level[l]).unwrap();
            assert_eq!(path.levels[answered], 1);
            consulted += path.levels[..=answered].iter().sum::<usize>() + path.runs;
            gets += 1;
        }
        let loads = a.stats().unwrap().filter_loads - before;
        assert!(
            gets > 0 && consulted > gets,
            "{layout:?}: {consulted} tables, {gets} gets"
        );
        assert_eq!(
            loads as usize, consulted,
            "{layout:?}: filter loads against the paths"
        );
    }
}

/// Gets count their steps always and time them only when asked (`time_get_steps`): the
/// clock's reads cost a get more than some of its steps.
#[test]
fn gets_time_their_steps_only_when_asked() {
    for timed in [false, true] {
        let mut opts = common::small_options();
        opts.time_get_steps = timed;
        let (db, a) = open_with_a(opts);
        for k in 0..2_000 {
            a.put(&key(k), &[7; 40]).unwrap();
        }
        db.flush().unwrap();
        a.put(&key(0), &[8; 40]).unwrap();
        for k in 0..2_000 {
            assert!(a.get(&key(k)).unwrap().is_some());
        }
        let steps = a.stats().unwrap().search;
        let hits: u64 = steps.iter().map(|s| s.hits).sum();
        let misses: u64 = steps.iter().map(|s| s.misses).sum();
        let nanos: u64 = steps.iter().map(|s| s.hit_nanos + s.miss_nanos).sum();
        assert_eq!(hits, 2_000, "{steps:?}");
        assert!(misses >= 1_999, "{steps:?}");
        assert_eq!(nanos > 0, timed, "{steps:?}");
    }
}
