//! A trivial move whose manifest edit fails (docs/faults.md, "a failed edit orphans only
//! its new tables"): the moved table is named by every manifest, so the next manifest
//! must keep it.

use super::{options, tables};
use cerberus_engine::storage::{Fault, FaultError, FaultStorage, IoKind};
use cerberus_engine::Readable;
use cerberus_engine::{BackgroundRunner, BackgroundStep, Db, JobKind, Layout, Options};
use std::sync::Arc;

/// One shared tree with a small L1, its background work run only by the test, one job at
/// a time, so that the jobs after a flush come in the same order every run.
fn moving_options() -> Options {
    let mut o = options();
    o.layout = Layout::Shared;
    o.auto_compaction = true;
    o.l0_compaction_trigger = 1;
    // Room for the 200 puts in memory (about 300 bytes each with their record and slot):
    // none is frozen before the test's flush, which only the test's jobs would run.
    o.memtable_bytes = 256 << 10;
    o.level1_bytes = 1024;
    o.target_table_bytes = 512;
    o.background_runner = Some(BackgroundRunner(Arc::new(|| {})));
    o
}

/// 200 keys of namespace "a" flushed to one L0 table, then the background jobs that
/// follow, one by one, the `fault_at`-th with its first sync failing. The jobs that were
/// trivial moves (a compaction that left the same table files): their index, and whether
/// a fault failed them.
fn flush_then_compact(fs: &FaultStorage, fault_at: Option<usize>) -> (Db, Vec<(usize, bool)>) {
    let db = Db::builder(moving_options())
        .open_storage(Arc::new(fs.clone()))
        .expect("open");
    let ns = db.create_namespace("a").unwrap();
    for i in 0..200u8 {
        ns.put(&[b'k', i], &[i; 100]).unwrap();
    }
    std::thread::scope(|s| {
        let flushing = s.spawn(|| db.flush());
        while db.run_background_job() != BackgroundStep::Ran(JobKind::Flush) {
            std::thread::yield_now();
        }
        flushing.join().unwrap().unwrap();
    });
    let mut moves = Vec::new();
    for j in 0..32 {
        if fault_at == Some(j) {
            fs.inject(Some(Fault {
                kind: IoKind::Sync,
                nth: 0,
                error: FaultError::NoSpace,
                sticky: false,
                partial: false,
            }));
        }
        let (before, fired) = (tables(fs), fs.faults_fired());
        let step = db.run_background_job();
        fs.inject(None);
        let failed = fs.faults_fired() > fired;
        match step {
            BackgroundStep::Ran(JobKind::Compaction) if tables(fs) == before => {
                moves.push((j, failed))
            }
            BackgroundStep::Ran(_) => {}
            _ if fault_at.is_some_and(|f| j <= f + 1) => {}
            _ => break,
        }
    }
    (db, moves)
}

#[test]
fn a_failed_trivial_move_keeps_the_table_it_moved() {
    let (_, moves) = flush_then_compact(&FaultStorage::new(), None);
    // The workload must reach a move, or this test proves nothing.
    let Some(&(at, _)) = moves.first() else {
        panic!("no trivial move among the jobs");
    };
    let fs = FaultStorage::new();
    let (db, moves) = flush_then_compact(&fs, Some(at));
    assert!(
        moves.contains(&(at, true)),
        "the move at job {at} did not fail: {moves:?}"
    );
    // The failed edit leaves the manifest broken: the next edit writes a new one.
    db.create_namespace("b").unwrap();
    drop(db);
    let db = Db::builder(moving_options())
        .open_storage(Arc::new(fs.clone()))
        .expect("reopen after the failed move");
    let ns = db.namespace(db.namespace_id("a").unwrap()).unwrap();
    for i in 0..200u8 {
        assert_eq!(
            ns.get(&[b'k', i]).unwrap().as_deref(),
            Some(&[i; 100][..]),
            "k{i}"
        );
    }
}
