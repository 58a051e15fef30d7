//! I/O shares over a real device: a limit holds a namespace to its rate, weights divide a
//! contended core, a reservation keeps a reader served beside writers, and the stats show
//! what the shares did. The bounds are loose (a loaded test machine must not fail them);
//! the exact ratios are the tag book's unit tests.

mod common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_engine::IoShares;
use cerberus_host::BlockingClient;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tests measure rates: one at a time, so they do not load the machine for each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new client authenticated for `nsid`.
fn client(dev: &DeviceHandle, nsid: u32, secret: &str) -> BlockingClient {
    let c = BlockingClient::connect(&dev.local_addr().to_string()).expect("connect");
    c.open_namespace(nsid, secret).expect("auth");
    c
}

fn keys(n: usize) -> Vec<Bytes> {
    (0..n).map(|i| Bytes::from(format!("k{i:05}"))).collect()
}

#[test]
fn a_limit_holds_a_namespace_to_its_rate() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (c, ns, _) = common::tenant(&dev, "limited");
    let limit = 200;
    dev.set_shares(
        ns,
        IoShares {
            limit_ops: limit,
            ..IoShares::default()
        },
    )
    .unwrap();
    // Shares that make no sense are refused.
    let bad = IoShares {
        weight: 0,
        ..IoShares::default()
    };
    assert!(dev.set_shares(ns, bad).is_err());
    let t = Instant::now();
    let mut done = 0u64;
    while t.elapsed() < Duration::from_secs(1) {
        // Pipelined: 20 gets in flight at once.
        done += c.namespace(ns).get_many(keys(20)).unwrap().len() as u64;
    }
    let secs = t.elapsed().as_secs_f64();
    let rate = done as f64 / secs;
    assert!(
        done as f64 <= 1.1 * limit as f64 * secs + 5.0,
        "{done} in {secs:.2} s"
    );
    assert!(rate > 0.5 * limit as f64, "{done} in {secs:.2} s");
    // The stats document shows the shares and the waits.
    let doc = c.namespace(ns).stats().unwrap();
    let shares = &doc["shares_served"];
    assert_eq!(doc["shares"]["limit_ops"], limit);
    assert_eq!(shares["settings"]["limit_ops"], limit);
    assert_eq!(shares["enabled"], true);
    assert!(shares["served_ops"].as_u64().unwrap() >= done);
    assert!(shares["limit_waited_ns"].as_u64().unwrap() > 500_000_000);
    let text = dev.metrics_text();
    assert!(text.contains("cerberus_shares_served_ops_total{nsid="));
    dev.shutdown().unwrap();
}

/// Clients of each namespace (`conns` each) pipelining gets on a device of one network
/// thread for `run`: the gets each namespace got.
fn contend(dev: &DeviceHandle, tenants: &[(u32, String)], conns: usize, run: Duration) -> Vec<u64> {
    let stop = Arc::new(AtomicBool::new(false));
    let counts: Arc<Vec<AtomicU64>> = Arc::new(tenants.iter().map(|_| AtomicU64::new(0)).collect());
    let mut threads = Vec::new();
    for (i, (ns, secret)) in tenants.iter().enumerate() {
        for _ in 0..conns {
            let c = client(dev, *ns, secret);
            let (stop, counts, ns) = (stop.clone(), counts.clone(), *ns);
            threads.push(std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let n = c.namespace(ns).get_many(keys(128)).unwrap().len();
                    counts[i].fetch_add(n as u64, Relaxed);
                }
            }));
        }
    }
    std::thread::sleep(run);
    // Counted over the run alone: what finishes after the stop is not.
    let got = counts.iter().map(|c| c.load(Relaxed)).collect();
    stop.store(true, Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    got
}

#[test]
fn weights_divide_a_contended_core() {
    let _serial = serial();
    let mut ratios = Vec::new();
    for enabled in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let dev = common::start(dir.path(), |c| {
            c.network_threads = 1;
            c.network_spin_us = 0;
            c.shares.enabled = enabled;
        });
        let (c1, light, s1) = common::tenant(&dev, "light");
        let (c2, heavy, s2) = common::tenant(&dev, "heavy");
        let w = |weight| IoShares {
            weight,
            ..IoShares::default()
        };
        dev.set_shares(light, w(1)).unwrap();
        dev.set_shares(heavy, w(3)).unwrap();
        let got = contend(
            &dev,
            &[(light, s1), (heavy, s2)],
            4,
            Duration::from_millis(800),
        );
        let ratio = got[1] as f64 / got[0].max(1) as f64;
        let turns = |c: &BlockingClient, ns| {
            c.namespace(ns).stats().unwrap()["shares_served"]["contended_turns"]
                .as_u64()
                .unwrap()
        };
        let (t1, t2) = (turns(&c1, light), turns(&c2, heavy));
        eprintln!(
            "shares enabled={enabled}: light {} heavy {} ratio {ratio:.2}; contended turns {t1} {t2}",
            got[0], got[1]
        );
        if enabled {
            // Where both namespaces had commands waiting, the weights chose: 3 to 1 under a
            // steady backlog, more when the light one had the core alone in between (its P
            // tag moved on then).
            assert!(t1 >= 20, "too few contended turns: {t1} {t2}");
            let r = t2 as f64 / t1 as f64;
            assert!(r >= 2.0, "contended turns {t1} {t2}");
        } else {
            assert_eq!(t1 + t2, 0, "shares off: no turns");
        }
        ratios.push(ratio);
        dev.shutdown().unwrap();
    }
    // The gets each got depend also on the clients' round trips, which leave the core to
    // the light one between the heavy one's batches, and on how much CPU the client threads
    // get beside the device: 1.2-2.0 measured on a quiet 2-CPU machine, 1.13 on a loaded
    // one (0.9-1.1 with shares off). Printed, not asserted: the turns above are what the
    // gate decides.
    eprintln!("gets heavy/light, shares on and off: {ratios:?}");
}

/// Lowers the calling thread alone to nice 19 (no privilege needed to lower oneself).
fn nice_this_thread() {
    // SAFETY: gettid and setpriority take and return plain integers.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
    assert_eq!(r, 0, "setpriority: {}", std::io::Error::last_os_error());
}

/// A victim reading one get at a time for `run` beside `writers` namespaces putting as fast
/// as they can (64 puts in flight each): its gets per second and p99 latency. `niced`: the
/// writers' client threads run at nice 19, a model of clients on other machines, which take
/// no CPU from the device (here they share its 2 CPUs).
fn victim_beside_writers(
    dev: &DeviceHandle,
    writers: usize,
    niced: bool,
    run: Duration,
) -> (f64, Duration) {
    let (c, victim, _) = common::tenant(dev, "victim");
    c.namespace(victim).put("k00001", "v").unwrap();
    dev.set_shares(
        victim,
        IoShares {
            reservation_ops: 300,
            ..IoShares::default()
        },
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for w in 0..writers {
        let (_, ns, secret) = common::tenant(dev, &format!("writer{w}"));
        let c = client(dev, ns, &secret);
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            if niced {
                nice_this_thread();
            }
            let mut i = 0u64;
            while !stop.load(Relaxed) {
                let pairs = (0..64)
                    .map(|_| {
                        i += 1;
                        (Bytes::from(format!("w{i:08}")), Bytes::from(vec![7u8; 100]))
                    })
                    .collect();
                c.namespace(ns).put_many(pairs).unwrap();
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut lat = Vec::new();
    let t = Instant::now();
    while t.elapsed() < run {
        let one = Instant::now();
        c.namespace(victim).get("k00001").unwrap();
        lat.push(one.elapsed());
    }
    let rate = lat.len() as f64 / t.elapsed().as_secs_f64();
    stop.store(true, Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    lat.sort();
    (rate, lat[lat.len() * 99 / 100])
}

#[test]
fn a_reservation_keeps_a_reader_served_beside_writers() {
    let _serial = serial();
    let mut seen = Vec::new();
    for (writers, enabled, niced) in [
        (0, true, false),
        (7, true, false),
        (7, false, false),
        (7, true, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let dev = common::start(dir.path(), |c| {
            c.network_threads = 1;
            c.network_spin_us = 0;
            c.shares.enabled = enabled;
        });
        let (rate, p99) = victim_beside_writers(&dev, writers, niced, Duration::from_millis(700));
        eprintln!(
            "writers {writers} shares {enabled} niced {niced}: victim {rate:.0} gets/s, p99 {p99:?}"
        );
        seen.push(rate);
        dev.shutdown().unwrap();
    }
    // At least 0.9 of its floor of 300/s beside seven writers (the latency is reported, not
    // judged: a loaded test machine would make it flaky). Measured: 18-31k gets/s and p99
    // 0.1-0.3 ms alone; 1400-2300/s and p99 1.9-6.1 ms beside the writers, 14-30x alone
    // with shares on, 9-59x off (see docs/device.md, I/O shares: not yet within 2x of alone).
    assert!(seen[1] >= 270.0, "{seen:?}");
    // The same floor with the writers' clients niced (the model of remote clients). Its p99
    // is not asserted either: 1.0 ms in one run, 3.5-3.7 ms in the example's; the bench's
    // `noisy --device` 4-9x alone (docs/device.md, the noisy-neighbour experiment).
    assert!(seen[3] >= 270.0, "{seen:?}");
}
