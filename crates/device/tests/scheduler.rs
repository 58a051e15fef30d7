//! The scheduler and the dedup service through a running device: a background task holds
//! only its own core; the dedup index matches the stored values after writes, overwrites,
//! deletes, restarts and a lost index; the backlog drains once writes stop, and past its bound
//! sheds tasks for a rescan that ends at the same index.

mod common;

use cerberus_device::{Chunker, DeviceHandle, NsDedupStats, Policy};
use cerberus_engine::ReadOptions;
use cerberus_engine::Readable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn connections(dev: &DeviceHandle) -> Vec<usize> {
    dev.scheduler_stats()
        .cores
        .iter()
        .map(|c| c.connections)
        .collect()
}

#[test]
fn a_background_task_holds_its_own_core_only() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 2;
        c.scheduler.policy = Policy::Inline;
    });
    let (na, sa) = common::admin(&dev).create_namespace("a").unwrap();
    let (nb, sb) = common::admin(&dev).create_namespace("b").unwrap();
    wait_until("setup connections closed", || connections(&dev) == [0, 0]);
    let connect = |ns: u32, secret: &str| {
        let c = cerberus_host::BlockingClient::connect(&dev.local_addr().to_string()).unwrap();
        c.open_namespace(ns, secret).unwrap();
        c.namespace(ns).put(&b"k"[..], &b"v"[..]).unwrap();
        c
    };
    // A goes to core 0, B to core 1.
    let a = connect(na, &sa);
    assert_eq!(connections(&dev), [1, 0]);
    let b = connect(nb, &sb);
    assert_eq!(connections(&dev), [1, 1]);

    let hold = Duration::from_millis(1500);
    dev.hold_core(0, hold);
    std::thread::sleep(Duration::from_millis(50));
    // B's core is free: served at once.
    let t = Instant::now();
    assert_eq!(
        b.namespace(nb).get(&b"k"[..]).unwrap().as_deref(),
        Some(&b"v"[..])
    );
    let b_took = t.elapsed();
    // A's core runs the task to its end first.
    let t = Instant::now();
    assert_eq!(
        a.namespace(na).get(&b"k"[..]).unwrap().as_deref(),
        Some(&b"v"[..])
    );
    let a_took = t.elapsed();
    assert!(b_took < Duration::from_millis(500), "B waited {b_took:?}");
    assert!(a_took > Duration::from_millis(1000), "A waited {a_took:?}");
    let s = dev.scheduler_stats();
    assert_eq!((s.cores[0].bg_tasks, s.cores[1].bg_tasks), (1, 0));
}

/// What namespace `ns` stores, chunked independently of the service's index.
fn reference(dev: &DeviceHandle, ns: u32, chunker: Chunker) -> NsDedupStats {
    let mut lens = HashMap::new();
    let mut s = NsDedupStats::default();
    for e in dev
        .engine()
        .namespace(ns)
        .unwrap()
        .iter(ReadOptions::default())
        .unwrap()
    {
        let (_, v) = e.unwrap();
        s.keys += 1;
        chunker.chunks(&v, |d, n| {
            s.chunks += 1;
            s.logical_bytes += u64::from(n);
            lens.insert(d, u64::from(n));
        });
    }
    s.unique_chunks = lens.len() as u64;
    s.unique_bytes = lens.values().sum();
    s.dedup_ratio = if s.unique_bytes == 0 {
        1.0
    } else {
        s.logical_bytes as f64 / s.unique_bytes as f64
    };
    s
}

fn indexed(dev: &DeviceHandle, ns: u32) -> NsDedupStats {
    let d = dev.dedup_stats().expect("dedup on");
    d.namespaces.get(&ns).copied().unwrap_or_default()
}

fn drained(dev: &DeviceHandle) {
    wait_until("dedup backlog drained", || {
        dev.dedup_stats().map_or(0, |d| d.backlog) == 0
    });
}

fn random_writes(c: &cerberus_host::BlockingClient, ns: u32, seed: u64, n: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    for _ in 0..n {
        let key = format!("key{:03}", rng.gen_range(0..200));
        if rng.gen_bool(0.15) {
            let _ = c.namespace(ns).delete(key.into_bytes());
        } else {
            let mut v = Vec::new();
            for _ in 0..rng.gen_range(1..40) {
                v.extend_from_slice(&[rng.gen_range(0..8u8); 128]);
            }
            v.extend((0..rng.gen_range(0..100)).map(|_| rng.gen::<u8>()));
            c.namespace(ns).put(key.into_bytes(), v).unwrap();
        }
    }
}

#[test]
fn dedup_index_matches_the_stored_values_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let tweak = |c: &mut cerberus_device::DeviceConfig| {
        c.network_threads = 2;
        c.dedup.enabled = true;
        c.scheduler.policy = Policy::Bts;
    };
    let chunker = Chunker::default();
    let dev = common::start(dir.path(), tweak);
    let (a, na, sa) = common::tenant(&dev, "a");
    let (b, nb, sb) = common::tenant(&dev, "b");
    std::thread::scope(|s| {
        s.spawn(|| random_writes(&a, na, 1, 1500));
        s.spawn(|| random_writes(&b, nb, 2, 1500));
    });
    drained(&dev);
    for ns in [na, nb] {
        assert_eq!(indexed(&dev, ns), reference(&dev, ns, chunker));
    }
    let ratio = indexed(&dev, na).dedup_ratio;
    assert!(ratio > 2.0, "values repeat 8 blocks: ratio {ratio}");
    let stats = dev.dedup_stats().unwrap();
    assert!(stats.tasks_run > 2000 && stats.hash_mb_per_s > 0.0);
    drop((a, b));

    // A clean stop saves the index; the next start loads it.
    dev.shutdown().unwrap();
    assert!(dir.path().join("dedup.index").exists());
    let dev = common::start(dir.path(), tweak);
    assert!(!dir.path().join("dedup.index").exists());
    drained(&dev);
    assert_eq!(indexed(&dev, na), reference(&dev, na, chunker));
    let c = cerberus_host::BlockingClient::connect(&dev.local_addr().to_string()).unwrap();
    c.open_namespace(nb, &sb).unwrap();
    random_writes(&c, nb, 3, 500);
    drained(&dev);
    assert_eq!(indexed(&dev, nb), reference(&dev, nb, chunker));
    drop(c);
    dev.shutdown().unwrap();

    // The saved index lost (as after a crash, when none is written): rebuilt from the values.
    std::fs::remove_file(dir.path().join("dedup.index")).unwrap();
    let dev = common::start(dir.path(), tweak);
    drained(&dev);
    for ns in [na, nb] {
        assert_eq!(indexed(&dev, ns), reference(&dev, ns, chunker));
    }
    // A destroyed namespace leaves the index.
    common::admin(&dev).destroy_namespace(na).unwrap();
    drained(&dev);
    assert!(!dev.dedup_stats().unwrap().namespaces.contains_key(&na));
    let _ = sa;
}

#[test]
fn the_backlog_drains_once_writes_stop() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 2;
        c.dedup.enabled = true;
        c.scheduler.policy = Policy::Inline;
    });
    let (a, na, _) = common::tenant(&dev, "a");
    let value = bytes::Bytes::from(vec![7u8; 16 << 10]);
    let mut peak = 0;
    for i in 0..2000 {
        a.namespace(na)
            .put(format!("k{i}").into_bytes(), value.clone())
            .unwrap();
        peak = peak.max(dev.dedup_stats().unwrap().backlog);
    }
    drained(&dev);
    let d = dev.dedup_stats().unwrap();
    assert_eq!(d.total.keys, 2000);
    // 16 KiB of one byte: 128 equal chunks a value, one unique chunk in all.
    assert_eq!((d.total.chunks, d.total.unique_chunks), (2000 * 128, 1));
    let s = dev.scheduler_stats();
    let tasks: u64 = s.cores.iter().map(|c| c.bg_tasks).sum();
    assert!(tasks >= 2000, "{tasks} tasks, peak backlog {peak}");
    // 32 MB through 4 MiB memtables: the engine flushed on the cores' lanes.
    let flushes: u64 = s.cores.iter().map(|c| c.flushes).sum();
    assert!(flushes >= 4, "{flushes} flushes on the lanes");
}

#[test]
fn a_full_backlog_is_shed_then_rescanned_to_the_same_index() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 4;
        c.dedup.enabled = true;
        c.dedup.max_backlog = 8;
        c.scheduler.policy = Policy::Bts;
    });
    let (a, na, _) = common::tenant(&dev, "a");
    let (b, nb, _) = common::tenant(&dev, "b");
    wait_until("setup connections closed", || {
        connections(&dev).iter().sum::<usize>() == 2
    });
    // The tasks go to the idle cores; held, they queue up past the bound.
    let idle: Vec<usize> = (0..4).filter(|&i| connections(&dev)[i] == 0).collect();
    assert!(!idle.is_empty(), "cores {:?}", connections(&dev));
    for &i in &idle {
        dev.hold_core(i, Duration::from_millis(400));
    }
    std::thread::scope(|s| {
        s.spawn(|| random_writes(&a, na, 7, 800));
        s.spawn(|| random_writes(&b, nb, 8, 800));
    });
    drained(&dev);
    let d = dev.dedup_stats().unwrap();
    assert!(d.shed_tasks > 0 && d.rescans > 0, "{d:?}");
    assert_eq!(d.rescans_pending, 0);
    for ns in [na, nb] {
        assert_eq!(indexed(&dev, ns), reference(&dev, ns, Chunker::default()));
    }
}

#[test]
fn an_index_backfill_runs_on_the_lane_the_policy_picks() {
    for policy in [Policy::Inline, Policy::Bts] {
        let dir = tempfile::tempdir().unwrap();
        let dev = common::start(dir.path(), |c| {
            c.network_threads = 4;
            c.scheduler.policy = policy;
        });
        let (a, na, _) = common::tenant(&dev, "a");
        wait_until("setup connections closed", || {
            connections(&dev).iter().sum::<usize>() == 1
        });
        let mine = connections(&dev).iter().position(|&n| n == 1).unwrap();
        for i in 0..2000u32 {
            let doc = format!(r#"{{"g": {}, "pad": "{}"}}"#, i % 10, "x".repeat(200));
            a.namespace(na)
                .put(format!("k{i:05}").into_bytes(), doc.into_bytes())
                .unwrap();
        }
        a.namespace(na)
            .create_index("g", cerberus_host::IndexKind::Classic)
            .unwrap();
        // The lane counts the job once it returns, just after the backfill answered.
        let backfills = || -> u64 {
            dev.scheduler_stats()
                .cores
                .iter()
                .map(|c| c.backfills)
                .sum()
        };
        wait_until("the backfill counted", || backfills() == 1);
        let s = dev.scheduler_stats();
        let lanes: Vec<u64> = s.cores.iter().map(|c| c.backfills).collect();
        assert_eq!(lanes.iter().sum::<u64>(), 1, "{policy:?}: {lanes:?}");
        let on = lanes.iter().position(|&n| n == 1).unwrap();
        match policy {
            // The lane of the core that read the command.
            Policy::Inline => assert_eq!(on, mine),
            // An idle core's.
            _ => assert_ne!(on, mine, "{lanes:?}"),
        }
        let found = a
            .namespace(na)
            .query(&serde_json::json!({"op": "get_by_secondary", "attr": "g", "value": 3}))
            .unwrap();
        assert_eq!(found.records.len(), 200);
    }
}

/// The nice value of each of this process's threads whose name starts with `prefix` (from
/// `/proc/self/task/TID/stat`, field 19).
fn nice_values(prefix: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // After the command's closing parenthesis: field 3 onwards; nice is field 19.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(nice) = rest.split_whitespace().nth(16) {
            out.push(nice.parse().unwrap());
        }
    }
    out
}

/// `scheduler.network_nice` reaches the cores' threads (a positive value, which needs no
/// privilege). Other tests' devices run beside this one at the process's value (0).
#[test]
fn the_cores_run_at_their_nice_value() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 2;
        c.scheduler.network_nice = 4;
    });
    wait_until("both cores at nice 4", || {
        nice_values("cerberus-net-")
            .iter()
            .filter(|&&n| n == 4)
            .count()
            >= 2
    });
    drop(dev);
}

/// `scheduler.background_nice` reaches the lanes' threads, so background work gives way to
/// the cores when both want a CPU.
#[test]
fn the_lanes_run_at_their_nice_value() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 2;
        c.scheduler.background_nice = 13;
    });
    wait_until("both lanes at nice 13", || {
        nice_values("cerberus-lane-")
            .iter()
            .filter(|&&n| n == 13)
            .count()
            >= 2
    });
    drop(dev);
}
