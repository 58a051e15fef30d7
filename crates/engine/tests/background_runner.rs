//! An embedder runs the background work (`Options::background_runner`): the database starts
//! no threads of its own, writes that wait for a flush get it from the runner's threads, and
//! nothing is lost.

use cerberus_engine::{BackgroundRunner, BackgroundStep, Db, Options};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

#[test]
fn a_runner_of_the_embedders_runs_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded::<()>();
    let wakes = Arc::new(AtomicU64::new(0));
    let w = wakes.clone();
    let opts = Options {
        memtable_bytes: 256 << 10,
        l0_compaction_trigger: 2,
        background_runner: Some(BackgroundRunner(Arc::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(());
        }))),
        ..Options::default()
    };
    let db = Arc::new(OnceLock::<Db>::new());
    let stop = Arc::new(AtomicBool::new(false));
    // Two threads, as the engine would start: a GC may wait for a flush.
    let runners: Vec<_> = (0..2)
        .map(|_| {
            let (rx, db, stop) = (rx.clone(), db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut ran = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if rx.recv_timeout(Duration::from_millis(100)).is_err() {
                        continue;
                    }
                    let Some(db) = db.get() else { continue };
                    while let BackgroundStep::Ran(_) = db.run_background_job() {
                        ran += 1;
                    }
                }
                ran
            })
        })
        .collect();
    let _ = db.set(Db::open(dir.path(), opts).unwrap());
    let d = db.get().unwrap();
    let ns = d.create_namespace("t").unwrap();
    let value = vec![3u8; 1000];
    for i in 0..20_000u32 {
        ns.put(format!("k{i:06}").as_bytes(), &value).unwrap();
    }
    d.wait_for_compactions().unwrap();
    let s = d.stats();
    assert!(
        s.flushes >= 10 && s.compactions >= 1,
        "{} flushes, {} compactions",
        s.flushes,
        s.compactions
    );
    assert!(wakes.load(Ordering::Relaxed) > 0);
    for i in (0..20_000u32).step_by(997) {
        assert_eq!(
            ns.get(format!("k{i:06}").as_bytes())
                .unwrap()
                .unwrap()
                .len(),
            1000
        );
    }
    d.close().unwrap();
    assert_eq!(d.run_background_job(), BackgroundStep::Stopped);
    stop.store(true, Ordering::Relaxed);
    let ran: u64 = runners.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(ran >= s.flushes);
}
