//! Power cuts at random points (foreground writes, flushes, compactions, recovery itself)
//! through the fault-injecting storage.
//!
//! `sync` on: after reopen every acknowledged write is there and no batch is half applied.
//! `sync` off: the state is that after some prefix of the writes, at least up to the last
//! completed `flush()`, and nothing is corrupt.

use crate::common;

use cerberus_engine::storage::{CrashModel, FaultStorage, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Namespace, Options, ReadOptions, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

const KEYS: u32 = 48;

type State = BTreeMap<u32, Vec<u8>>;

/// One acknowledged (or in-doubt) unit of writes: a put, a delete or a batch.
type Unit = Vec<(u32, Option<Vec<u8>>)>;

fn key(k: u32) -> Vec<u8> {
    format!("k{k:04}").into_bytes()
}

fn options(sync: bool) -> Options {
    let mut o = common::small_options();
    o.sync = sync;
    o.memtable_bytes = 4 << 10;
    o.vlog_segment_bytes = 16 << 10;
    o.target_table_bytes = 2 << 10;
    o.level1_bytes = 8 << 10;
    o
}

fn apply(state: &mut State, unit: &Unit) {
    for (k, v) in unit {
        match v {
            Some(v) => state.insert(*k, v.clone()),
            None => state.remove(k),
        };
    }
}

fn read_state(db: &Db) -> State {
    let mut s = State::new();
    for k in 0..KEYS {
        match db.default_namespace().get(&key(k)) {
            Ok(Some(v)) => {
                s.insert(k, v.to_vec());
            }
            Ok(None) => {}
            Err(e) => panic!("read of {k} after recovery failed: {e}"),
        }
    }
    assert_eq!(
        iterated(&db.default_namespace()),
        s,
        "an iterator disagrees with gets"
    );
    s
}

/// The namespace as an iterator (with value prefetch) reads it after recovery.
fn iterated(ns: &Namespace) -> State {
    let opts = ReadOptions {
        prefetch_degree: 4,
        ..ReadOptions::default()
    };
    ns.iter(opts)
        .unwrap()
        .map(|r| {
            let (k, v) = r.expect("iteration after recovery");
            let k = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            (k, v.to_vec())
        })
        .collect()
}

/// Runs random writes until the armed crash fires (or the budget ends, then crashes by hand).
/// Returns the units that were acknowledged, the unit in doubt, and how many units were
/// certainly durable (covered by a completed flush) when sync is off.
fn workload(db: &Db, rng: &mut SmallRng, version: &mut u64) -> (Vec<Unit>, Option<Unit>, usize) {
    let mut acked = Vec::new();
    let mut durable = 0;
    for _ in 0..rng.gen_range(20..250) {
        let mut value = |rng: &mut SmallRng, k: u32| {
            *version += 1;
            common::value_for(k, *version, rng.gen_range(1..200))
        };
        let (unit, res) = match rng.gen_range(0..100) {
            0..=59 => {
                let k = rng.gen_range(0..KEYS);
                let v = value(rng, k);
                let res = db.default_namespace().put(&key(k), &v);
                (vec![(k, Some(v))], res)
            }
            60..=74 => {
                let k = rng.gen_range(0..KEYS);
                (vec![(k, None)], db.default_namespace().delete(&key(k)))
            }
            75..=94 => {
                let mut batch = WriteBatch::new();
                let mut unit = Unit::new();
                for _ in 0..rng.gen_range(2..6) {
                    let k = rng.gen_range(0..KEYS);
                    if rng.gen_bool(0.8) {
                        let v = value(rng, k);
                        batch.put(key(k), v.clone());
                        unit.push((k, Some(v)));
                    } else {
                        batch.delete(key(k));
                        unit.push((k, None));
                    }
                }
                (unit, db.default_namespace().write(batch))
            }
            95..=98 => {
                let res = db.flush();
                if res.is_ok() {
                    durable = acked.len();
                }
                (Unit::new(), res)
            }
            _ => (Unit::new(), db.compact_all()),
        };
        match res {
            Ok(()) => {
                if !unit.is_empty() {
                    acked.push(unit);
                }
            }
            Err(_) => return (acked, (!unit.is_empty()).then_some(unit), durable),
        }
    }
    (acked, None, durable)
}

/// Opens the database, with a chance of crashing during recovery itself.
fn reopen(fs: &FaultStorage, opts: &Options, rng: &mut SmallRng, expect: &State) -> Db {
    let storage: StorageRef = Arc::new(fs.clone());
    if rng.gen_bool(0.1) {
        fs.crash_after_ops(Some(rng.gen_range(0..12)));
        let attempt = Db::builder(opts.clone()).open_storage(storage.clone());
        fs.crash_after_ops(None);
        if let Ok(db) = attempt {
            if !fs.is_crashed() {
                assert_eq!(&read_state(&db), expect, "state changed by recovery");
                return db;
            }
        }
        fs.crash();
        fs.restart();
    }
    let db = Db::builder(opts.clone())
        .open_storage(storage)
        .expect("reopen after crash");
    assert_eq!(
        &read_state(&db),
        expect,
        "state changed by a crash during recovery"
    );
    db
}

fn crash_run(sync: bool, seed: u64, crash_points: usize, model: CrashModel) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let fs = FaultStorage::new();
    fs.set_crash_model(model);
    let opts = options(sync);
    let mut state = State::new();
    let mut version = 0;
    let mut db = Db::builder(opts.clone())
        .open_storage(Arc::new(fs.clone()))
        .unwrap();
    for point in 0..crash_points {
        fs.crash_after_ops(Some(rng.gen_range(1..400)));
        let (acked, doubt, durable) = workload(&db, &mut rng, &mut version);
        fs.crash_after_ops(None);
        // Stop the old instance (its background threads hit the crash too), then power on.
        fs.crash();
        drop(db);
        fs.restart();
        db = Db::builder(opts.clone())
            .open_storage(Arc::new(fs.clone()))
            .unwrap_or_else(|e| panic!("seed {seed} point {point}: reopen failed: {e}"));
        let got = read_state(&db);
        if sync {
            // Every acknowledged unit survives; the one in doubt survives whole or not at all.
            let mut acked_state = state.clone();
            for u in &acked {
                apply(&mut acked_state, u);
            }
            let mut with_doubt = acked_state.clone();
            if let Some(u) = &doubt {
                apply(&mut with_doubt, u);
            }
            assert!(
                got == acked_state || got == with_doubt,
                "seed {seed} point {point}: lost an acknowledged write or half a batch: {}",
                diff(&got, &acked_state)
            );
            state = got;
        } else {
            let mut units = acked;
            units.extend(doubt);
            let p = (durable..=units.len())
                .rev()
                .find(|&p| prefix(&state, &units, p) == got)
                .unwrap_or_else(|| {
                    panic!(
                        "seed {seed} point {point}: state after crash is no prefix of the writes \
                         (durable {durable}, units {})",
                        units.len()
                    )
                });
            state = prefix(&state, &units, p);
        }
        if rng.gen_bool(0.2) {
            drop(db);
            db = reopen(&fs, &opts, &mut rng, &state);
        }
        // Nothing a crash left is corruption to background work: GC reads every sealed
        // segment, the ones recovery cut included.
        if rng.gen_bool(0.1) {
            if let Err(e) = db.gc_value_log() {
                panic!("seed {seed} point {point}: GC after recovery: {e}");
            }
        }
    }
    if let CrashModel::Disk { .. } = model {
        let c = fs.crash_counts();
        eprintln!("crash states: {c:?}");
        assert!(
            c.torn > 0 && c.pages_zeroed > 0,
            "the crashes made no torn or holed file: {c:?}"
        );
    }
}

/// The keys whose values differ, for failure messages.
fn diff(got: &State, want: &State) -> String {
    let show = |v: Option<&Vec<u8>>| {
        v.map(|v| String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned())
    };
    (0..KEYS)
        .filter(|k| got.get(k) != want.get(k))
        .map(|k| {
            format!(
                "key {k}: got {:?} want {:?}",
                show(got.get(&k)),
                show(want.get(&k))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn prefix(start: &State, units: &[Unit], n: usize) -> State {
    let mut s = start.clone();
    for u in &units[..n] {
        apply(&mut s, u);
    }
    s
}

#[test]
fn crash_with_sync_keeps_every_acknowledged_write() {
    crash_run(true, common::seed(11), 1_000, CrashModel::Synced);
}

/// A disk's crashes (torn lengths, unsynced pages kept or zeroed in any order): with sync on,
/// every acknowledged write survives all the same.
#[test]
fn disk_crash_with_sync_keeps_every_acknowledged_write() {
    let seed = common::seed(21);
    crash_run(true, seed, 600, CrashModel::Disk { seed });
}

/// A disk's crashes without sync: what recovers is a prefix of the writes, at least up to the
/// last completed flush, and nothing recovery leaves is corruption.
#[test]
fn disk_crash_without_sync_keeps_a_prefix() {
    let seed = common::seed(22);
    crash_run(false, seed, 600, CrashModel::Disk { seed });
}

#[test]
fn crash_without_sync_keeps_a_prefix() {
    crash_run(false, common::seed(12), 600, CrashModel::Synced);
}

/// Keys per namespace in the namespace crash test.
const NS_KEYS: u32 = 24;

type NsState = BTreeMap<u32, State>;

/// Crashes in per-namespace L0 compactions, destroys and value-log GC, with `sync` on:
/// every acknowledged write, create and destroy survives, nothing destroyed comes back.
#[test]
fn crash_with_namespaces_destroy_and_gc() {
    let seed = common::seed(13);
    let mut rng = SmallRng::seed_from_u64(seed);
    let fs = FaultStorage::new();
    let mut opts = options(true);
    opts.vlog_gc_dead_ratio = 0.3;
    let open = |fs: &FaultStorage| Db::builder(opts.clone()).open_storage(Arc::new(fs.clone()));
    let mut db = open(&fs).unwrap();
    let mut model: NsState = BTreeMap::from([(0, State::new())]);
    let mut destroyed: Vec<u32> = Vec::new();
    let mut names = 0;
    let mut version = 0;
    let mut gc_deleted = 0;
    for point in 0..400 {
        fs.crash_after_ops(Some(rng.gen_range(1..600)));
        // What the step that failed may or may not have done.
        let mut doubt: Option<(u32, Unit)> = None;
        let mut doubt_ns: Option<(bool, u32)> = None; // (created?, nsid or 0 for an unknown id)
        for _ in 0..rng.gen_range(10..120) {
            let live: Vec<u32> = model.keys().copied().collect();
            let ns = live[rng.gen_range(0..live.len())];
            let r = match rng.gen_range(0..100) {
                0..=59 => {
                    let k = rng.gen_range(0..NS_KEYS);
                    version += 1;
                    let v = common::value_for(k, version, rng.gen_range(1..300));
                    let res = db.namespace(ns).unwrap().put(&key(k), &v);
                    if res.is_ok() {
                        model.get_mut(&ns).unwrap().insert(k, v);
                    } else {
                        doubt = Some((ns, vec![(k, Some(v))]));
                    }
                    res
                }
                60..=69 => {
                    let k = rng.gen_range(0..NS_KEYS);
                    let res = db.namespace(ns).unwrap().delete(&key(k));
                    if res.is_ok() {
                        model.get_mut(&ns).unwrap().remove(&k);
                    } else {
                        doubt = Some((ns, vec![(k, None)]));
                    }
                    res
                }
                70..=79 => db.flush(),
                80..=84 => db.compact_all(),
                85..=89 => db.gc_value_log().map(|_| ()),
                90..=94 if ns != 0 => {
                    let res = db.destroy_namespace(ns);
                    if res.is_ok() {
                        model.remove(&ns);
                        destroyed.push(ns);
                    } else {
                        doubt_ns = Some((false, ns));
                    }
                    res
                }
                _ => {
                    if model.len() >= 4 {
                        continue;
                    }
                    names += 1;
                    match db.create_namespace(&format!("t{names}")) {
                        Ok(ns) => {
                            model.insert(ns.id(), State::new());
                            Ok(())
                        }
                        Err(e) => {
                            doubt_ns = Some((true, 0));
                            Err(e)
                        }
                    }
                }
            };
            if r.is_err() {
                break;
            }
        }
        fs.crash_after_ops(None);
        fs.crash();
        gc_deleted += db.stats().gc_segments_deleted;
        drop(db);
        fs.restart();
        db = open(&fs).unwrap_or_else(|e| panic!("seed {seed} point {point}: reopen: {e}"));
        let listed: Vec<u32> = db.list_namespaces().iter().map(|n| n.nsid).collect();
        // Reconcile the namespace in doubt with what recovery says.
        match doubt_ns {
            Some((true, _)) => {
                for id in &listed {
                    model.entry(*id).or_default();
                }
            }
            Some((false, ns)) if !listed.contains(&ns) => {
                model.remove(&ns);
                destroyed.push(ns);
            }
            _ => {}
        }
        let want: Vec<u32> = model.keys().copied().collect();
        assert_eq!(
            listed, want,
            "seed {seed} point {point}: namespaces after recovery"
        );
        for dead in &destroyed {
            assert!(
                matches!(
                    db.namespace(*dead).and_then(|n| n.get(&key(0))),
                    Err(cerberus_engine::Error::UnknownNamespace(_))
                ),
                "seed {seed} point {point}: destroyed namespace {dead} came back"
            );
        }
        for (ns, state) in model.iter_mut() {
            let mut got = State::new();
            for k in 0..NS_KEYS {
                if let Some(v) = db.namespace(*ns).unwrap().get(&key(k)).unwrap() {
                    got.insert(k, v.to_vec());
                }
            }
            assert_eq!(
                iterated(&db.namespace(*ns).unwrap()),
                got,
                "seed {seed} point {point} ns {ns}: an iterator disagrees with gets"
            );
            let mut with_doubt = state.clone();
            if let Some((dns, unit)) = &doubt {
                if dns == ns {
                    apply(&mut with_doubt, unit);
                }
            }
            assert!(
                got == *state || got == with_doubt,
                "seed {seed} point {point} ns {ns}: lost an acknowledged write: {}",
                diff(&got, state)
            );
            *state = got;
        }
    }
    assert!(gc_deleted > 0, "no GC ran to completion");
    assert!(destroyed.len() > 5, "too few destroys: {}", destroyed.len());
}
