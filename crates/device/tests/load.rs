//! 64 connections doing mixed puts and gets for a bounded time (30 s; `CERBERUS_LOAD_SECS`
//! overrides): no errors, and every acknowledged write reads back afterwards. Prints ops/s
//! and latency percentiles (figures for the record, not assertions).

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn sixty_four_connections_mixed_load() {
    let secs: u64 = std::env::var("CERBERUS_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (_, ns, secret) = common::tenant(&dev, "load");
    let addr = dev.local_addr().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for t in 0..64u32 {
        let (addr, secret, stop) = (addr.clone(), secret.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let c = cerberus_host::BlockingClient::connect(&addr).unwrap();
            c.open_namespace(ns, &secret).unwrap();
            // Last acknowledged value per key this connection wrote (keys are its own).
            let mut acked: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            let mut lat = Vec::new();
            let mut i = 0u64;
            let mut rng = (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            while !stop.load(Ordering::Relaxed) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let key = format!("t{t:02}-k{:05}", rng % 2000).into_bytes();
                let start = Instant::now();
                if rng.is_multiple_of(2) {
                    let value =
                        format!("{t}-{i}-{}", "x".repeat((rng % 900) as usize)).into_bytes();
                    c.namespace(ns)
                        .put(key.clone(), value.clone())
                        .expect("put");
                    acked.insert(key, value);
                } else {
                    let got = c.namespace(ns).get(key.clone()).expect("get");
                    assert_eq!(got.as_deref(), acked.get(&key).map(|v| v.as_slice()));
                }
                lat.push(start.elapsed());
                i += 1;
            }
            (acked, lat)
        }));
    }
    let began = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let mut all_lat = Vec::new();
    let mut acked_all = Vec::new();
    for t in threads {
        let (acked, lat) = t.join().expect("a client failed");
        all_lat.extend(lat);
        acked_all.push(acked);
    }
    let elapsed = began.elapsed().as_secs_f64();
    all_lat.sort();
    let pct = |p: f64| all_lat[((all_lat.len() as f64 * p) as usize).min(all_lat.len() - 1)];
    println!(
        "load: 64 connections, {:.0} ops/s ({} ops in {elapsed:.1} s), p50 {:?} p99 {:?} p999 {:?}",
        all_lat.len() as f64 / elapsed,
        all_lat.len(),
        pct(0.5),
        pct(0.99),
        pct(0.999)
    );
    // Every acknowledged write reads back, through a fresh connection.
    let (check, _, _) = {
        let c = cerberus_host::BlockingClient::connect(&addr).unwrap();
        c.open_namespace(ns, &secret).unwrap();
        (c, ns, ())
    };
    let mut n = 0;
    for acked in &acked_all {
        for (k, v) in acked {
            assert_eq!(
                check.namespace(ns).get(k.clone()).unwrap().as_deref(),
                Some(v.as_slice())
            );
            n += 1;
        }
    }
    assert!(n > 0);
    dev.shutdown().unwrap();
}
