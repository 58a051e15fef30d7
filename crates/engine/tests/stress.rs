//! Whole-system stress test (issue 30): a seeded generator draws operations from every
//! public call of the engine over several namespaces; an expected-state model answers each
//! read, query and iterator step; the same log runs under several configurations (storage,
//! layout, cache, block and table sizes, inline threshold, mmap, background threads) whose
//! answers must agree; crashes and I/O errors go through the fault storage; a failure is
//! shrunk to the shortest log that still fails. In the manner of RocksDB's `db_stress`
//! (expected state) and Pebble's metamorphic test.
//!
//! Environment: `CERBERUS_STRESS_SEED` (one seed), `CERBERUS_STRESS_OPS` (ops per seed),
//! `CERBERUS_STRESS_MINUTES` (new seeds until the time is up), `CERBERUS_STRESS_SHRINK_SECS`
//! (shrinking budget).

#[path = "stress/checkpoint.rs"]
mod checkpoint;
#[path = "stress/checks.rs"]
mod checks;
#[path = "stress/churn.rs"]
mod churn;
#[path = "stress/concurrent.rs"]
mod concurrent;
#[path = "stress/config.rs"]
mod config;
#[path = "stress/generator.rs"]
mod generator;
#[path = "stress/host.rs"]
mod host;
#[path = "stress/index_storm.rs"]
mod index_storm;
#[path = "stress/model.rs"]
mod model;
#[path = "stress/ops.rs"]
mod ops;
#[path = "stress/prefix.rs"]
mod prefix;
#[path = "stress/queries.rs"]
mod queries;
#[path = "stress/range_delete.rs"]
mod range_delete;
#[path = "stress/read_only.rs"]
mod read_only;
#[path = "stress/run.rs"]
mod run;
#[path = "stress/session_reads.rs"]
mod session_reads;
#[path = "stress/session_writes.rs"]
mod session_writes;
#[path = "stress/shrink.rs"]
mod shrink;
#[path = "stress/watchdog.rs"]
mod watchdog;

use cerberus_engine::ReadOptions;
use cerberus_engine::Readable;
use config::{configs, Config, StorageSpec};
use generator::{Gen, GenConfig};
use ops::Op;
use run::{run_log, Failure};
use std::time::{Duration, Instant};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

pub fn single_log(seed: u64, n: usize) -> Vec<Op> {
    Gen::new(
        seed,
        GenConfig {
            lifecycle: true,
            destroy_slot0: false,
            db_calls: true,
        },
    )
    .ops(n)
}

/// Runs the log under every configuration; the first failure (a check, or answers that
/// differ between two configurations) with the configurations it needs.
fn run_all(cfgs: &[Config], ops: &[Op]) -> Result<(), (Failure, Vec<Config>)> {
    let mut reference: Option<(&Config, Vec<String>)> = None;
    for cfg in cfgs {
        let trace = run_log(cfg, ops).map_err(|f| (f, vec![cfg.clone()]))?;
        // The fault configuration's answers differ where calls failed: it has only the model.
        if cfg.storage == StorageSpec::Fault {
            continue;
        }
        match &reference {
            None => reference = Some((cfg, trace)),
            Some((rc, rt)) => {
                if let Some(i) =
                    (0..rt.len().max(trace.len())).find(|i| rt.get(*i) != trace.get(*i))
                {
                    return Err((
                        Failure {
                            config: format!("{} vs {}", rc.name, cfg.name),
                            op: i.min(ops.len().saturating_sub(1)),
                            msg: format!(
                                "answers differ at trace entry {i}:\n    {}: {:?}\n    {}: {:?}",
                                rc.name,
                                rt.get(i),
                                cfg.name,
                                trace.get(i)
                            ),
                        },
                        vec![(*rc).clone(), cfg.clone()],
                    ));
                }
            }
        }
    }
    Ok(())
}

fn print_log(ops: &[Op]) -> String {
    ops.iter()
        .enumerate()
        .map(|(i, op)| format!("  {i:4}: {op}\n"))
        .collect()
}

/// Runs one seed; on failure shrinks the log and panics with the seed, the configuration
/// and the minimal log.
fn check_seed(seed: u64, n: usize, cfgs: &[Config]) {
    watchdog::context(format!(
        "seed {seed} (CERBERUS_STRESS_SEED={seed} CERBERUS_STRESS_OPS={n})"
    ));
    let ops = single_log(seed, n);
    let Err((failure, needed)) = run_all(cfgs, &ops) else {
        return;
    };
    let found_after = format!(
        "{} operations, {:.1} s into the run",
        config::OPS_RUN.load(std::sync::atomic::Ordering::Relaxed),
        run_started().elapsed().as_secs_f64()
    );
    eprintln!("stress: seed {seed} failed after {found_after}: {failure}\nshrinking...");
    let budget = Duration::from_secs(env_u64("CERBERUS_STRESS_SHRINK_SECS").unwrap_or(120));
    let (min, last, runs) = shrink::shrink(&ops, failure.clone(), budget, &mut |cand| {
        run_all(&needed, cand).err().map(|(f, _)| f)
    });
    panic!(
        "stress test failed (found after {found_after})\n  seed: {seed} (CERBERUS_STRESS_SEED={seed} CERBERUS_STRESS_OPS={n})\n  \
         configuration: {}\n  first failure: {failure}\n  minimal failure: {last}\n  \
         options: {:#?}\n  minimal log ({} ops of {}, {runs} shrink runs):\n{}",
        needed.iter().map(|c| c.name).collect::<Vec<_>>().join(" vs "),
        needed[0].opts,
        min.len(),
        ops.len(),
        print_log(&min)
    );
}

/// When the first run of this process started.
fn run_started() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// New seeds, different in each process.
fn new_seeds() -> impl FnMut() -> u64 {
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        ^ u64::from(std::process::id());
    move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 16
    }
}

fn report(started: Instant, seeds: &[u64]) {
    let secs = started.elapsed().as_secs_f64();
    let ops = config::OPS_RUN.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "stress: seeds {seeds:?}: {ops} operations in {secs:.1} s ({:.0} ops/s)",
        ops as f64 / secs
    );
    println!("stress: coverage (calls made):");
    for (call, n) in config::coverage() {
        println!("  {call:32} {n}");
    }
}

/// CI: fixed seeds under every configuration (or the seeds and time the environment asks).
#[test]
fn stress_metamorphic() {
    let started = run_started();
    let n = env_u64("CERBERUS_STRESS_OPS").unwrap_or(1_500) as usize;
    let cfgs = configs();
    let mut seeds = Vec::new();
    if let Some(seed) = env_u64("CERBERUS_STRESS_SEED") {
        seeds.push(seed);
        check_seed(seed, n, &cfgs);
    } else if let Some(min) = env_u64("CERBERUS_STRESS_MINUTES") {
        let until = started + Duration::from_secs(min * 60);
        let mut fresh = new_seeds();
        while Instant::now() < until {
            let s = fresh();
            println!("stress: seed {s}");
            seeds.push(s);
            check_seed(s, n, &cfgs);
        }
    } else {
        for seed in [1, 2, 3] {
            seeds.push(seed);
            check_seed(seed, n, &cfgs);
        }
        for (seed, ops, names) in REGRESSION_SEEDS {
            seeds.push(*seed);
            let only: Vec<Config> = cfgs
                .iter()
                .filter(|c| names.contains(&c.name))
                .cloned()
                .collect();
            assert_eq!(
                only.len(),
                names.len(),
                "a regression seed's configuration is gone"
            );
            check_seed(*seed, *ops, &only);
        }
    }
    report(started, &seeds);
}

/// Seeds that failed once, each run in CI with only as many operations and configurations
/// as its failure needed (CI's time budget: about 2 s for all of them).
const REGRESSION_SEEDS: &[(u64, usize, &[&str])] = &[
    // A capped create_index failed on an injected sync and left its index listed (not
    // ready); the next capped create_index checked the list against the model as if that
    // were certain (op 1,182; a 10-minute run of 2026-11-30).
    (
        141300078374178,
        1200,
        &["fault/shared/no sync (crash loses what came after the last sync)"],
    ),
    // Issue 66: op 689, a top-K under a work limit of 602, was charged 600 units in one
    // configuration and 606 in the other (the tombstones compactions had not yet dropped
    // from its filter's index were charged), one run in three.
    (
        37067912830268,
        700,
        &[
            "mem/per-ns/cache/bg2/rowcache8k/point-fp2",
            "posix/per-ns/nommap/block4k/table64k/inline1k/rowcache8k",
        ],
    ),
];

/// Threads: workers with their own namespaces and models, a chaos thread (flush,
/// compaction, GC), a writer and a reader on a shared namespace; reopens between phases.
#[test]
fn stress_concurrent() {
    let started = Instant::now();
    let n = env_u64("CERBERUS_STRESS_OPS").map_or(400, |n| (n / 3) as usize);
    let cfgs = configs();
    let mut seeds: Vec<u64> = match env_u64("CERBERUS_STRESS_SEED") {
        Some(s) => vec![s],
        None => vec![11, 12],
    };
    let until = env_u64("CERBERUS_STRESS_MINUTES").map(|m| started + Duration::from_secs(m * 60));
    let mut next = seeds.clone().into_iter();
    let mut fresh = new_seeds();
    while let Some(seed) = next
        .next()
        .or_else(|| until.filter(|u| Instant::now() < *u).map(|_| fresh()))
    {
        if until.is_some() {
            println!("stress (concurrent): seed {seed}");
            if !seeds.contains(&seed) {
                seeds.push(seed);
            }
        }
        let seed = &seed;
        // One configuration per seed, by its parity: memory or real files.
        for cfg in [[&cfgs[0], &cfgs[2]][(seed % 2) as usize]] {
            let Err(f) = concurrent::run(cfg, *seed, 3, 3, n) else {
                continue;
            };
            let mut msg = format!(
                "concurrent stress test failed\n  seed: {seed} (CERBERUS_STRESS_SEED={seed})\n  \
                 configuration: {}\n  failure: {}\n",
                cfg.name, f.msg
            );
            if let Some((w, log)) = f.worker {
                // Alone, on a database of its own: does the worker's log fail without the others?
                match run_log(cfg, &log) {
                    Err(first) => {
                        let budget = Duration::from_secs(
                            env_u64("CERBERUS_STRESS_SHRINK_SECS").unwrap_or(120),
                        );
                        let (min, last, runs) =
                            shrink::shrink(&log, first, budget, &mut |c| run_log(cfg, c).err());
                        msg += &format!(
                            "  worker {w}'s log fails alone too: {last}\n  minimal log ({} ops, {runs} runs):\n{}",
                            min.len(),
                            print_log(&min)
                        );
                    }
                    Ok(_) => {
                        let tail = log.len().saturating_sub(40);
                        msg += &format!(
                            "  worker {w}'s log passes alone (a concurrency failure); its last ops:\n{}",
                            print_log(&log[tail..])
                        );
                    }
                }
            }
            panic!("{msg}");
        }
    }
    report(started, &seeds);
}

/// The log a seed generates is the same every time.
#[test]
fn generator_is_deterministic() {
    let a = single_log(42, 500);
    let b = single_log(42, 500);
    assert_eq!(a, b);
    assert_ne!(a, single_log(43, 500));
}

/// Replays a fixed log under every configuration (the regression tests below).
fn replay(ops: &[Op]) {
    if let Err((f, _)) = run_all(&configs(), ops) {
        panic!("{f}\nlog:\n{}", print_log(ops));
    }
}

/// Found by the stress test: `Iter::seek` on an iterator whose database was closed
/// succeeded (`next` failed with `Closed`, `seek` did not look).
#[test]
fn regression_seek_after_close_fails() {
    replay(&[
        Op::CreateNs { ns: 1 },
        Op::IterOpen {
            it: 2,
            ns: 1,
            snap: None,
            spec: ops::IterSpec {
                upper: Some(43),
                prefix: None,
                keys_only: false,
                prefetch: 2,
                index_prefetch: false,
            },
        },
        Op::Reopen,
        Op::IterSeek { it: 2, key: 80 },
    ]);
}

/// Found by the concurrent stress test (seed 11, posix configuration): `gc_value_log` fails
/// with "I/O error on NNNNNN.vlog: No such file or directory" while another thread flushes.
/// `retire_flushed_segments` (db/gc.rs) takes a segment out of `retire_after_flush` before
/// `retire_segment` marks it retired; a GC pass listing segments in between
/// (`sealed_segments`) sees it as neither, keeps it, and its read fails once the retire has
/// deleted the file. A second path: a segment listed just before its retire deleted it
/// (the retired mark goes with the file). Fixed: the retire happens under the list's lock, and
/// a collection skips a segment deleted since its listing (an open file reads on).
#[test]
fn regression_gc_races_a_flush_retiring_segments() {
    let cfg = &configs()[0];
    // Each attempt hits the window about one time in three.
    for _attempt in 0..20 {
        let host = host::Host::new(cfg).unwrap();
        let db = host.db();
        let ns = db.default_namespace();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let gc = s.spawn(|| {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    db.gc_value_log()
                        .expect("gc_value_log while another thread flushes");
                    n += 1;
                }
                n
            });
            for i in 0..20_000u32 {
                let v = vec![b'v'; 300 + (i % 7) as usize * 100];
                ns.put(format!("k{:03}", i % 64).as_bytes(), &v).unwrap();
                if i % 16 == 0 {
                    db.flush().unwrap();
                }
                if gc.is_finished() {
                    break;
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            println!("{} GC passes", gc.join().unwrap());
        });
    }
}

/// Found by the 8-minute stress run (seed 205281249345151, `mem/per-ns/cache/bg2`): an
/// iterator of a namespace destroyed while it was open failed with "no such file:
/// NNNNNN.vlog". A destroy takes the namespace's tables out of the version before the
/// namespace joins the dead set; a GC pass checking its snapshots in between looked the
/// iterator's record up, missed it, took the miss for a newer version and deleted the
/// segment. Fixed: a miss in a namespace the manifest lists as destroyed counts as read
/// (db/gc.rs, `seen_by_snapshot`; the window itself is the unit test next to it).
#[test]
fn regression_destroy_racing_gc_keeps_an_iterators_values() {
    let cfg = &configs()[0];
    let host = host::Host::new(cfg).unwrap();
    let db = host.db();
    /// Stops the GC thread when the test ends, failed or not (a failure must not hang).
    struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let gc = s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.gc_value_log().expect("gc_value_log while namespaces go");
            }
        });
        let _stop = Stop(&stop);
        for round in 0..600u32 {
            let ns = db.create_namespace(&format!("t{round}")).unwrap();
            // Overwritten values: segments with garbage for GC to take.
            for i in 0..120u32 {
                let v = vec![b'a' + (i % 26) as u8; 200 + (i % 5) as usize * 50];
                ns.put(format!("k{:03}", i % 40).as_bytes(), &v).unwrap();
            }
            let want: Vec<_> = (0..40u32)
                .map(|k| {
                    let i = 80 + k;
                    (
                        format!("k{k:03}"),
                        vec![b'a' + (i % 26) as u8; 200 + (i % 5) as usize * 50],
                    )
                })
                .collect();
            let mut it = ns.iter(ReadOptions::default()).unwrap();
            db.destroy_namespace(ns.id()).unwrap();
            let got: Vec<_> = it
                .by_ref()
                .map(|r| {
                    let (k, v) = r.expect("an iterator opened before the destroy reads on");
                    (String::from_utf8(k.to_vec()).unwrap(), v.to_vec())
                })
                .collect();
            assert_eq!(got, want, "round {round}");
            assert!(!gc.is_finished(), "the GC thread stopped");
        }
    });
}

/// Found by the 60-minute stress run (seed 40016564035351, the fault configuration with
/// sync on): a sync failing for want of space failed the put of k034 and then the batch
/// deleting it, but both stayed in the log, and the writer stamped the next write with the
/// same seqnos again. After the heal the replay met put and delete of k034 at one seqno,
/// kept the delete, and the put's VAS entry, which no older version retired, answered a find.
#[test]
fn regression_vas_find_after_failed_writes_and_a_heal() {
    let k013 = serde_json::json!({"a": 9007199254740993u64, "b": "x", "c": 1.75, "n": {"y": 0}, "pad": "stuvwxy", "s": 746});
    let k034 = serde_json::json!({"a": 5, "b": "z", "c": 2.75, "n": {"x": 5, "y": 1}, "pad": "efghijklmnop", "s": 758, "t": "p"});
    replay(&[
        Op::CreateNs { ns: 1 },
        Op::CreateIndex {
            ns: 1,
            attr: 3,
            kind: ops::IdxKind::Vas,
        },
        Op::Put {
            ns: 1,
            key: 13,
            value: k013.to_string().into_bytes(),
            sync: false,
        },
        Op::Inject {
            kind: ops::FaultKind::Sync,
            nth: 4,
            sticky: true,
        },
        Op::Gc,
        Op::Put {
            ns: 1,
            key: 34,
            value: k034.to_string().into_bytes(),
            sync: false,
        },
        Op::Batch {
            ns: 1,
            writes: vec![(34, None)],
        },
        Op::Inject {
            kind: ops::FaultKind::Read,
            nth: 2,
            sticky: false,
        },
        Op::Delete { ns: 1, key: 9 },
        Op::Heal,
        Op::PageOpen {
            cur: 0,
            ns: 1,
            filter: ops::FilterSpec {
                conds: vec![(
                    3,
                    ops::Cond::Range(Some((serde_json::json!(4), false)), None),
                )],
            },
            projection: Some(vec![3, 0]),
            page_bytes: 2840,
        },
    ]);
}
