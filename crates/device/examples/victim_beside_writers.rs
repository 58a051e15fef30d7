//! A victim reading one get at a time (reservation 300/s) beside writers that put as fast as
//! they can (64 puts in flight each), on a device of one network thread, as
//! `tests/shares.rs` (`a_reservation_keeps_a_reader_served_beside_writers`) runs it: the
//! victim's gets/s, p50 and p99, and the writers' puts/s, alone and beside 7 writers, with
//! shares on and off, each the median of several runs.
//!
//! `cargo run --profile test -p cerberus-device --example victim_beside_writers --
//! [runs] [writers] [ms] [niced]` (defaults 3, 7, 700 and `off`; the test profile is the
//! tests' opt-level). `niced`: `on` runs the writers' client threads at nice 19, a model of
//! clients on other machines (they take no CPU from the device there), `both` measures
//! each way, alternated.

use bytes::Bytes;
use cerberus_device::{Device, DeviceConfig, DeviceHandle};
use cerberus_engine::IoShares;
use cerberus_host::BlockingClient;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error>;

/// What one run measured.
#[derive(Clone, Copy, Default)]
struct Run {
    gets_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    puts_per_s: f64,
}

fn start(dir: &std::path::Path, shares: bool) -> Result<DeviceHandle, Error> {
    let mut c = DeviceConfig {
        data_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        workers: 4,
        ..DeviceConfig::default()
    };
    c.engine.memtable_bytes = 4 << 20;
    c.engine.cache_bytes = 8 << 20;
    c.network_threads = 1;
    c.network_spin_us = 0;
    c.shares.enabled = shares;
    Ok(Device::start(c)?)
}

/// A new namespace and a client authenticated for it.
fn tenant(dev: &DeviceHandle, name: &str) -> Result<(BlockingClient, u32), Error> {
    let addr = dev.local_addr().to_string();
    let admin = BlockingClient::connect(&addr)?;
    admin.authenticate_admin(dev.admin_secret())?;
    let (ns, secret) = admin.create_namespace(name)?;
    let c = BlockingClient::connect(&addr)?;
    c.open_namespace(ns, &secret)?;
    Ok((c, ns))
}

/// Lowers the calling thread alone to nice 19 (no privilege needed to lower oneself).
fn nice_this_thread() {
    // SAFETY: gettid and setpriority take and return plain integers.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
    assert_eq!(r, 0, "setpriority: {}", std::io::Error::last_os_error());
}

/// A writer putting 64 at a time until `stop`, counting its puts in `puts`; at nice 19 if
/// `niced`.
fn writer(
    c: BlockingClient,
    ns: u32,
    stop: Arc<AtomicBool>,
    puts: Arc<AtomicU64>,
    niced: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
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
            if c.namespace(ns).put_many(pairs).is_err() {
                return;
            }
            puts.fetch_add(64, Relaxed);
        }
    })
}

fn once(writers: usize, shares: bool, niced: bool, run: Duration) -> Result<Run, Error> {
    let dir = tempfile::tempdir()?;
    let dev = start(dir.path(), shares)?;
    let (c, victim) = tenant(&dev, "victim")?;
    c.namespace(victim).put("k00001", "v")?;
    let floor = IoShares {
        reservation_ops: 300,
        ..IoShares::default()
    };
    dev.set_shares(victim, floor)?;
    let stop = Arc::new(AtomicBool::new(false));
    let puts = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for w in 0..writers {
        let (wc, ns) = tenant(&dev, &format!("writer{w}"))?;
        threads.push(writer(wc, ns, stop.clone(), puts.clone(), niced));
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut lat = Vec::new();
    let before = puts.load(Relaxed);
    let t = Instant::now();
    while t.elapsed() < run {
        let one = Instant::now();
        c.namespace(victim).get("k00001")?;
        lat.push(one.elapsed());
    }
    let secs = t.elapsed().as_secs_f64();
    let wrote = puts.load(Relaxed) - before;
    stop.store(true, Relaxed);
    for t in threads {
        let _ = t.join();
    }
    dev.shutdown()?;
    lat.sort();
    let ms = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)].as_secs_f64() * 1e3;
    Ok(Run {
        gets_per_s: lat.len() as f64 / secs,
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
        puts_per_s: wrote as f64 / secs,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Error> {
    let arg = |i: usize, default: u64| -> Result<u64, Error> {
        Ok(std::env::args().nth(i).map_or(Ok(default), |a| a.parse())?)
    };
    let (runs, writers, ms) = (arg(1, 3)?.max(1), arg(2, 7)?, arg(3, 700)?);
    let niced: &[bool] = match std::env::args().nth(4).as_deref() {
        None | Some("off") => &[false],
        Some("on") => &[true],
        Some("both") => &[false, true],
        Some(other) => return Err(format!("niced: on, off or both, not {other}").into()),
    };
    let cases: Vec<(usize, bool, bool)> = [(0, true), (writers as usize, true)]
        .into_iter()
        .chain([(0, false), (writers as usize, false)])
        .flat_map(|(w, s)| niced.iter().map(move |&n| (w, s, n)))
        // Alone, no writer to nice.
        .filter(|&(w, _, n)| w > 0 || !n)
        .collect();
    // Runs alternate between the cases, so a change of the machine's load spreads over all.
    let mut all: Vec<Vec<Run>> = vec![Vec::new(); cases.len()];
    for _ in 0..runs {
        for (i, &(w, shares, niced)) in cases.iter().enumerate() {
            let r = once(w, shares, niced, Duration::from_millis(ms))?;
            println!(
                "  writers {w} shares {shares} niced {niced}: victim {:.0} gets/s p50 {:.3} ms p99 {:.3} ms; writers {:.0} puts/s",
                r.gets_per_s, r.p50_ms, r.p99_ms, r.puts_per_s
            );
            all[i].push(r);
        }
    }
    for (&(w, shares, niced), all) in cases.iter().zip(&all) {
        let m = |f: fn(&Run) -> f64| median(all.iter().map(f).collect());
        println!(
            "writers {w} shares {shares} niced {niced} (median of {runs}): victim {:.0} gets/s p50 {:.3} ms p99 {:.3} ms; writers {:.0} puts/s",
            m(|r| r.gets_per_s), m(|r| r.p50_ms), m(|r| r.p99_ms), m(|r| r.puts_per_s)
        );
    }
    Ok(())
}
