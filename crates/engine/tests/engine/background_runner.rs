//! An embedder runs the background work (`Options::background_runner`): the database starts
//! no threads of its own, writes that wait for a flush get it from the runner's threads, an
//! index's backfill runs there too, and nothing is lost.

use cerberus_engine::QueryResult;
use cerberus_engine::Readable;
use cerberus_engine::{BackgroundRunner, BackgroundStep, Db, IndexKind, JobKind, Options};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

/// Two threads, as the engine would start (a GC or a backfill may wait for a flush), running
/// jobs whenever the database calls the runner.
struct Runner {
    db: Arc<OnceLock<Db>>,
    stop: Arc<AtomicBool>,
    wakes: Arc<AtomicU64>,
    /// Each job run, and the thread that ran it.
    ran: Arc<Mutex<Vec<(JobKind, ThreadId)>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Runner {
    /// The database at `path` with `opts`, its background run by a new runner.
    fn open(path: &std::path::Path, opts: Options) -> Runner {
        let (runner, background) = Runner::start();
        let mut opts = opts;
        opts.background_runner = Some(background);
        let _ = runner.db.set(Db::open(path, opts).unwrap());
        runner
    }

    fn db(&self) -> &Db {
        self.db.get().unwrap()
    }

    fn start() -> (Runner, BackgroundRunner) {
        let (tx, rx) = crossbeam_channel::unbounded::<()>();
        let wakes = Arc::new(AtomicU64::new(0));
        let w = wakes.clone();
        let runner = BackgroundRunner(Arc::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(());
        }));
        let db = Arc::new(OnceLock::<Db>::new());
        let stop = Arc::new(AtomicBool::new(false));
        let ran = Arc::new(Mutex::new(Vec::new()));
        let threads = (0..2)
            .map(|_| {
                let (rx, db, stop, ran) = (rx.clone(), db.clone(), stop.clone(), ran.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if rx.recv_timeout(Duration::from_millis(100)).is_err() {
                            continue;
                        }
                        let Some(db) = db.get() else { continue };
                        while let BackgroundStep::Ran(kind) = db.run_background_job() {
                            ran.lock().push((kind, std::thread::current().id()));
                        }
                    }
                })
            })
            .collect();
        let r = Runner {
            db,
            stop,
            wakes,
            ran,
            threads,
        };
        (r, runner)
    }

    fn count(&self, kind: JobKind) -> usize {
        self.ran.lock().iter().filter(|(k, _)| *k == kind).count()
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
    }
}

#[test]
fn a_runner_of_the_embedders_runs_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.memtable_bytes = 256 << 10;
    opts.l0_compaction_trigger = 2;
    let runner = Runner::open(dir.path(), opts);
    let d = runner.db();
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
    assert!(runner.wakes.load(Ordering::Relaxed) > 0);
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
    assert!(runner.count(JobKind::Flush) as u64 >= s.flushes);
    runner.stop();
}

#[test]
fn an_index_backfill_runs_on_the_runners_threads() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.memtable_bytes = 64 << 10;
    let runner = Runner::open(dir.path(), opts);
    let d = runner.db();
    let ns = d.create_namespace("t").unwrap();
    for i in 0..3000u32 {
        let doc = serde_json::json!({ "g": i % 10, "pad": "x".repeat(100) });
        ns.put(format!("k{i:05}").as_bytes(), doc.to_string().as_bytes())
            .unwrap();
    }
    ns.create_index("g", IndexKind::Classic).unwrap();
    // Ready on return, with every record stored before it.
    assert!(ns.list_indexes().unwrap()[0].ready);
    let QueryResult { value: pks, .. } = ns
        .get_by_secondary("g", &serde_json::json!(3), None)
        .unwrap();
    assert_eq!(pks.len(), 300);
    let me = std::thread::current().id();
    // The runner records the job once `run_background_job` returns, just after the backfill
    // answered `create_index`.
    let t = std::time::Instant::now();
    while runner.count(JobKind::Backfill) == 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(2));
    }
    let backfills: Vec<ThreadId> = runner
        .ran
        .lock()
        .iter()
        .filter(|(k, _)| *k == JobKind::Backfill)
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(backfills.len(), 1);
    assert_ne!(backfills[0], me);
    // A second index on the same attribute is refused before any backfill.
    assert!(ns.create_index("g", IndexKind::Classic).is_err());
    assert_eq!(runner.count(JobKind::Backfill), 1);
    d.close().unwrap();
    runner.stop();
}

/// An index whose ready mark waits for a flush when the database closes (a second create
/// within the backfills' flush interval) is backfilled again after the reopen: with a runner
/// that runs nothing before the open returns, as a background job (the open used to wait
/// for a flush nobody could run, forever).
#[test]
fn a_reopen_with_a_runner_finishes_an_unrecorded_backfill() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Runner::open(dir.path(), Options::default());
    let ns = runner.db().create_namespace("t").unwrap();
    for i in 0..200u32 {
        let doc = serde_json::json!({ "g": i % 10, "h": i % 4 });
        ns.put(format!("k{i:05}").as_bytes(), doc.to_string().as_bytes())
            .unwrap();
    }
    ns.create_index("g", IndexKind::Classic).unwrap();
    ns.create_index("h", IndexKind::Classic).unwrap();
    let id = ns.id();
    drop(ns);
    runner.db().close().unwrap();
    runner.stop();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let path = dir.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(Runner::open(&path, Options::default()));
    });
    // A bound for a hang, not for speed.
    let runner = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the open returned");
    let ns = runner.db().namespace(id).unwrap();
    let t = std::time::Instant::now();
    while !ns.list_indexes().unwrap().iter().all(|i| i.ready) {
        assert!(t.elapsed() < Duration::from_secs(60), "never ready");
        std::thread::sleep(Duration::from_millis(5));
    }
    let QueryResult { value: pks, .. } = ns
        .get_by_secondary("h", &serde_json::json!(3), None)
        .unwrap();
    assert_eq!(pks.len(), 50);
    runner.db().close().unwrap();
    runner.stop();
}

/// `Db::write_pressure` says what the write controller would do to a write made now, with
/// background work run by hand (a runner that runs nothing by itself): a full memtable with
/// the frozen one not flushed stops writes, and L0 at its slowdown trigger slows them.
#[test]
fn write_pressure_follows_the_write_controller() {
    use cerberus_engine::WritePressure;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.memtable_bytes = 4096;
    opts.max_immutable_memtables = 1;
    opts.l0_compaction_trigger = 2;
    opts.l0_slowdown_trigger = 2;
    opts.l0_stop_trigger = 4;
    opts.background_runner = Some(BackgroundRunner(Arc::new(|| {})));
    let db = Db::open(dir.path(), opts).unwrap();
    let ns = db.create_namespace("t").unwrap();
    let value = vec![7u8; 5000];
    assert_eq!(db.write_pressure(), WritePressure::None);
    // Full, but the next write may freeze it: nothing frozen yet.
    ns.put(b"a", &value).unwrap();
    assert_eq!(db.write_pressure(), WritePressure::None);
    // Frozen and not flushed, and the new memtable full again: the next write would wait.
    ns.put(b"b", &value).unwrap();
    assert_eq!(db.write_pressure(), WritePressure::Stop);
    assert_eq!(db.run_background_job(), BackgroundStep::Ran(JobKind::Flush));
    assert_eq!(db.write_pressure(), WritePressure::None);
    // A second L0 table: at the slowdown trigger.
    ns.put(b"c", &value).unwrap();
    assert_eq!(db.run_background_job(), BackgroundStep::Ran(JobKind::Flush));
    assert_eq!(db.write_pressure(), WritePressure::Slowdown);
    while let BackgroundStep::Ran(_) = db.run_background_job() {}
    assert_eq!(db.write_pressure(), WritePressure::None);
    for k in [b"a", b"b", b"c"] {
        assert_eq!(ns.get(k).unwrap().as_deref(), Some(&value[..]));
    }
}

/// A query pins its view for the call alone: it wakes no background thread (each query's pin
/// took an expiry, and registering it woke the background: a futex wake and a thread switch
/// on a core serving clients, about a tenth of a small top-K's time). A snapshot a caller
/// keeps still gets its expiry, and the background is woken to keep it when it would look
/// too late.
#[test]
fn queries_wake_no_background_thread() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.snapshot_max_age = Some(std::time::Duration::from_millis(300));
    let runner = Runner::open(dir.path(), opts);
    let db = runner.db();
    let ns = db.create_namespace("t").unwrap();
    ns.create_index("n", IndexKind::Classic).unwrap();
    for i in 0..500u32 {
        let v = serde_json::json!({"n": i, "c": i % 2});
        ns.put(format!("k{i:04}").as_bytes(), v.to_string().as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let before = runner.wakes.load(Ordering::Relaxed);
    let f = cerberus_engine::Filter::parse(&serde_json::json!({"c": 1})).unwrap();
    let top = cerberus_engine::TopOptions {
        by: "n".into(),
        desc: true,
        k: 5,
        projection: None,
    };
    let count = cerberus_engine::Aggregate::parse("count", None).unwrap();
    for _ in 0..50 {
        assert_eq!(ns.top(&f, &top).unwrap().value.len(), 5);
        assert_eq!(ns.aggregate(&f, &count).unwrap().value, 250);
        let page = ns
            .find(&f, &cerberus_engine::FindOptions::default())
            .unwrap();
        assert_eq!(page.value.len(), 250);
        let n = serde_json::json!(7);
        assert_eq!(ns.get_by_secondary("n", &n, None).unwrap().value.len(), 1);
    }
    assert_eq!(runner.wakes.load(Ordering::Relaxed), before);
    // A snapshot that expires before the runner's next look (`idle_settle_ms`, 1 s here)
    // wakes it; one that expires after that snapshot does not (the runner, looking at the
    // first's expiry, plans for the rest).
    let snap = ns.snapshot();
    assert!(snap.expires_at().is_some());
    let woken = runner.wakes.load(Ordering::Relaxed);
    assert!(woken > before);
    // Past the millisecond a look adds to an expiry (`Snapshots::plan_look`).
    std::thread::sleep(std::time::Duration::from_millis(5));
    let later = ns.snapshot();
    assert!(later.expires_at() >= snap.expires_at());
    assert_eq!(runner.wakes.load(Ordering::Relaxed), woken);
}
