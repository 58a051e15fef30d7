//! Connection slots of the NVMe/TCP port (issue 61, point 3): silent sockets that hold every
//! slot are evicted, oldest first, for a host that connects its queues (before, 32 silent
//! sockets reopened as the device closed them locked every host out); one address holds at
//! most `max_connections_per_peer`.

mod common;

use cerberus_device::DeviceHandle;
use cerberus_host::nvme::NvmeHost;
use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const HOST: &str = "nqn.2014-08.org.example:slots";

fn device(dir: &std::path::Path, max: usize, per_peer: usize) -> (DeviceHandle, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes this host at its word.
        c.nvme.require_host_auth = false;
        c.nvme.max_connections = max;
        c.nvme.max_connections_per_peer = per_peer;
        // Long: the pre-Connect deadline alone would not free the slots in time.
        c.nvme.icreq_timeout_ms = 60_000;
    });
    let kv = common::admin(&dev).create_namespace("kv").expect("kv").0;
    (dev, kv)
}

/// Opens `n` sockets that never send a byte, and waits until the device has taken each
/// (given it a slot, or refused it): the attacker holds the slots before the host comes.
fn silent(dev: &DeviceHandle, n: usize) -> Vec<TcpStream> {
    let taken = || {
        common::metric(dev, "cerberus_connections_accepted_total")
            + common::metric(dev, "cerberus_connections_refused_total")
    };
    let before = taken();
    let addr = dev.nvme_addr().unwrap();
    let socks = (0..n)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect();
    let until = Instant::now() + Duration::from_secs(10);
    while taken() < before + n as u64 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    // The evicted ones close, the newcomers take their slots, and they age past the grace
    // a connection that just arrived has (`EVICTION_GRACE`).
    std::thread::sleep(Duration::from_millis(700));
    socks
}

/// Whether the device closed `s` within `within` (a read that times out: still open).
fn closed(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    match s.read(&mut [0u8; 1]) {
        Ok(n) => n == 0,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn silent_sockets_are_evicted_for_a_host_that_connects() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv) = device(dir.path(), 8, 1000);
    let mut held = silent(&dev, 8);
    let until = Instant::now() + Duration::from_secs(10);
    while common::metric(&dev, "cerberus_connections_open") < 8 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    common::rt().block_on(async {
        for round in 0..3u8 {
            let mut h = NvmeHost::connect(&common::nvme_target(&dev, HOST))
                .await
                .unwrap_or_else(|e| {
                    let m = |n| common::metric(&dev, n);
                    panic!(
                        "round {round}: locked out: {e} (open {}, refused {}, evictions {})",
                        m("cerberus_connections_open"),
                        m("cerberus_connections_refused_total"),
                        m("cerberus_evictions_total")
                    )
                });
            h.store(kv, &[round], b"v", 0).await.unwrap();
            assert!(h.exist(kv, &[round]).await.unwrap());
            drop(h);
            // The attacker reopens what the device closed, taking every slot again.
            tokio::time::sleep(Duration::from_millis(200)).await;
            held.retain_mut(|s| !closed(s, Duration::from_millis(1)));
            held.extend(silent(&dev, 8 - held.len()));
        }
    });
    assert!(common::metric(&dev, "cerberus_evictions_total") >= 2);
    drop(held);
    dev.shutdown().unwrap();
}

#[test]
fn one_address_holds_at_most_its_share() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let (dev, _) = device(dir.path(), 64, 4);
    let mut socks = silent(&dev, 5);
    // The fifth from 127.0.0.1 is closed at once; the first four are not.
    assert!(
        closed(&mut socks[4], Duration::from_secs(5)),
        "the fifth stayed"
    );
    for s in &mut socks[..4] {
        assert!(
            !closed(s, Duration::from_millis(100)),
            "one of the four closed"
        );
    }
    dev.shutdown().unwrap();
}
