//! Key listing (keys-only iterators, as the device's List pages them), existence checks
//! (`contains`) and per-write sync.
//!
//! The model test runs random writes over three namespaces that share keys, with flushes,
//! compactions, reopens and destroy + recreate, in both layouts, and after every step compares
//! a random listing and a random existence check with a `BTreeMap`.

use crate::common;

use cerberus_engine::storage::{FaultStorage, IoPurpose, MemStorage, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Error, Layout, Nsid, Options, WriteBatch, WriteOptions};
use common::{KeyList, ListKeys};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

const STEPS: usize = 12_000;
const KEYS: u32 = 500;

type Model = BTreeMap<(Nsid, Vec<u8>), Vec<u8>>;

/// Unpadded numbers, so some keys are prefixes of others ("k1" < "k10" < "k100" < "k11");
/// key 0 is the empty key.
fn key(k: u32) -> Vec<u8> {
    if k == 0 {
        Vec::new()
    } else {
        format!("k{k}").into_bytes()
    }
}

/// What `list_keys_ns` must return, computed from the model.
fn expected(model: &Model, ns: Nsid, start: &[u8], exclusive: bool, limit: usize) -> KeyList {
    let lo = (ns, start.to_vec());
    let lo = if exclusive {
        Bound::Excluded(lo)
    } else {
        Bound::Included(lo)
    };
    let mut it = model
        .range((lo, Bound::Unbounded))
        .take_while(|((n, _), _)| *n == ns)
        .map(|((_, k), _)| k);
    let keys: Vec<_> = it.by_ref().take(limit).cloned().collect();
    let more = it.next().is_some();
    KeyList {
        keys: keys.into_iter().map(Into::into).collect(),
        more,
    }
}

/// A start key: a key that may exist, one between keys, the empty key or random bytes.
fn random_start(rng: &mut SmallRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0..=4 => key(rng.gen_range(0..KEYS + 20)),
        5..=6 => {
            let mut k = key(rng.gen_range(1..KEYS));
            k.push(rng.gen_range(0..3));
            k
        }
        7 => Vec::new(),
        8 => {
            let mut k = key(rng.gen_range(1..KEYS));
            k.pop();
            k
        }
        _ => (0..rng.gen_range(0..4)).map(|_| rng.gen()).collect(),
    }
}

fn random_limit(rng: &mut SmallRng) -> usize {
    match rng.gen_range(0..20) {
        0 => 0,
        1 => usize::MAX,
        2 => rng.gen_range(100..400),
        _ => rng.gen_range(1..20),
    }
}

fn check_list(db: &Db, model: &Model, ns: Nsid, rng: &mut SmallRng, what: &str) {
    let start = random_start(rng);
    let exclusive = rng.gen_bool(0.5);
    let limit = random_limit(rng);
    let got = db
        .namespace(ns)
        .unwrap()
        .list_keys(&start, exclusive, limit)
        .unwrap();
    let want = expected(model, ns, &start, exclusive, limit);
    assert_eq!(
        got, want,
        "{what}: list ns {ns} start {start:?} exclusive {exclusive} limit {limit}"
    );
}

fn check_contains(db: &Db, model: &Model, ns: Nsid, rng: &mut SmallRng, what: &str) {
    let k = key(rng.gen_range(0..KEYS + 5));
    assert_eq!(
        db.namespace(ns).unwrap().contains(&k).unwrap(),
        model.contains_key(&(ns, k.clone())),
        "{what}: contains ns {ns} key {k:?}"
    );
}

/// Pages through a whole namespace with exclusive starts and compares with the model.
fn check_paging(db: &Db, model: &Model, ns: Nsid, page: usize, what: &str) {
    let mut all = Vec::new();
    let mut start = Vec::new();
    let mut exclusive = false;
    loop {
        let l = db
            .namespace(ns)
            .unwrap()
            .list_keys(&start, exclusive, page)
            .unwrap();
        assert!(l.keys.len() <= page);
        all.extend(l.keys.iter().map(|k| k.to_vec()));
        if !l.more {
            break;
        }
        assert_eq!(l.keys.len(), page, "{what}: a short page claims more");
        start = all.last().cloned().unwrap();
        exclusive = true;
    }
    let want: Vec<Vec<u8>> = model
        .range((ns, Vec::new())..)
        .take_while(|((n, _), _)| *n == ns)
        .map(|((_, k), _)| k.clone())
        .collect();
    assert_eq!(all, want, "{what}: paging through ns {ns} by {page}");
}

fn run(layout: Layout, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let storage: StorageRef = Arc::new(MemStorage::new());
    // Small tables and levels, so listings cross several tables per level and several
    // levels below L0.
    let mut opts = common::small_options();
    opts.layout = layout;
    opts.block_size = 256;
    opts.target_table_bytes = 1 << 10;
    opts.level1_bytes = 4 << 10;
    let mut db = Db::builder(opts.clone())
        .open_storage(storage.clone())
        .unwrap();
    let mut model = Model::new();
    let mut names = 0;
    // Three namespaces: the default one and two created ones (replaced on destroy).
    let mut spaces: Vec<Nsid> = vec![0];
    for _ in 0..2 {
        names += 1;
        spaces.push(db.create_namespace(&format!("t{names}")).unwrap().id());
    }
    let mut destroyed: Vec<Nsid> = Vec::new();
    let mut version = 0u64;
    let mut value = |rng: &mut SmallRng, k: u32| {
        version += 1;
        // Short values are inline in the tables, long ones only in the value log.
        common::value_for(k, version, rng.gen_range(1..120))
    };
    for step in 0..STEPS {
        let slot = rng.gen_range(0..spaces.len());
        let ns = spaces[slot];
        let k = rng.gen_range(0..KEYS);
        match rng.gen_range(0..1000) {
            0..=449 => {
                let v = value(&mut rng, k);
                db.namespace(ns).unwrap().put(&key(k), &v).unwrap();
                model.insert((ns, key(k)), v);
            }
            450..=649 => {
                db.namespace(ns).unwrap().delete(&key(k)).unwrap();
                model.remove(&(ns, key(k)));
            }
            650..=659 => {
                let v = value(&mut rng, k);
                db.namespace(ns)
                    .unwrap()
                    .with_write_options(WriteOptions { sync: true })
                    .put(&key(k), &v)
                    .unwrap();
                model.insert((ns, key(k)), v);
            }
            660..=899 => {
                let mut batch = WriteBatch::new();
                let mut staged = Vec::new();
                for _ in 0..rng.gen_range(1..8) {
                    let k = rng.gen_range(0..KEYS);
                    if rng.gen_bool(0.6) {
                        let v = value(&mut rng, k);
                        batch.put(key(k), v.clone());
                        staged.push((key(k), Some(v)));
                    } else {
                        batch.delete(key(k));
                        staged.push((key(k), None));
                    }
                }
                db.namespace(ns).unwrap().write(batch).unwrap();
                for (k, v) in staged {
                    match v {
                        Some(v) => model.insert((ns, k), v),
                        None => model.remove(&(ns, k)),
                    };
                }
            }
            900..=969 => db.flush().unwrap(),
            970..=979 => db.compact_all().unwrap(),
            980..=989 => {
                if ns != 0 {
                    db.destroy_namespace(ns).unwrap();
                    model.retain(|(n, _), _| *n != ns);
                    destroyed.push(ns);
                    names += 1;
                    spaces[slot] = db.create_namespace(&format!("t{names}")).unwrap().id();
                }
            }
            990..=991 => {
                db.gc_value_log().unwrap();
            }
            _ => {
                db.close().unwrap();
                drop(db);
                db = Db::builder(opts.clone())
                    .open_storage(storage.clone())
                    .unwrap();
                for &ns in &spaces {
                    check_paging(&db, &model, ns, rng.gen_range(1..40), "after reopen");
                }
            }
        }
        let what = format!("{layout:?} seed {seed} step {step}");
        for _ in 0..2 {
            let ns = spaces[rng.gen_range(0..spaces.len())];
            check_list(&db, &model, ns, &mut rng, &what);
            check_contains(&db, &model, ns, &mut rng, &what);
        }
        if let Some(&dead) = destroyed.last() {
            if step % 50 == 0 {
                assert!(matches!(
                    db.namespace(dead).and_then(|n| n.list_keys(b"", false, 10)),
                    Err(Error::UnknownNamespace(n)) if n == dead
                ));
                assert!(matches!(
                    db.namespace(dead).and_then(|n| n.contains(b"k1")),
                    Err(Error::UnknownNamespace(n)) if n == dead
                ));
            }
        }
    }
    let st = db.stats();
    assert!(
        st.levels.iter().skip(2).any(|l| l.tables > 0),
        "{layout:?}: nothing reached L2 or below: {:?}",
        st.levels
    );
    assert!(!destroyed.is_empty(), "{layout:?}: no namespace destroyed");
    for &ns in &spaces {
        check_paging(&db, &model, ns, 7, "final");
    }
}

#[test]
fn list_model_per_namespace() {
    run(Layout::PerNamespace, common::seed(21));
}

#[test]
fn list_model_shared() {
    run(Layout::Shared, common::seed(22));
}

fn value_reads(db: &Db, ns: Nsid) -> u64 {
    db.namespace(ns).unwrap().stats().unwrap().reads[IoPurpose::Value as usize]
}

/// Every key has versions in L1, in L0 and in the memtable at once; some are deleted at one
/// layer and written again at another.
fn each_key_once(layout: Layout) {
    let mut opts = common::small_options();
    opts.layout = layout;
    opts.auto_compaction = false;
    // Values are never inline: a value read would show in the counters.
    opts.inline_value_threshold = 0;
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap().id();
    let k = |i: u32| format!("key{i:03}").into_bytes();
    let v = |i: u32, layer: &str| format!("{layer}-{i}-{}", "x".repeat(40)).into_bytes();
    // L1: keys 0..100. The other namespaces hold the same keys as neighbours.
    for i in 0..100 {
        for n in [0, ns] {
            db.namespace(n).unwrap().put(&k(i), &v(i, "l1")).unwrap();
        }
    }
    db.compact_all().unwrap();
    // L0: every key again, deletes of 10..20, new keys 100..110.
    for i in 0..110 {
        if (10..20).contains(&i) {
            db.namespace(ns).unwrap().delete(&k(i)).unwrap();
        } else {
            db.namespace(ns).unwrap().put(&k(i), &v(i, "l0")).unwrap();
        }
    }
    db.flush().unwrap();
    // Memtable: every key again, 15..17 written back, 30..35 deleted, 200 new.
    for i in (0..110).chain([200]) {
        match i {
            30..=34 => db.namespace(ns).unwrap().delete(&k(i)).unwrap(),
            10..=14 | 17..=19 => {}
            _ => db.namespace(ns).unwrap().put(&k(i), &v(i, "mem")).unwrap(),
        }
    }
    let levels = db.stats().levels;
    assert!(levels[0].tables > 0 && levels[1].tables > 0, "{levels:?}");
    let live: Vec<u32> = (0..110)
        .filter(|i| !(10..15).contains(i) && !(17..20).contains(i) && !(30..35).contains(i))
        .chain([200])
        .collect();
    let want: Vec<Vec<u8>> = live.iter().map(|&i| k(i)).collect();
    let reads = value_reads(&db, ns);
    let all = db
        .namespace(ns)
        .unwrap()
        .list_keys(b"", false, 1000)
        .unwrap();
    assert!(!all.more);
    let got: Vec<Vec<u8>> = all.keys.iter().map(|k| k.to_vec()).collect();
    assert_eq!(got, want, "{layout:?}");
    // Pages, each starting after the last key of the one before.
    for page in [1, 3, 10, 64] {
        let mut start = Vec::new();
        let mut seen = Vec::new();
        loop {
            let l = db
                .namespace(ns)
                .unwrap()
                .list_keys(&start, !seen.is_empty(), page)
                .unwrap();
            seen.extend(l.keys.iter().map(|k| k.to_vec()));
            if !l.more {
                break;
            }
            start = seen.last().cloned().unwrap();
        }
        assert_eq!(seen, want, "{layout:?} page {page}");
    }
    // Inclusive and exclusive starts at a live key, a deleted key and between keys.
    let first_after = |s: &[u8], excl: bool| {
        db.namespace(ns)
            .unwrap()
            .list_keys(s, excl, 1)
            .unwrap()
            .keys[0]
            .to_vec()
    };
    assert_eq!(first_after(&k(5), false), k(5));
    assert_eq!(first_after(&k(5), true), k(6));
    assert_eq!(first_after(&k(12), false), k(15));
    assert_eq!(first_after(&k(16), true), k(20));
    assert_eq!(first_after(b"key0295", false), k(30 + 5));
    let tail = db
        .namespace(ns)
        .unwrap()
        .list_keys(&k(109), true, 5)
        .unwrap();
    assert_eq!((tail.keys.len(), tail.more), (1, false));
    assert_eq!(tail.keys[0].as_ref(), k(200).as_slice());
    let none = db
        .namespace(ns)
        .unwrap()
        .list_keys(&k(200), true, 5)
        .unwrap();
    assert_eq!(none, KeyList::default());
    // `more` with limit 0 says whether anything is there at all.
    assert!(
        db.namespace(ns)
            .unwrap()
            .list_keys(&k(109), false, 0)
            .unwrap()
            .more
    );
    assert!(
        !db.namespace(ns)
            .unwrap()
            .list_keys(&k(200), true, 0)
            .unwrap()
            .more
    );
    // Existence follows the newest version at every layer.
    for i in (0..110).chain([200, 300]) {
        assert_eq!(
            db.namespace(ns).unwrap().contains(&k(i)).unwrap(),
            live.contains(&i),
            "{i}"
        );
    }
    assert_eq!(
        value_reads(&db, ns),
        reads,
        "listing or contains read values"
    );
    // The default namespace still holds its own copy of 0..100, only in L1.
    let reads = value_reads(&db, 0);
    let d = db
        .default_namespace()
        .list_keys(b"", false, usize::MAX)
        .unwrap();
    assert_eq!(d.keys.len(), 100);
    assert!(db.default_namespace().contains(&k(12)).unwrap());
    assert_eq!(
        value_reads(&db, 0),
        reads,
        "listing or contains read values"
    );
    // A get there reads the value log, and the counter shows it.
    db.default_namespace().get(&k(50)).unwrap().unwrap();
    assert!(value_reads(&db, 0) > reads);
}

#[test]
fn list_each_key_once_across_layers_per_namespace() {
    each_key_once(Layout::PerNamespace);
}

#[test]
fn list_each_key_once_across_layers_shared() {
    each_key_once(Layout::Shared);
}

/// A writer moves one key around with batches (delete the old name, put a new one) while
/// flushes and compactions run; every listing sees exactly one key, never half a batch.
#[test]
fn list_sees_batches_whole() {
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap().id();
    let name = |i: u64| format!("key{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).into_bytes();
    db.namespace(ns).unwrap().put(&name(0), b"v").unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..3_000u64 {
                let mut b = WriteBatch::new();
                b.delete(name(i - 1));
                b.put(name(i), vec![b'v'; 100]);
                // Neighbours in other namespaces with the same keys.
                db.default_namespace().put(&name(i), b"x").unwrap();
                db.namespace(ns).unwrap().write(b).unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        let mut lists = 0;
        while !done.load(std::sync::atomic::Ordering::Acquire) || lists < 10 {
            let l = db
                .namespace(ns)
                .unwrap()
                .list_keys(b"", false, usize::MAX)
                .unwrap();
            assert_eq!(l.keys.len(), 1, "listing {lists}: {:?}", l.keys);
            let from = db
                .namespace(ns)
                .unwrap()
                .list_keys(b"key8", false, 1)
                .unwrap();
            assert!(from.keys.len() <= 1 && !from.more);
            lists += 1;
        }
    });
    assert!(db.stats().flushes > 0);
}

/// A flipped byte in a table's data makes the listing fail with corruption naming the table,
/// never return wrong keys.
#[test]
fn flipped_byte_in_a_table_fails_the_listing() {
    let fs = FaultStorage::new();
    let mut opts = common::small_options();
    opts.cache_bytes = 0;
    let db = Db::builder(opts.clone())
        .open_storage(Arc::new(fs.clone()))
        .unwrap();
    for k in 0..2_000u32 {
        db.default_namespace()
            .put(format!("key{k:05}").as_bytes(), b"v")
            .unwrap();
    }
    db.compact_all().unwrap();
    db.close().unwrap();
    drop(db);
    let mut tables: Vec<String> = db_tables(&fs);
    tables.sort();
    let table = &tables[0];
    fs.flip_byte(table, fs.file_len(table).unwrap() / 3)
        .unwrap();
    let db = Db::builder(opts)
        .open_storage(Arc::new(fs.clone()))
        .unwrap();
    match db.default_namespace().list_keys(b"", false, usize::MAX) {
        Err(e @ Error::Corruption { .. }) => {
            assert!(
                e.to_string().contains(table.as_str()),
                "{e} does not name {table}"
            )
        }
        other => panic!("listing over a flipped byte gave {other:?}"),
    }
}

fn db_tables(fs: &FaultStorage) -> Vec<String> {
    use cerberus_engine::storage::Storage;
    fs.list()
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

#[test]
fn list_of_closed_db_fails() {
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    db.default_namespace().put(b"a", b"1").unwrap();
    db.close().unwrap();
    assert!(matches!(
        db.default_namespace().list_keys(b"", false, 10),
        Err(Error::Closed)
    ));
    assert!(matches!(
        db.default_namespace().contains(b"a"),
        Err(Error::Closed)
    ));
    assert!(matches!(db.sync_log(), Err(Error::Closed)));
}

fn crash_and_reopen(fs: &FaultStorage, db: Db, opts: &Options) -> Db {
    fs.crash();
    drop(db);
    fs.restart();
    Db::builder(opts.clone())
        .open_storage(Arc::new(fs.clone()))
        .unwrap()
}

/// With `Options::sync` off, a write with `WriteOptions::sync` (and everything before it, in
/// the same log) survives a power cut; so does whatever `sync_log` covered.
#[test]
fn sync_write_survives_crash() {
    let fs = FaultStorage::new();
    let mut opts = common::small_options();
    opts.sync = false;
    let sync = WriteOptions { sync: true };
    let mut db = Db::builder(opts.clone())
        .open_storage(Arc::new(fs.clone()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap().id();
    db.default_namespace().put(b"before", b"0").unwrap();
    db.namespace(ns)
        .unwrap()
        .with_write_options(sync)
        .put(b"synced", b"1")
        .unwrap();
    db.default_namespace().put(b"after", b"2").unwrap();
    db = crash_and_reopen(&fs, db, &opts);
    assert_eq!(
        db.namespace(ns).unwrap().get(b"synced").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(
        db.default_namespace().get(b"before").unwrap().as_deref(),
        Some(&b"0"[..])
    );

    let mut batch = WriteBatch::new();
    batch.put(b"b1".to_vec(), b"x".to_vec());
    batch.delete(b"before".to_vec());
    db.namespace(DEFAULT)
        .unwrap()
        .with_write_options(sync)
        .write(batch)
        .unwrap();
    db.namespace(ns)
        .unwrap()
        .with_write_options(sync)
        .delete(b"synced")
        .unwrap();
    db = crash_and_reopen(&fs, db, &opts);
    assert_eq!(
        db.default_namespace().get(b"b1").unwrap().as_deref(),
        Some(&b"x"[..])
    );
    assert_eq!(db.default_namespace().get(b"before").unwrap(), None);
    assert_eq!(db.namespace(ns).unwrap().get(b"synced").unwrap(), None);

    db.default_namespace().put(b"plain", b"3").unwrap();
    db.sync_log().unwrap();
    db = crash_and_reopen(&fs, db, &opts);
    assert_eq!(
        db.default_namespace().get(b"plain").unwrap().as_deref(),
        Some(&b"3"[..])
    );
}

const DEFAULT: Nsid = 0;

/// Sync writes from several threads race plain ones into shared commit groups while a power
/// cut strikes at a random point: every sync write acknowledged before it survives, whoever
/// led its group.
#[test]
fn concurrent_sync_writes_survive_crash() {
    let mut rng = SmallRng::seed_from_u64(common::seed(23));
    let mut opts = common::small_options();
    opts.sync = false;
    for round in 0..40 {
        let fs = FaultStorage::new();
        let db = Db::builder(opts.clone())
            .open_storage(Arc::new(fs.clone()))
            .unwrap();
        fs.crash_after_ops(Some(rng.gen_range(20..300)));
        let acked: Vec<Vec<String>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4u32)
                .map(|t| {
                    let db = &db;
                    s.spawn(move || {
                        let mut acked = Vec::new();
                        for i in 0..2_000u32 {
                            let k = format!("t{t}-{i:04}");
                            let v = common::value_for(i, 1, 40);
                            let r = if t < 2 {
                                db.default_namespace()
                                    .with_write_options(WriteOptions { sync: true })
                                    .put(k.as_bytes(), &v)
                            } else {
                                // Plain writers send batches, so they often lead groups.
                                let mut b = WriteBatch::new();
                                for j in 0..4 {
                                    b.put(format!("{k}-{j}").into_bytes(), v.clone());
                                }
                                db.default_namespace().write(b)
                            };
                            if r.is_err() {
                                break;
                            }
                            acked.push(k);
                        }
                        acked
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        fs.crash_after_ops(None);
        let db = crash_and_reopen(&fs, db, &opts);
        for (t, keys) in acked.iter().enumerate().take(2) {
            for k in keys {
                assert!(
                    db.default_namespace().contains(k.as_bytes()).unwrap(),
                    "round {round}: acknowledged sync write {k} of thread {t} lost"
                );
            }
        }
    }
}

/// Listings count their reads apart from gets, so per-get figures are the gets' alone; the
/// key estimate counts every version until compaction leaves one per live key.
#[test]
fn listing_reads_and_key_estimate_apart_from_gets() {
    for layout in [Layout::PerNamespace, Layout::Shared] {
        let mut opts = common::small_options();
        opts.layout = layout;
        opts.auto_compaction = false;
        opts.memtable_bytes = 1 << 20;
        // Every read reaches storage: the listing's blocks would be cached for the get.
        opts.cache_bytes = 0;
        let db = Db::builder(opts)
            .open_storage(Arc::new(MemStorage::new()))
            .unwrap();
        let a = db.create_namespace("a").unwrap().id();
        let b = db.create_namespace("b").unwrap().id();
        for i in 0..300 {
            db.namespace(a).unwrap().put(&key(i), &[7u8; 100]).unwrap();
            db.namespace(b).unwrap().put(&key(i), &[8u8; 100]).unwrap();
        }
        db.flush().unwrap();
        // Versions in the memtable and in L0 (shared by both namespaces): overwrites and
        // deletes are counted until compaction.
        for i in 0..50 {
            db.namespace(a).unwrap().put(&key(i), b"again").unwrap();
            db.namespace(a).unwrap().delete(&key(i + 100)).unwrap();
        }
        assert_eq!(
            db.namespace(a).unwrap().stats().unwrap().keys_estimate,
            400,
            "{layout:?}"
        );
        assert_eq!(
            db.namespace(b).unwrap().stats().unwrap().keys_estimate,
            300,
            "{layout:?}"
        );
        db.compact_all().unwrap();
        assert_eq!(
            db.namespace(a).unwrap().stats().unwrap().keys_estimate,
            250,
            "{layout:?}"
        );
        assert_eq!(
            db.namespace(b).unwrap().stats().unwrap().keys_estimate,
            300,
            "{layout:?}"
        );

        let before = db.namespace(a).unwrap().stats().unwrap();
        let mut start = Vec::new();
        let mut listed = 0;
        loop {
            let page = db
                .namespace(a)
                .unwrap()
                .list_keys(&start, !start.is_empty(), 64)
                .unwrap();
            listed += page.keys.len() as u64;
            match (page.more, page.keys.last()) {
                (true, Some(k)) => start = k.to_vec(),
                _ => break,
            }
        }
        assert_eq!(listed, 250);
        let after = db.namespace(a).unwrap().stats().unwrap();
        assert_eq!(after.listings.calls - before.listings.calls, 4);
        // Each page but the last read one key past itself to learn that more follow.
        assert_eq!(after.listings.keys - before.listings.keys, 250 + 3);
        let data = IoPurpose::Data as usize;
        assert!(after.listings.pages[data] > before.listings.pages[data]);
        assert_eq!(
            after.pages, before.pages,
            "{layout:?}: a listing counted as gets"
        );
        assert_eq!(after.gets, before.gets);

        assert!(db.namespace(a).unwrap().get(&key(200)).unwrap().is_some());
        let got = db.namespace(a).unwrap().stats().unwrap();
        assert_eq!(got.gets, 1);
        // Its data block, or with a point index only its value record.
        assert!(
            got.pages.iter().sum::<u64>() > after.pages.iter().sum::<u64>(),
            "{layout:?}: a get read no page"
        );
        assert_eq!(got.listings.pages, after.listings.pages);
        // The database totals still hold both.
        let total = db.stats();
        assert!(total.pages[data] >= got.pages[data] + got.listings.pages[data]);
    }
}
