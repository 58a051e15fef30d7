//! The kvs library's stress test (issue 63): a seeded, randomized run of the C API against
//! a device this test starts, over the native wire and over NVMe/TCP. Four worker threads
//! share one device handle and one key space, each with its own key prefix and an exact
//! model of its keys; a fifth works as another tenant through a tenant-credential handle.
//! Each draws sync and async calls, iterators, capacity calls and hostile calls; beside them
//! a client pipelines queries the device answers on its network threads (`pipeliner`), and
//! another pipelines puts each followed by a get of its key (`put_then_get`);
//! then the device restarts on the same data and every model is checked again
//! (docs/stress.md).
//!
//! `CERBERUS_KVS_STRESS_SEED` (one seed), `CERBERUS_KVS_STRESS_MINUTES` (new seeds until
//! the time is up), `CERBERUS_KVS_STRESS_OPS` (operations per thread per seed).

#[path = "stress/async_group.rs"]
mod async_group;
#[path = "stress/asyncs.rs"]
mod asyncs;
#[path = "stress/churn.rs"]
mod churn;
#[path = "stress/device.rs"]
mod device;
#[path = "stress/ffi.rs"]
mod ffi;
#[path = "stress/hostile.rs"]
mod hostile;
#[path = "stress/pipeliner.rs"]
mod pipeliner;
#[path = "stress/put_then_get.rs"]
mod put_then_get;
#[path = "stress/rng.rs"]
mod rng;
#[path = "stress/tenant.rs"]
mod tenant;
#[path = "shared/wire.rs"]
mod wire;
#[path = "stress/worker.rs"]
mod worker;

use device::{
    close_device, close_key_space, create_key_space, open_key_space, Rig, MAIN, MAIN_QUOTA,
    TENANT_QUOTA,
};
use std::time::{Duration, Instant};
use wire::Wire;
use worker::{expect, Ctx, Worker};

const WORKERS: usize = 4;
/// Operations per thread per seed unless `CERBERUS_KVS_STRESS_OPS` says.
const DEFAULT_OPS: usize = 2000;
/// The seeds a run without knobs (CI) tries.
const CI_SEEDS: [u64; 3] = [1, 2, 3];

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn stress(wire: Wire) {
    let ops = env_num("CERBERUS_KVS_STRESS_OPS").map_or(DEFAULT_OPS, |n| n as usize);
    let started = Instant::now();
    let (mut seeds, mut total) = (0u64, 0u64);
    let mut run = |seed: u64| {
        let t = Instant::now();
        match run_seed(wire, seed, ops) {
            Ok(n) => {
                let secs = t.elapsed().as_secs_f64();
                println!(
                    "kvs stress: seed {seed} over {wire:?}: {n} operations in {secs:.1} s ({:.0} ops/s)",
                    n as f64 / secs
                );
                seeds += 1;
                total += n;
            }
            Err(e) => panic!(
                "kvs stress FAILED: seed {seed} over {wire:?} (replay: CERBERUS_KVS_STRESS_SEED={seed} \
                 CERBERUS_KVS_STRESS_OPS={ops}), {e}"
            ),
        }
    };
    if let Some(seed) = env_num("CERBERUS_KVS_STRESS_SEED") {
        run(seed);
    } else if let Some(minutes) = env_num("CERBERUS_KVS_STRESS_MINUTES") {
        let until = started + Duration::from_secs(minutes * 60);
        let mut seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(7, |d| d.as_nanos() as u64 % 1_000_000_000);
        while Instant::now() < until {
            run(seed);
            seed += 1;
        }
    } else {
        CI_SEEDS.iter().for_each(|s| run(*s));
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "kvs stress over {wire:?}: {seeds} seeds, {total} operations in {secs:.1} s ({:.0} ops/s)",
        total as f64 / secs
    );
}

/// One seed on a new device: the workers and the tenant, the restart, the checks after it.
/// The operations made.
fn run_seed(wire: Wire, seed: u64, ops: usize) -> Result<u64, String> {
    let mut rig = Rig::start(wire);
    let dev = rig.open(true)?;
    create_key_space(dev, MAIN, MAIN_QUOTA)?;
    create_key_space(dev, device::TENANT, TENANT_QUOTA)?;
    create_key_space(dev, "scratch", 0)?;
    let ks = open_key_space(dev, MAIN).map_err(|c| format!("open {MAIN}: {c:#x}"))?;
    expect(
        "a second open",
        open_key_space(dev, MAIN).err().unwrap_or(0),
        cerberus_kvs::code::KS_OPEN,
    )?;
    let closed_ks = open_key_space(dev, "scratch").map_err(|c| format!("open scratch: {c:#x}"))?;
    expect("close", close_key_space(closed_ks), 0)?;
    expect(
        "close again",
        close_key_space(closed_ks),
        cerberus_kvs::code::KS_NOT_OPEN,
    )?;
    let closed_dev = rig.open(true)?;
    expect("close a device", close_device(closed_dev), 0)?;
    let tdev = rig.open(false)?;
    let tks = tenant::open_as_tenant(tdev)?;
    let (mut max_key, mut max_value) = (0u32, 0u32);
    // SAFETY: writable u32s.
    unsafe {
        cerberus_kvs::kvs_get_max_key_length(ffi::ptr(dev), &mut max_key);
        cerberus_kvs::kvs_get_max_value_length(ffi::ptr(dev), &mut max_value);
    }
    let ctx = Ctx {
        dev,
        ks,
        closed_ks,
        closed_dev,
        max_key: max_key as usize,
        max_value: max_value as usize,
        capacity: MAIN_QUOTA + TENANT_QUOTA,
    };
    let mut workers: Vec<Worker> = (0..WORKERS).map(|i| Worker::new(i, seed, ctx)).collect();
    let mut tenant = Worker::new(
        WORKERS,
        seed,
        Ctx {
            dev: tdev,
            ks: tks,
            capacity: TENANT_QUOTA,
            ..ctx
        },
    );
    tenant.prefix = workers[0].prefix;
    workers.push(tenant);
    let (results, clients) = std::thread::scope(|s| {
        let handle = rig.handle();
        let pipeliner = s.spawn(move || pipeliner::run(handle, wire, seed));
        let pairs = s.spawn(move || put_then_get::run(handle, seed));
        let churn = s.spawn(move || churn::run(handle, wire, seed));
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|w| {
                s.spawn(move || {
                    w.run(ops)
                        .and_then(|_| w.check_all().map_err(|e| w.failure(&e)))
                })
            })
            .collect();
        let results: Vec<Result<(), String>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a worker panicked".into())))
            .collect();
        let pipelined = pipeliner
            .join()
            .unwrap_or_else(|_| Err("the pipeliner panicked".into()));
        let pairs = pairs
            .join()
            .unwrap_or_else(|_| Err("the put-then-get client panicked".into()));
        let churned = churn
            .join()
            .unwrap_or_else(|_| Err("the churn client panicked".into()));
        (results, pipelined.and(pairs).and(churned))
    });
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    // The clients beside the workers; the churn's destroyed namespaces last.
    let destroyed = clients?;
    churn::check_gone(rig.handle(), &destroyed)?;
    let off_loop = put_then_get::off_loop(rig.handle());
    println!("kvs stress: seed {seed}: {off_loop} writes stored off the loop");
    if off_loop == 0 {
        // Then the put-then-get client tested nothing it is there for.
        return Err("no write was stored off the loop: the engine never fell behind".into());
    }
    let done: u64 = workers.iter().map(|w| w.ops).sum();
    // The restart: everything closed, the device stopped gracefully and started again.
    for h in [ks, tks] {
        expect("close key space", close_key_space(h), 0)?;
    }
    for d in [dev, tdev] {
        expect("close device", close_device(d), 0)?;
    }
    rig.restart();
    // A restart loads nothing of them either (the dedup index is kept across it).
    churn::check_gone(rig.handle(), &destroyed)?;
    let dev = rig.open(true)?;
    let ks = open_key_space(dev, MAIN).map_err(|c| format!("reopen {MAIN}: {c:#x}"))?;
    let tdev = rig.open(false)?;
    let tks = tenant::open_as_tenant(tdev)?;
    for w in workers.iter_mut() {
        let (d, k) = if w.id == WORKERS {
            (tdev, tks)
        } else {
            (dev, ks)
        };
        w.ctx.dev = d;
        w.ctx.ks = k;
        w.note("after the restart".into());
        w.check_all()
            .map_err(|e| w.failure(&format!("after the restart: {e}")))?;
    }
    let (c, util) = ffi::utilization(dev);
    expect("utilization", c, 0)?;
    // After the restart the data is counted: the models' bytes, against both quotas, are a
    // floor (one hundredth of a percent of rounding).
    let bytes: u64 = workers
        .iter()
        .flat_map(|w| w.model.iter())
        .map(|(k, v)| (k.len() + v.len()) as u64)
        .sum();
    let floor = (bytes * 10_000 / (MAIN_QUOTA + TENANT_QUOTA)).saturating_sub(1);
    if util > 10_000 || u64::from(util) < floor {
        return Err(format!(
            "utilization {util} after the restart, with {bytes} B in the models (at least {floor})"
        ));
    }
    for h in [ks, tks] {
        expect("close key space", close_key_space(h), 0)?;
    }
    for d in [dev, tdev] {
        expect("close device", close_device(d), 0)?;
    }
    Ok(done)
}

#[test]
fn kvs_stress_over_the_native_wire() {
    stress(Wire::Native);
}

#[test]
fn kvs_stress_over_nvme_tcp() {
    stress(Wire::Nvme);
}
