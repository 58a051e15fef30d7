//! Per-namespace trees: L0 compactions split L0 into namespace runs, each namespace merges
//! its own runs into its own L1, a settled (or idle) engine leaves nothing in the shared L0,
//! and one tenant's writes never rewrite another tenant's tree.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Nsid, Options};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn key(i: u32) -> Vec<u8> {
    // Scattered, so every namespace's part of an L0 table spans its whole key range.
    format!("k{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes()
}

fn fill(db: &Db, ns: Nsid, n: u32, version: u64) {
    for i in 0..n {
        db.namespace(ns)
            .unwrap()
            .put(&key(i), &common::value_for(i, version, 40))
            .unwrap();
    }
}

fn check(db: &Db, ns: Nsid, n: u32, version: u64) {
    for i in 0..n {
        let want = common::value_for(i, version, 40);
        assert_eq!(
            db.namespace(ns).unwrap().get(&key(i)).unwrap().as_deref(),
            Some(&want[..]),
            "ns {ns} key {i}"
        );
    }
}

fn open(opts: Options) -> Db {
    let storage: StorageRef = Arc::new(MemStorage::new());
    Db::builder(opts).open_storage(storage).unwrap()
}

#[test]
fn settled_engine_leaves_nothing_in_shared_l0_or_runs() {
    let mut opts = common::small_options();
    opts.idle_settle_ms = 0;
    let db = open(opts);
    let tenants: Vec<Nsid> = (0..4)
        .map(|t| db.create_namespace(&format!("t{t}")).unwrap().id())
        .collect();
    for (v, &ns) in tenants.iter().enumerate() {
        fill(&db, ns, 3_000, v as u64);
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].tables, 0, "{s:?}");
    assert_eq!(s.runs.tables, 0, "{s:?}");
    // The write amplification's terms: every compaction's bytes in one of them.
    assert!(s.flush_bytes_written > 0 && s.l0_bytes_written > 0, "{s:?}");
    assert!(
        s.run_merge_bytes_written + s.consolidation_bytes_written > 0,
        "{s:?}"
    );
    assert_eq!(
        s.l0_bytes_written
            + s.run_merge_bytes_written
            + s.level_bytes_written
            + s.consolidation_bytes_written,
        s.compaction_bytes_written,
        "{s:?}"
    );
    for (v, &ns) in tenants.iter().enumerate() {
        let n = db.namespace(ns).unwrap().stats().unwrap();
        assert_eq!(n.levels[0].tables, 0);
        // In its own tree (L1 or deeper: a written tree's L1 is its share of the budget).
        let own: usize = n.levels.iter().skip(1).map(|l| l.tables).sum();
        assert!(own > 0, "{n:?}");
        assert!(n.compaction_bytes_written > 0, "{n:?}");
        check(&db, ns, 3_000, v as u64);
    }
}

#[test]
fn an_idle_engine_drains_shared_l0_by_itself() {
    let mut opts = common::small_options();
    opts.idle_settle_ms = 100;
    opts.l0_compaction_trigger = 4;
    opts.l0_slowdown_trigger = 8;
    opts.l0_stop_trigger = 12;
    let db = open(opts);
    let a = db.create_namespace("a").unwrap().id();
    let b = db.create_namespace("b").unwrap().id();
    fill(&db, a, 200, 1);
    fill(&db, b, 200, 2);
    db.flush().unwrap();
    // One L0 table, below the trigger: only idleness moves it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while db.stats().levels[0].tables > 0 || db.stats().runs.tables > 0 {
        assert!(Instant::now() < deadline, "{:?}", db.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
    check(&db, a, 200, 1);
    check(&db, b, 200, 2);
}

#[test]
fn other_tenants_compactions_do_not_rewrite_an_idle_tree() {
    // Value-log GC moves the live values of every namespace out of a segment it collects,
    // and so rewrites their index entries: this test is about compaction alone.
    let mut opts = common::small_options();
    opts.idle_settle_ms = 0;
    opts.vlog_gc_dead_ratio = 0.0;
    let db = open(opts);
    let idle = db.create_namespace("idle").unwrap().id();
    let busy: Vec<Nsid> = (0..3)
        .map(|t| db.create_namespace(&format!("busy{t}")).unwrap().id())
        .collect();
    fill(&db, idle, 2_000, 7);
    db.wait_for_compactions().unwrap();
    let before = db.namespace(idle).unwrap().stats().unwrap();
    assert!(before.levels[1].tables > 0, "{before:?}");
    let files_before = table_files(&db);
    for round in 0..4u64 {
        for &ns in &busy {
            fill(&db, ns, 3_000, round);
        }
    }
    db.wait_for_compactions().unwrap();
    let after = db.namespace(idle).unwrap().stats().unwrap();
    assert!(db.stats().compactions > 20, "{:?}", db.stats());
    assert_eq!(
        after.compaction_bytes_written, before.compaction_bytes_written,
        "compactions wrote into the idle namespace's tree"
    );
    assert_eq!(after.levels, before.levels);
    // Its table files are the very same ones.
    let idle_files: Vec<_> = files_before
        .iter()
        .filter(|f| table_files(&db).contains(f))
        .collect();
    let tables: usize = before.levels.iter().skip(1).map(|l| l.tables).sum();
    assert!(idle_files.len() >= tables);
    check(&db, idle, 2_000, 7);
}

fn table_files(db: &Db) -> Vec<String> {
    let mut v: Vec<String> = db
        .storage()
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect();
    v.sort();
    v
}

#[test]
fn runs_accumulate_up_to_their_trigger_and_reads_see_them() {
    let mut opts = common::small_options();
    opts.idle_settle_ms = 0;
    opts.run_compaction_trigger = 3;
    opts.l0_compaction_trigger = 1;
    // Only the explicit flushes below make L0 tables.
    opts.memtable_bytes = 1 << 20;
    let db = open(opts);
    let a = db.create_namespace("a").unwrap().id();
    let b = db.create_namespace("b").unwrap().id();
    let mut max_runs = 0;
    for v in 0..6u64 {
        fill(&db, a, 300, v);
        fill(&db, b, 300, 100 + v);
        db.flush().unwrap();
        // Wait for the split of that flush (L0 trigger 1), then look at the runs.
        let deadline = Instant::now() + Duration::from_secs(10);
        while db.stats().levels[0].tables > 0 {
            assert!(Instant::now() < deadline, "{:?}", db.stats());
            std::thread::sleep(Duration::from_millis(5));
        }
        let runs = db.namespace(a).unwrap().stats().unwrap().runs.tables;
        assert!(runs <= 3, "{runs} runs, trigger 3");
        max_runs = max_runs.max(runs);
        check(&db, a, 300, v);
        check(&db, b, 300, 100 + v);
    }
    assert!(max_runs >= 2, "runs never accumulated: {max_runs}");
    let s = db.namespace(a).unwrap().stats().unwrap();
    assert!(s.runs.tables <= 3, "{s:?}");
    db.compact_range(None, None).unwrap();
    check(&db, a, 300, 5);
    check(&db, b, 300, 105);
}

/// 64 namespaces, created, written and destroyed by four threads while background
/// compactions (splits, run merges, level compactions) and value-log GC run, and a fifth
/// thread settles the tree and collects the log now and then. Each thread checks its own
/// namespaces against a `BTreeMap` as it goes, and everything is checked again after a
/// reopen.
#[test]
fn model_64_namespaces_with_background_work() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, Ordering};

    type Model = BTreeMap<Nsid, BTreeMap<Vec<u8>, Vec<u8>>>;
    let seed = common::seed(64);
    let storage: StorageRef = Arc::new(MemStorage::new());
    let mut opts = common::small_options();
    opts.vlog_gc_dead_ratio = 0.3;
    opts.idle_settle_ms = 50;
    let db = Db::builder(opts.clone())
        .open_storage(storage.clone())
        .unwrap();
    let stop = AtomicBool::new(false);
    let models: Vec<Model> = std::thread::scope(|s| {
        let db = &db;
        let stop = &stop;
        let settler = s.spawn(move || {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(30));
                db.wait_for_compactions().unwrap();
                db.gc_value_log().unwrap();
                rounds += 1;
            }
            rounds
        });
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed ^ ((w + 1) * 0x9e37_79b9));
                    let mut model: Model = BTreeMap::new();
                    let mut created = 0;
                    let mut create = |model: &mut Model| {
                        created += 1;
                        let ns = db
                            .create_namespace(&format!("w{w}-{created}"))
                            .unwrap()
                            .id();
                        model.insert(ns, BTreeMap::new());
                    };
                    for _ in 0..16 {
                        create(&mut model);
                    }
                    for step in 0..6_000u64 {
                        let live: Vec<Nsid> = model.keys().copied().collect();
                        let ns = live[rng.gen_range(0..live.len())];
                        let k = format!("key{:04}", rng.gen_range(0..300u32)).into_bytes();
                        match rng.gen_range(0..100) {
                            0..=49 => {
                                let v = common::value_for(step as u32, w, rng.gen_range(1..90));
                                db.namespace(ns).unwrap().put(&k, &v).unwrap();
                                model.get_mut(&ns).unwrap().insert(k, v);
                            }
                            50..=59 => {
                                db.namespace(ns).unwrap().delete(&k).unwrap();
                                model.get_mut(&ns).unwrap().remove(&k);
                            }
                            60..=97 => {
                                let got = db.namespace(ns).unwrap().get(&k).unwrap();
                                let want = model[&ns].get(&k);
                                assert_eq!(
                                    got.as_deref(),
                                    want.map(Vec::as_slice),
                                    "seed {seed} writer {w} step {step} ns {ns}"
                                );
                            }
                            _ => {
                                db.destroy_namespace(ns).unwrap();
                                model.remove(&ns);
                                create(&mut model);
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        let models = writers.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        assert!(settler.join().unwrap() > 0);
        models
    });
    let check = |db: &Db| {
        let mut live = 1; // the default namespace
        for model in &models {
            for (ns, m) in model {
                live += 1;
                let n = db.namespace(*ns).unwrap().stats().unwrap();
                assert!(n.runs.tables <= opts.l0_stop_trigger, "{n:?}");
                for i in 0..300u32 {
                    let k = format!("key{i:04}").into_bytes();
                    assert_eq!(
                        db.namespace(*ns).unwrap().get(&k).unwrap().as_deref(),
                        m.get(&k).map(Vec::as_slice),
                        "seed {seed} ns {ns} key {i}"
                    );
                }
            }
        }
        assert_eq!(db.list_namespaces().len(), live);
    };
    check(&db);
    db.close().unwrap();
    drop(db);
    let db = Db::builder(opts.clone()).open_storage(storage).unwrap();
    check(&db);
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().levels[0].tables, 0);
    assert_eq!(db.stats().runs.tables, 0);
    check(&db);
}
