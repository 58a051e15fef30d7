//! Settled trees at their best shape: an idle namespace's tree is consolidated into one
//! sorted run in its deepest level (once per idle period), a namespace that keeps writing is
//! not, and dynamic level sizing keeps the levels above the last at most last / ratio.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{Db, Namespace, Nsid, Options, ReadOptions, Readable};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(opts: Options) -> Db {
    let storage: StorageRef = Arc::new(MemStorage::new());
    Db::builder(opts).open_storage(storage).unwrap()
}

/// Small trees, quick idleness, no value-log GC (it rewrites index entries of idle
/// namespaces too: these tests are about compaction alone).
fn options(idle_ms: u64) -> Options {
    let mut o = common::small_options();
    o.idle_settle_ms = idle_ms;
    o.vlog_gc_dead_ratio = 0.0;
    o
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `n` random puts (one in eight a delete) over `keys` keys, into `ns` and `model`.
fn write(ns: &Namespace, model: &mut Model, rng: &mut Rng, n: u32, keys: u64) {
    for _ in 0..n {
        let r = rng.next();
        let key = format!("k{:06}", r % keys).into_bytes();
        if r.is_multiple_of(8) {
            ns.delete(&key).unwrap();
            model.remove(&key);
        } else {
            let value = common::value_for((r % keys) as u32, r >> 40, 40);
            ns.put(&key, &value).unwrap();
            model.insert(key, value);
        }
    }
}

/// Every get and a full listing answer as `model` does.
fn check(ns: &Namespace, model: &Model, keys: u64) {
    for i in 0..keys {
        let key = format!("k{i:06}").into_bytes();
        let got = ns.get(&key).unwrap();
        assert_eq!(got.as_deref(), model.get(&key).map(|v| &v[..]), "key {i}");
    }
    let listed: Model = ns
        .iter(ReadOptions::default())
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    assert!(listed == *model, "the listing differs from the model");
}

/// Places the namespace's data sits in below L0: runs, and non-empty levels.
fn places(ns: &Namespace) -> usize {
    let s = ns.stats().unwrap();
    s.runs.tables + s.levels.iter().skip(1).filter(|l| l.tables > 0).count()
}

/// Waits (at most 4 s) until `ns` has been consolidated `n` times.
fn wait_consolidations(ns: &Namespace, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(4);
    while ns.stats().unwrap().consolidations < n {
        assert!(Instant::now() < deadline, "{:?}", ns.stats().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn an_idle_lone_tenant_ends_with_one_level_and_the_same_answers() {
    let db = open(options(150));
    let ns = db.create_namespace("lone").unwrap();
    let (mut model, mut rng) = (Model::new(), Rng(0x5eed));
    write(&ns, &mut model, &mut rng, 6_000, 3_000);
    db.wait_for_compactions().unwrap();
    // Usually L1 over L2 now; if the consolidation already ran during the wait, fine too.
    let done = ns.stats().unwrap().consolidations;
    assert!(places(&ns) >= 2 || done == 1, "{:?}", ns.stats().unwrap());
    wait_consolidations(&ns, 1);
    db.wait_for_compactions().unwrap();
    let s = ns.stats().unwrap();
    assert_eq!(places(&ns), 1, "{s:?}");
    assert_eq!(s.levels[0].tables, 0, "{s:?}");
    check(&ns, &model, 3_000);
    // Once per idle period: no second consolidation while it stays idle.
    std::thread::sleep(Duration::from_millis(400));
    let c = ns.stats().unwrap();
    assert_eq!(c.consolidations, 1);
    assert!(c.consolidation_bytes_written > 0);
    assert!(s.compaction_bytes_written >= c.consolidation_bytes_written);
    let d = db.stats();
    assert_eq!(d.consolidations, 1);
    assert_eq!(d.consolidation_bytes_written, c.consolidation_bytes_written);
    // A gets probes one table of its tree: one filter per get.
    let probes = ns.stats().unwrap().filter_probes;
    for i in 0..200u64 {
        ns.get(format!("k{i:06}").as_bytes()).unwrap();
    }
    assert!(ns.stats().unwrap().filter_probes - probes <= 200);
}

#[test]
fn a_writing_namespace_is_not_consolidated_while_an_idle_one_is() {
    let db = open(options(500));
    let quiet = db.create_namespace("quiet").unwrap();
    let busy = db.create_namespace("busy").unwrap();
    let (mut mq, mut mb, mut rng) = (Model::new(), Model::new(), Rng(0xb05e));
    write(&quiet, &mut mq, &mut rng, 5_000, 2_500);
    write(&busy, &mut mb, &mut rng, 5_000, 2_500);
    // Not `wait_for_compactions`: it settles every namespace at once, idle or not.
    db.flush().unwrap();
    // The busy one writes every few milliseconds until the quiet one is consolidated.
    let deadline = Instant::now() + Duration::from_secs(4);
    while quiet.stats().unwrap().consolidations == 0 {
        assert!(Instant::now() < deadline, "{:?}", quiet.stats().unwrap());
        write(&busy, &mut mb, &mut rng, 20, 2_500);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(busy.stats().unwrap().consolidations, 0);
    assert_eq!(places(&quiet), 1, "{:?}", quiet.stats().unwrap());
    check(&quiet, &mq, 2_500);
    // Once it stops, it is consolidated too (it was a candidate all along).
    db.wait_for_compactions().unwrap();
    if places(&busy) >= 2 {
        wait_consolidations(&busy, 1);
    }
    check(&busy, &mb, 2_500);
    assert_eq!(quiet.stats().unwrap().consolidations, 1);
}

#[test]
fn a_snapshot_reads_what_it_read_across_a_consolidation() {
    let db = open(options(150));
    let ns = db.create_namespace("snap").unwrap();
    let (mut model, mut rng) = (Model::new(), Rng(0x7a7a));
    write(&ns, &mut model, &mut rng, 4_000, 2_000);
    let snap = ns.snapshot();
    let before = model.clone();
    write(&ns, &mut model, &mut rng, 4_000, 2_000);
    db.wait_for_compactions().unwrap();
    if places(&ns) >= 2 {
        wait_consolidations(&ns, 1);
    }
    for i in 0..2_000u64 {
        let key = format!("k{i:06}").into_bytes();
        let got = snap.get(&key).unwrap();
        assert_eq!(got.as_deref(), before.get(&key).map(|v| &v[..]), "key {i}");
    }
    drop(snap);
    check(&ns, &model, 2_000);
}

#[test]
fn dynamic_levels_above_the_last_hold_at_most_last_over_ratio() {
    let mut opts = options(0);
    opts.consolidate_below_bytes = Some(0);
    let ratio = opts.level_size_ratio;
    let table = opts.target_table_bytes;
    let db = open(opts);
    let ns: Nsid = db.create_namespace("large").unwrap().id();
    let ns = db.namespace(ns).unwrap();
    let (mut model, mut rng) = (Model::new(), Rng(0xd1d1));
    write(&ns, &mut model, &mut rng, 30_000, 12_000);
    db.wait_for_compactions().unwrap();
    let s = ns.stats().unwrap();
    let last = (1..s.levels.len())
        .rev()
        .find(|&l| s.levels[l].tables > 0)
        .unwrap();
    assert!(last >= 3, "not a large tree: {:?}", s.levels);
    let mut limit = s.levels[last].target_bytes();
    for level in (1..last).rev() {
        limit /= ratio;
        assert!(
            s.levels[level].target_bytes() <= limit + table,
            "L{level} holds {} bytes over L{last}'s {}: {:?}",
            s.levels[level].target_bytes(),
            s.levels[last].target_bytes(),
            s.levels
        );
    }
    check(&ns, &model, 12_000);
}

/// `wait_for_compactions` asks for the settled shape now: every namespace is consolidated
/// before it returns, without waiting out `idle_settle_ms` (an hour here).
#[test]
fn wait_for_compactions_consolidates_every_namespace_at_once() {
    let db = open(options(3_600_000));
    let (a, b) = (
        db.create_namespace("a").unwrap(),
        db.create_namespace("b").unwrap(),
    );
    let (mut ma, mut mb, mut rng) = (Model::new(), Model::new(), Rng(0xa11));
    for _ in 0..3 {
        write(&a, &mut ma, &mut rng, 3_000, 2_500);
        write(&b, &mut mb, &mut rng, 3_000, 2_500);
    }
    db.wait_for_compactions().unwrap();
    for (ns, model) in [(&a, &ma), (&b, &mb)] {
        let s = ns.stats().unwrap();
        assert_eq!(places(ns), 1, "{s:?}");
        assert_eq!(s.levels[0].tables, 0, "{s:?}");
        check(ns, model, 2_500);
    }
}

/// A tenant consolidated while its last writes sat in the active memtable: other tenants'
/// flushes later bring them into its tree, above the consolidated level. Waiting for the
/// settled shape consolidates it again.
#[test]
fn wait_for_compactions_consolidates_a_tree_its_leftovers_reached_after_its_consolidation() {
    let db = open(options(100));
    let (a, b) = (
        db.create_namespace("a").unwrap(),
        db.create_namespace("b").unwrap(),
    );
    let (mut ma, mut mb, mut rng) = (Model::new(), Model::new(), Rng(0x1ef7));
    for _ in 0..3 {
        write(&a, &mut ma, &mut rng, 3_000, 2_500);
    }
    db.flush().unwrap();
    // Its last writes stay in the active memtable while it is consolidated.
    write(&a, &mut ma, &mut rng, 10, 2_500);
    wait_consolidations(&a, 1);
    let deepest = |ns: &Namespace| {
        let s = ns.stats().unwrap();
        (1..s.levels.len()).rev().find(|&l| s.levels[l].tables > 0)
    };
    assert!(deepest(&a) > Some(1), "{:?}", a.stats().unwrap());
    // Another tenant's writes flush them into its tree.
    for _ in 0..3 {
        write(&b, &mut mb, &mut rng, 3_000, 2_500);
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(places(&a), 1, "{:?}", a.stats().unwrap());
    check(&a, &ma, 2_500);
    check(&b, &mb, 2_500);
}

/// Waiting for the settled shape also collects the value log, whose rewrites of live records
/// reach each tree as runs: the trees are consolidated after GC is done, not again after
/// each of its rounds (here 3-8 consolidations of the first tenant before, 1-2 since: a
/// consolidation's dropped versions can make GC due once more; 8 x 200,000 keys on the NAND
/// model: 293 consolidations, 900 MB, in one settle step before).
#[test]
fn wait_for_compactions_consolidates_after_value_log_gc_not_during_it() {
    let mut opts = options(3_600_000);
    opts.vlog_gc_dead_ratio = 0.2;
    let db = open(opts);
    let tenants: Vec<Namespace> = (0..8)
        .map(|t| db.create_namespace(&format!("t{t}")).unwrap())
        .collect();
    let mut models = vec![Model::new(); tenants.len()];
    let mut rng = Rng(0x6c);
    for _ in 0..4 {
        for (ns, model) in tenants.iter().zip(&mut models) {
            write(ns, model, &mut rng, 3_000, 2_000);
        }
    }
    db.wait_for_compactions().unwrap();
    assert!(db.stats().gc_segments_deleted > 0, "{:?}", db.stats());
    // Once or twice a tenant (before: 3-8 each, 24 or more in all). A tenant's third one
    // happens when its consolidation's dropped versions make GC due once more and that round
    // comes late (seen once in a loaded CI run): bounded by tenant and in all.
    let mut total = 0;
    for (ns, model) in tenants.iter().zip(&models) {
        let s = ns.stats().unwrap();
        assert_eq!(places(ns), 1, "{s:?}");
        assert!(s.consolidations <= 3, "{s:?}");
        total += s.consolidations;
        check(ns, model, 2_000);
    }
    assert!(
        total <= 2 * tenants.len() as u64,
        "{total} consolidations in all"
    );
}

/// A writer that never pauses keeps filling and freezing memtables and keeps background
/// work due: `flush` and `wait_for_compactions` wait for what was written before them, not
/// for a quiet that never comes. Each call must return (a hang is the failure; 120 s is a
/// bound on liveness, not a speed claim), and what was written before a wait is out of L0.
#[test]
fn flush_and_wait_for_compactions_end_while_a_writer_keeps_writing() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let db = Arc::new(open(common::small_options()));
    let ns = db.create_namespace("busy").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (ns, stop, written) = (ns.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                ns.put(format!("k{:05}", i % 20_000).as_bytes(), &[b'v'; 100])
                    .unwrap();
                i += 1;
                written.store(i, Ordering::Relaxed);
                // Paced, as a client is: never stalled, background work always due.
                if i.is_multiple_of(4) {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            i
        })
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = {
        let (db, ns) = (db.clone(), ns.clone());
        std::thread::spawn(move || {
            // The writer under way first: on a loaded machine its thread may start late, and
            // the rounds must meet its writes (CI once saw all five end before its first).
            while written.load(Ordering::Relaxed) < 100 {
                std::thread::sleep(Duration::from_millis(1));
            }
            for round in 0..5 {
                db.flush().unwrap();
                ns.put(b"marker", format!("{round}").as_bytes()).unwrap();
                db.wait_for_compactions().unwrap();
                tx.send(round).unwrap();
            }
        })
    };
    for round in 0..5 {
        let got = rx.recv_timeout(Duration::from_secs(120));
        assert_eq!(
            got,
            Ok(round),
            "round {round} of flush + wait_for_compactions did not end"
        );
    }
    stop.store(true, Ordering::Relaxed);
    waiter.join().unwrap();
    assert!(writer.join().unwrap() > 0);
    assert_eq!(ns.get(b"marker").unwrap().as_deref(), Some(&b"4"[..]));
}
