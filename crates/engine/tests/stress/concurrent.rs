//! Several threads on one database: each worker owns its namespaces and its model (so its
//! answers are deterministic), a chaos thread runs flushes, compactions and GC all along, and
//! a writer and a reader race on a shared namespace, where every read must return a value no
//! older than the last acknowledged write and no newer than the last one begun; on a third
//! namespace an index is dropped and created again all along while queries read it
//! (`index_storm`); and namespaces are created and destroyed while a thread writes to each
//! (`churn`). Between phases the database is closed and reopened, every model checked whole
//! and every table entry found owned (`Db::verify`).

use super::churn;
use super::config::{cov, Config};
use super::generator::{Gen, GenConfig};
use super::host::Host;
use super::index_storm;
use super::ops::{Op, KEYS};
use super::run::{DbRef, Session};
use super::watchdog;
use cerberus_engine::Readable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

pub struct ConcurrentFailure {
    pub msg: String,
    /// The worker whose check failed, with its log up to the failing operation.
    pub worker: Option<(usize, Vec<Op>)>,
}

const SHARED_KEYS: usize = 64;

fn shared_key(i: usize) -> Vec<u8> {
    format!("shared{i:03}").into_bytes()
}

pub fn worker_log(seed: u64, worker: usize, n: usize) -> Vec<Op> {
    let mut ops = vec![Op::CreateNs { ns: 0 }, Op::CreateNs { ns: 1 }];
    ops.extend(
        Gen::new(
            seed.wrapping_mul(31).wrapping_add(worker as u64 + 1),
            GenConfig {
                lifecycle: false,
                destroy_slot0: true,
                db_calls: true,
            },
        )
        .ops(n),
    );
    ops
}

/// Runs `workers` threads for `phases` phases of `n` operations each.
pub fn run(
    cfg: &Config,
    seed: u64,
    workers: usize,
    phases: usize,
    n: usize,
) -> Result<(), ConcurrentFailure> {
    let plain = |msg: String| ConcurrentFailure { msg, worker: None };
    let mut host = Host::new(cfg).map_err(plain)?;
    let shared_ns = host
        .db()
        .create_namespace("shared")
        .map_err(|e| plain(e.to_string()))?
        .id();
    let storm_ns = {
        let ns = host
            .db()
            .create_namespace("storm")
            .map_err(|e| plain(e.to_string()))?;
        index_storm::fill(&ns).map_err(plain)?;
        ns.id()
    };
    let mut sessions: Vec<Session> = (0..workers)
        .map(|w| Session::new(&format!("w{w}_"), false, false, host.db()))
        .collect();
    let logs: Vec<Vec<Op>> = (0..workers)
        .map(|w| worker_log(seed, w, n * phases))
        .collect();
    let started: Vec<AtomicU64> = (0..SHARED_KEYS).map(|_| AtomicU64::new(0)).collect();
    let acked: Vec<AtomicU64> = (0..SHARED_KEYS).map(|_| AtomicU64::new(0)).collect();
    let mut done_ops = vec![0usize; workers];
    for phase in 0..phases {
        let (db, epoch) = (host.db(), host.epoch);
        let stop = AtomicBool::new(false);
        let error: Mutex<Option<ConcurrentFailure>> = Mutex::new(None);
        let fail = |f: ConcurrentFailure| {
            let mut e = error.lock().unwrap();
            if e.is_none() {
                *e = Some(f);
            }
        };
        let shared = db.namespace(shared_ns).map_err(|e| plain(e.to_string()))?;
        let storm = db.namespace(storm_ns).map_err(|e| plain(e.to_string()))?;
        let churned = churn::Current::default();
        std::thread::scope(|s| {
            let mut handles = Vec::new();
            for (w, sess) in sessions.iter_mut().enumerate() {
                let (log, from) = (&logs[w], done_ops[w]);
                let (fail, stop) = (&fail, &stop);
                handles.push(s.spawn(move || {
                    watchdog::context(format!(
                        "concurrent seed {seed} (CERBERUS_STRESS_SEED={seed}) worker {w}"
                    ));
                    let mut r = DbRef::Shared(db, epoch);
                    let end = (from + n + 2).min(log.len());
                    for i in from..end {
                        if stop.load(Ordering::Relaxed) {
                            return end;
                        }
                        let _busy = watchdog::busy(format_args!("op {i}: {}", log[i]));
                        if let Err(m) = sess.exec(&mut r, &log[i]) {
                            fail(ConcurrentFailure {
                                msg: format!("worker {w} op {i}: {}: {m}", log[i]),
                                worker: Some((w, log[..=i].to_vec())),
                            });
                            stop.store(true, Ordering::Relaxed);
                            return end;
                        }
                    }
                    end
                }));
            }
            // Chaos: background calls all along.
            let chaos = s.spawn(|| {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0xC4A05 ^ phase as u64);
                let mut calls = 0;
                watchdog::context(format!(
                    "concurrent seed {seed} (CERBERUS_STRESS_SEED={seed}) chaos"
                ));
                while !stop.load(Ordering::Relaxed) || calls == 0 {
                    calls += 1;
                    let pick = rng.gen_range(0..10);
                    // The names are in the match below.
                    let _busy = watchdog::busy(format_args!("call {calls}, pick {pick}"));
                    let (name, r) = match pick {
                        0..=3 => ("Db::flush", db.flush()),
                        4 => ("Db::compact_all", db.compact_all()),
                        5 => {
                            let a = format!("k{:03}", rng.gen_range(0..KEYS));
                            (
                                "Db::compact_range",
                                db.compact_range(Some(a.as_bytes()), None),
                            )
                        }
                        6..=7 => ("Db::gc_value_log", db.gc_value_log().map(|_| ())),
                        8 => ("Db::wait_for_compactions", db.wait_for_compactions()),
                        _ => {
                            cov("Db::stats");
                            let _ = db.stats();
                            ("Db::list_namespaces", Ok(()))
                        }
                    };
                    cov(name);
                    if let Err(e) = r {
                        fail(plain(format!("chaos: {name}: {e}")));
                        stop.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(rng.gen_range(2..40)));
                }
            });
            // The shared namespace: one writer, one reader.
            let writer = s.spawn(|| {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0x5EED ^ phase as u64);
                while !stop.load(Ordering::Relaxed) {
                    let i = rng.gen_range(0..SHARED_KEYS);
                    let ver = started[i].load(Ordering::Relaxed) + 1;
                    started[i].store(ver, Ordering::SeqCst);
                    let v = format!("{i}:{ver}:{}", "v".repeat(rng.gen_range(0..300)));
                    cov("Namespace::put");
                    if let Err(e) = shared.put(&shared_key(i), v.as_bytes()) {
                        fail(plain(format!("shared writer: put: {e}")));
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    acked[i].store(ver, Ordering::SeqCst);
                    // About as fast as a worker: the log stays collectable.
                    std::thread::sleep(std::time::Duration::from_micros(rng.gen_range(0..400)));
                }
            });
            let reader = s.spawn(|| {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0x4EAD ^ phase as u64);
                while !stop.load(Ordering::Relaxed) {
                    let i = rng.gen_range(0..SHARED_KEYS);
                    let lo = acked[i].load(Ordering::SeqCst);
                    cov("Namespace::get");
                    let got = shared.get(&shared_key(i));
                    let hi = started[i].load(Ordering::SeqCst);
                    let ver = match got {
                        Ok(Some(v)) => {
                            let text = String::from_utf8_lossy(&v).into_owned();
                            let mut parts = text.split(':');
                            let (k, ver) = (parts.next(), parts.next());
                            if k != Some(i.to_string().as_str()) {
                                fail(plain(format!("shared reader: key {i} holds {text:.40}")));
                                break;
                            }
                            ver.and_then(|v| v.parse::<u64>().ok()).unwrap_or(u64::MAX)
                        }
                        Ok(None) => 0,
                        Err(e) => {
                            fail(plain(format!("shared reader: get: {e}")));
                            break;
                        }
                    };
                    if ver < lo || ver > hi {
                        fail(plain(format!(
                            "shared reader: key {i} read version {ver}, outside [{lo}, {hi}] \
                             (acknowledged, begun)"
                        )));
                        break;
                    }
                }
                stop.store(true, Ordering::Relaxed);
            });
            // The storm's two threads and the churn's: each ends at `stop`, or stops all.
            type Task<'t> = Box<dyn FnOnce() -> Result<u64, String> + Send + 't>;
            let (storm, stop, fail, churned) = (&storm, &stop, &fail, &churned);
            let tag = phase.to_string();
            let tasks: Vec<(&str, Task)> = vec![
                (
                    "index storm indexer",
                    Box::new(|| index_storm::indexer(storm, stop)),
                ),
                (
                    "index storm querier",
                    Box::new(|| index_storm::querier(storm, stop)),
                ),
                ("churn writer", Box::new(|| churn::writer(churned, stop))),
                (
                    "churn destroyer",
                    Box::new(move || churn::destroyer(db, churned, &tag, stop)),
                ),
            ];
            let mut storms = Vec::new();
            for (name, task) in tasks {
                storms.push(s.spawn(move || {
                    watchdog::context(format!(
                        "concurrent seed {seed} (CERBERUS_STRESS_SEED={seed}) {name}"
                    ));
                    if let Err(m) = task() {
                        fail(plain(m));
                        stop.store(true, Ordering::Relaxed);
                    }
                }));
            }
            for (w, h) in handles.into_iter().enumerate() {
                done_ops[w] = h.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            chaos.join().unwrap();
            writer.join().unwrap();
            reader.join().unwrap();
            for h in storms {
                h.join().unwrap();
            }
        });
        if let Some(f) = error.into_inner().unwrap() {
            return Err(f);
        }
        // Everything whole, then after a reopen again.
        for (w, sess) in sessions.iter_mut().enumerate() {
            sess.verify_all(host.db())
                .map_err(|m| plain(format!("phase {phase} worker {w}: {m}")))?;
        }
        churn::verify(host.db(), &format!("phase {phase}")).map_err(plain)?;
        drop((shared, storm));
        host.reopen(false).map_err(plain)?;
        churn::verify(host.db(), &format!("after reopen {phase}")).map_err(plain)?;
        for (w, sess) in sessions.iter_mut().enumerate() {
            sess.rebind(host.db())
                .and_then(|()| sess.verify_all(host.db()))
                .map_err(|m| plain(format!("after reopen {phase}, worker {w}: {m}")))?;
        }
        let shared = host
            .db()
            .namespace(shared_ns)
            .map_err(|e| plain(e.to_string()))?;
        for (i, acked) in acked.iter().enumerate() {
            let want = acked.load(Ordering::SeqCst);
            let got = shared
                .get(&shared_key(i))
                .map_err(|e| plain(e.to_string()))?
                .map(|v| {
                    String::from_utf8_lossy(&v)
                        .split(':')
                        .nth(1)
                        .and_then(|x| x.parse::<u64>().ok())
                        .unwrap_or(u64::MAX)
                })
                .unwrap_or(0);
            if got != want {
                return Err(plain(format!(
                    "after reopen {phase}: shared key {i} has version {got}, acknowledged {want}"
                )));
            }
        }
    }
    sessions.clear();
    Ok(())
}
