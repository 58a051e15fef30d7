//! One memory budget for the whole device (issue 61, point 2): native connections (plain and
//! TLS share the code) count the large replies they have not written in the device's
//! `max_held_bytes`, as NVMe/TCP queues count their commands' data (`nvme_budget.rs`). Past
//! it, a connection that holds something stops reading; one that holds nothing still runs a
//! command at a time, so a victim is served while the budget is spent by others.

mod common;

use bytes::{Bytes, BytesMut};
use cerberus_proto::{Command, Request};
use common::{alone, metric, rss_bytes};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const VALUE: usize = 2 << 20;
const HELD: u64 = 8 << 20;
const CONNS: usize = 4;
const GETS: usize = 32;

/// The frames of an Authenticate for `nsid`, then of `GETS` gets of the values `v0`..`v2`.
fn pipelined_gets(nsid: u32, secret: &str) -> BytesMut {
    let auth = Request::Authenticate {
        secret: Bytes::copy_from_slice(secret.as_bytes()),
    };
    let gets = (0..GETS).map(|i| Request::Retrieve {
        key: Bytes::from(format!("v{}", i % 3)),
    });
    let mut frames = BytesMut::new();
    for (cid, request) in (1..).zip(std::iter::once(auth).chain(gets)) {
        Command { cid, nsid, request }.encode(&mut frames).unwrap();
    }
    frames
}

/// Waits until the device's gets served stop moving (every attacker answered or stopped),
/// at most 30 s: not a timed assertion, the checks come after.
fn settle(dev: &cerberus_device::DeviceHandle) {
    let start = Instant::now();
    let (mut last, mut still) = (u64::MAX, 0);
    while still < 5 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        let now = metric(dev, "cerberus_gets_total");
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
}

/// Before: each connection held every reply its client did not read (4 x 32 gets of 2 MiB:
/// 256 MiB, up to 1,024 x 128 x 2 MiB with the defaults). Now the device holds at most
/// `max_held_bytes` + connections x (one frame + one reply), and a victim is served.
#[test]
fn unread_large_replies_stay_within_the_devices_bound() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.max_held_bytes = HELD;
        c.max_inflight = GETS as u32;
        c.max_value_len = VALUE as u32;
    });
    let (owner, nsid, secret) = common::tenant(&dev, "big");
    let ns = owner.namespace(nsid);
    for i in 0..3 {
        ns.put(format!("v{i}"), vec![i as u8; VALUE]).expect("put");
    }
    for i in 0..3 {
        // Read once: caches and buffers are warm before the memory is measured.
        assert_eq!(
            ns.get(format!("v{i}")).unwrap().map(|v| v.len()),
            Some(VALUE)
        );
    }
    let before = rss_bytes();
    let frames = pipelined_gets(nsid, &secret);
    let attackers: Vec<TcpStream> = (0..CONNS)
        .map(|_| {
            let mut s = TcpStream::connect(dev.local_addr()).expect("connect");
            s.write_all(&frames).expect("send");
            s // never read
        })
        .collect();
    settle(&dev);
    let grown = rss_bytes().saturating_sub(before);
    let held = metric(&dev, "cerberus_held_bytes");
    // One frame (a get's: small) and one reply (a 2 MiB value) past the bound per connection.
    let bound = HELD + CONNS as u64 * (VALUE as u64 + (64 << 10));
    eprintln!("held {held} bytes, RSS grew by {grown} bytes (bound {bound})");
    assert!(
        grown <= bound + (32 << 20),
        "the device's memory grew by {grown} bytes for {CONNS} clients that do not read"
    );
    assert!(held <= bound, "{held} bytes held past {bound}");
    assert!(held > 0, "the unread replies are counted");
    assert!(metric(&dev, "cerberus_budget_waits_total") >= 1);

    // A victim connecting during the attack is served, one command at a time.
    let (victim, vns, _) = common::tenant(&dev, "victim");
    let v = victim.namespace(vns);
    v.put("k", vec![7u8; 100]).expect("victim's put");
    assert_eq!(
        v.get("k").expect("victim's get").as_deref(),
        Some(&[7u8; 100][..])
    );
    // Even a large value: it holds nothing else.
    assert_eq!(
        ns.get("v1").expect("owner's get").map(|v| v.len()),
        Some(VALUE)
    );

    // Every byte comes back once the attackers leave.
    drop(attackers);
    let start = Instant::now();
    while metric(&dev, "cerberus_held_bytes") != 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(metric(&dev, "cerberus_held_bytes"), 0, "held bytes leaked");
    dev.shutdown().unwrap();
}
