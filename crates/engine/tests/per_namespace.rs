//! Per-namespace trees: L0 compactions split L0 into namespace runs, each namespace merges
//! its own runs into its own L1, a settled (or idle) engine leaves nothing in the shared L0,
//! and one tenant's writes never rewrite another tenant's tree.

mod common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{Db, Nsid, Options};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn key(i: u32) -> Vec<u8> {
    // Scattered, so every namespace's part of an L0 table spans its whole key range.
    format!("k{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes()
}

fn fill(db: &Db, ns: Nsid, n: u32, version: u64) {
    for i in 0..n {
        db.put_ns(ns, &key(i), &common::value_for(i, version, 40))
            .unwrap();
    }
}

fn check(db: &Db, ns: Nsid, n: u32, version: u64) {
    for i in 0..n {
        let want = common::value_for(i, version, 40);
        assert_eq!(
            db.get_ns(ns, &key(i)).unwrap().as_deref(),
            Some(&want[..]),
            "ns {ns} key {i}"
        );
    }
}

fn open(opts: Options) -> Db {
    let storage: StorageRef = Arc::new(MemStorage::new());
    Db::open_with_storage(storage, opts).unwrap()
}

#[test]
fn settled_engine_leaves_nothing_in_shared_l0_or_runs() {
    let opts = Options {
        idle_settle_ms: 0,
        ..common::small_options()
    };
    let db = open(opts);
    let tenants: Vec<Nsid> = (0..4)
        .map(|t| db.create_namespace(&format!("t{t}")).unwrap())
        .collect();
    for (v, &ns) in tenants.iter().enumerate() {
        fill(&db, ns, 3_000, v as u64);
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].tables, 0, "{s:?}");
    assert_eq!(s.runs.tables, 0, "{s:?}");
    for (v, &ns) in tenants.iter().enumerate() {
        let n = db.namespace_stats(ns).unwrap();
        assert_eq!(n.levels[0].tables, 0);
        assert!(n.levels[1].tables > 0, "{n:?}");
        assert!(n.compaction_bytes_written > 0, "{n:?}");
        check(&db, ns, 3_000, v as u64);
    }
}

#[test]
fn an_idle_engine_drains_shared_l0_by_itself() {
    let opts = Options {
        idle_settle_ms: 100,
        l0_compaction_trigger: 4,
        l0_slowdown_trigger: 8,
        l0_stop_trigger: 12,
        ..common::small_options()
    };
    let db = open(opts);
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
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
    let opts = Options {
        idle_settle_ms: 0,
        vlog_gc_dead_ratio: 0.0,
        ..common::small_options()
    };
    let db = open(opts);
    let idle = db.create_namespace("idle").unwrap();
    let busy: Vec<Nsid> = (0..3)
        .map(|t| db.create_namespace(&format!("busy{t}")).unwrap())
        .collect();
    fill(&db, idle, 2_000, 7);
    db.wait_for_compactions().unwrap();
    let before = db.namespace_stats(idle).unwrap();
    assert!(before.levels[1].tables > 0, "{before:?}");
    let files_before = table_files(&db);
    for round in 0..4u64 {
        for &ns in &busy {
            fill(&db, ns, 3_000, round);
        }
    }
    db.wait_for_compactions().unwrap();
    let after = db.namespace_stats(idle).unwrap();
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
    let opts = Options {
        idle_settle_ms: 0,
        run_compaction_trigger: 3,
        l0_compaction_trigger: 1,
        ..common::small_options()
    };
    let db = open(opts);
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    let mut max_runs = 0;
    for v in 0..6u64 {
        fill(&db, a, 300, v);
        fill(&db, b, 300, 100 + v);
        db.flush().unwrap();
        max_runs = max_runs.max(db.namespace_stats(a).unwrap().runs.tables);
        check(&db, a, 300, v);
        check(&db, b, 300, 100 + v);
    }
    assert!(max_runs >= 1, "no run was ever seen");
    let s = db.namespace_stats(a).unwrap();
    assert!(s.runs.tables <= 3, "{s:?}");
    db.compact_range(None, None).unwrap();
    check(&db, a, 300, 5);
    check(&db, b, 300, 105);
}
