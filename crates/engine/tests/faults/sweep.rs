//! The error sweep: one workload, run once per failure point (an I/O call of one kind that
//! fails with EIO or ENOSPC, once or from then on, appends writing a prefix or nothing).
//!
//! At every point: no panic, no hang; every error is typed (never corruption); afterwards the
//! database either goes on or is read-only with one sticky error; reopening (after a power
//! cut on every other point) gives exactly the acknowledged writes, writes that failed being
//! in doubt (there or not, a batch whole or not at all).

use super::{check_model, options, Model, NsModel};
use cerberus_engine::storage::{Fault, FaultError, FaultStorage, IoKind, StorageRef};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Error, WriteBatch};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Names of the namespaces the workload uses; `c` is destroyed and `d` created midway.
const NAMES: [&str; 4] = ["a", "b", "c", "d"];

fn key(i: u32) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

fn value(i: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("{i}/{round}/").into_bytes();
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

/// Records the outcome of one write into the model; errors must be typed, never corruption.
fn note(
    m: &mut NsModel,
    ops: &[(Vec<u8>, Option<Vec<u8>>)],
    r: Result<(), Error>,
) -> Result<(), String> {
    match r {
        Ok(()) => {
            m.acked(ops);
            Ok(())
        }
        Err(e) if e.is_corruption() => Err(format!("write reported corruption: {e}")),
        Err(_) => {
            m.in_doubt(ops);
            Ok(())
        }
    }
}

/// The workload: 3 namespaces (one destroyed and replaced midway), puts, deletes, batches,
/// flushes, manual compactions, value-log GC and a reopen. Errors are expected; it stops
/// only if the reopen fails.
fn workload(storage: &StorageRef, model: &mut Model) -> Result<(), String> {
    let Ok(mut db) = Db::builder(options()).open_storage(storage.clone()) else {
        return Ok(());
    };
    let mut ids = BTreeMap::new();
    for name in &NAMES[..3] {
        create(&db, model, &mut ids, name)?;
    }
    for round in 0..6u32 {
        if round == 4 {
            drop(db);
            match Db::builder(options()).open_storage(storage.clone()) {
                Ok(d) => db = d,
                Err(e) if e.is_corruption() => {
                    return Err(format!("reopen reported corruption: {e}"))
                }
                Err(_) => return Ok(()),
            }
        }
        let db = &db;
        for (n, name) in NAMES.iter().enumerate() {
            let Some(&ns) = ids.get(*name) else { continue };
            let m = model.ns.get_mut(*name).expect("modelled");
            for i in 0..12u32 {
                let k = (i * 7 + round * 3 + n as u32) % 40;
                let len = if i % 3 == 0 { 300 } else { 24 };
                let v = value(k, round, len);
                let r = db.namespace(ns).unwrap().put(&key(k), &v);
                note(m, &[(key(k), Some(v))], r)?;
            }
            let d = (round * 5 + n as u32) % 40;
            note(
                m,
                &[(key(d), None)],
                db.namespace(ns).unwrap().delete(&key(d)),
            )?;
            let mut batch = WriteBatch::new();
            let mut ops = Vec::new();
            for j in 0..4u32 {
                let k = (round * 11 + j * 13) % 40;
                if j == 3 {
                    batch.delete(key(k));
                    ops.push((key(k), None));
                } else {
                    let v = value(k, round + 100, 40);
                    batch.put(key(k), v.clone());
                    ops.push((key(k), Some(v)));
                }
            }
            note(m, &ops, db.namespace(ns).unwrap().write(batch))?;
            // Reads go on whatever failed; a failed read is an error, never wrong data.
            for k in 0..3u32 {
                match db.namespace(ns).unwrap().get(&key(k)) {
                    Ok(got) => {
                        if !m.allows(&key(k), got.as_deref()) {
                            return Err(format!(
                                "get of {name}/{k} returned {got:?}, not a state the writes allow"
                            ));
                        }
                    }
                    Err(e) if e.is_corruption() => {
                        return Err(format!("read reported corruption: {e}"))
                    }
                    Err(_) => {}
                }
            }
        }
        typed(db.flush())?;
        if round % 2 == 1 {
            typed(db.compact_range(None, None))?;
        }
        if round == 2 {
            typed(db.gc_value_log().map(|_| ()))?;
            if let Some(&c) = ids.get("c") {
                match db.destroy_namespace(c) {
                    Ok(()) => {
                        model.ns.remove("c");
                        ids.remove("c");
                    }
                    Err(e) if e.is_corruption() => {
                        return Err(format!("destroy reported corruption: {e}"))
                    }
                    Err(_) => {
                        model.ns.get_mut("c").expect("modelled").maybe_gone = true;
                    }
                }
            }
            create(db, model, &mut ids, "d")?;
        }
    }
    typed(db.gc_value_log().map(|_| ()))?;
    // Goes on, or read-only with one sticky error naming the cause.
    match db.default_namespace().put(b"probe", b"1") {
        Ok(()) => {}
        Err(Error::Background(first)) => match db.default_namespace().put(b"probe", b"2") {
            Err(Error::Background(again)) if again == first => {}
            other => {
                return Err(format!(
                    "read-only error not sticky: {first} then {other:?}"
                ))
            }
        },
        Err(e) if e.is_corruption() => return Err(format!("reported corruption: {e}")),
        Err(_) => {}
    }
    Ok(())
}

fn typed(r: Result<(), Error>) -> Result<(), String> {
    match r {
        Err(e) if e.is_corruption() => Err(format!("reported corruption: {e}")),
        _ => Ok(()),
    }
}

fn create(
    db: &Db,
    model: &mut Model,
    ids: &mut BTreeMap<&'static str, u32>,
    name: &'static str,
) -> Result<(), String> {
    match db.create_namespace(name) {
        Ok(ns) => {
            ids.insert(name, ns.id());
            model.ns.insert(name.to_string(), NsModel::default());
        }
        Err(e) if e.is_corruption() => return Err(format!("create reported corruption: {e}")),
        Err(_) => {
            // In doubt: it may exist after a reopen, empty.
            let m = NsModel {
                maybe_absent: true,
                ..NsModel::default()
            };
            model.ns.insert(name.to_string(), m);
        }
    }
    Ok(())
}

/// One failure point.
#[derive(Clone, Copy, Debug)]
struct Point {
    fault: Fault,
    crash: bool,
}

/// Runs the workload at `point` and checks everything; `Err` describes what broke.
fn run_point(point: Point) -> Result<(), String> {
    let fs = FaultStorage::new();
    let storage: StorageRef = Arc::new(fs.clone());
    let mut model = Model::default();
    fs.inject(Some(point.fault));
    workload(&storage, &mut model)?;
    fs.inject(None);
    if point.crash {
        fs.crash();
        fs.restart();
    }
    let db = Db::builder(options())
        .open_storage(storage)
        .map_err(|e| format!("reopen after the fault failed: {e}"))?;
    check_model(&db, &model)
}

/// Calls of each kind in a clean run.
fn clean_counts() -> BTreeMap<IoKind, u64> {
    let fs = FaultStorage::new();
    let storage: StorageRef = Arc::new(fs.clone());
    let mut model = Model::default();
    workload(&storage, &mut model).expect("clean workload");
    let counts = fs.io_counts();
    let db = Db::builder(options())
        .open_storage(storage)
        .expect("reopen");
    check_model(&db, &model).expect("clean run matches its model");
    assert!(
        db.default_namespace().get(b"probe").unwrap().is_some(),
        "the clean run went to its end"
    );
    counts
}

/// Every failure point, or every `stride`-th call of each kind (the first and last always).
fn points(counts: &BTreeMap<IoKind, u64>, stride: u64) -> Vec<Point> {
    let mut out = Vec::new();
    let mut n = 0u64;
    for (&kind, &calls) in counts {
        let mut nths: Vec<u64> = (0..calls).step_by(stride.max(1) as usize).collect();
        if calls > 0 && nths.last() != Some(&(calls - 1)) {
            nths.push(calls - 1);
        }
        for nth in nths {
            for error in [FaultError::Eio, FaultError::NoSpace] {
                let partials: &[bool] = if kind == IoKind::Append {
                    &[false, true]
                } else {
                    &[false]
                };
                for &partial in partials {
                    for sticky in [false, true] {
                        n += 1;
                        out.push(Point {
                            fault: Fault {
                                kind,
                                nth,
                                error,
                                sticky,
                                partial,
                            },
                            crash: n.is_multiple_of(2),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Runs `point` on its own thread so that a hang is reported, not waited out.
fn run_with_deadline(point: Point) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| run_point(point))
            .unwrap_or_else(|_| Err("panicked".to_string()));
        let _ = tx.send(r);
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| Err("hung for 60 s".to_string()))
}

#[test]
fn error_sweep() {
    let counts = clean_counts();
    let full = std::env::var("CERBERUS_ERROR_SWEEP").is_ok_and(|v| v == "full");
    // Enough points for CI (over 1,000, every kind) in well under its budget; the script
    // `scripts/error-sweep` runs them all.
    let total: u64 = counts.values().sum();
    let stride = if full { 1 } else { (total / 400).max(1) };
    let points = points(&counts, stride);
    for kind in IoKind::ALL {
        if counts.get(&kind).copied().unwrap_or(0) == 0 && kind != IoKind::Truncate {
            panic!(
                "the workload makes no {} call: the sweep would not cover it",
                kind.name()
            );
        }
    }
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    for p in &points {
        if let Err(why) = run_with_deadline(*p) {
            failures.push(format!("{p:?}: {why}"));
        }
    }
    let by_kind: Vec<String> = counts
        .iter()
        .map(|(k, n)| format!("{} {n}", k.name()))
        .collect();
    println!(
        "error sweep: {} points (stride {stride}) over calls [{}] in {:.1} s, {} failed",
        points.len(),
        by_kind.join(", "),
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(full || points.len() >= 1000, "only {} points", points.len());
    assert!(
        failures.is_empty(),
        "{} failure points broke:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
