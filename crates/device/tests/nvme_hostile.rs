//! Hostile hosts on the NVMe/TCP port, each case beside a tenant whose `BlockingClient` over
//! NVMe/TCP keeps putting and getting (every call succeeds, every value reads back):
//! a storm (silent sockets, trickled ICReqs, Connects and capsules, garbage, connections
//! past the cap), hosts that never read their Retrieves' data, hosts that never send the
//! data their Stores announced, and hosts that fill their queue and flood past it. Every
//! hostile socket ends closed by the device; its memory stays within a bound derived from
//! the configuration. Latencies are printed, never asserted. Deadlines are shortened to
//! about a second so that the file runs in seconds.

mod common;

use bytes::{Bytes, BytesMut};
use cerberus_device::{DeviceConfig, DeviceHandle};
use cerberus_host::nvme::{NvmeError, NvmeHost, NvmeTarget};
use cerberus_host::proto::nvme::{
    connect_data, Digests, KvCommand, KvKey, KvOpcode, Pdu, Sqe, FABRICS_OPCODE, PFV_1_0,
};
use cerberus_host::{BlockingClient, ClientConfig};
use common::{SUBNQN, TEST_HOSTNQN};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The hostile hosts' NQN: granted the tenant's namespace, as a misbehaving tenant would be.
const HOST: &str = "nqn.2014-08.org.example:hostile";
/// Every deadline in these tests is about a second; nothing should take this long.
const GENEROUS: Duration = Duration::from_secs(15);
/// Room in the process for what these tests do not control (threads, allocator, runtime).
const SLACK: u64 = 12 << 20;

use common::{alone, rss_bytes};

/// Samples the process's memory every 20 ms until dropped: the peak growth over the start.
struct Peak(u64, Arc<AtomicU64>);

impl Peak {
    fn start() -> Peak {
        let peak = Arc::new(AtomicU64::new(0));
        let weak = Arc::downgrade(&peak);
        std::thread::spawn(move || {
            while let Some(p) = weak.upgrade() {
                p.fetch_max(rss_bytes(), Ordering::Relaxed);
                drop(p);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Peak(rss_bytes(), peak)
    }

    fn growth(&self) -> u64 {
        let peak = self.1.fetch_max(rss_bytes(), Ordering::Relaxed);
        peak.max(rss_bytes()).saturating_sub(self.0)
    }
}

use common::metric;

/// Waits (up to `GENEROUS`) until the open connections (both ports) are `n`.
fn wait_open(dev: &DeviceHandle, n: u64) {
    let until = Instant::now() + GENEROUS;
    while metric(dev, "cerberus_connections_open") != n && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(metric(dev, "cerberus_connections_open"), n);
}

/// What the engine may hold besides the connections: the memtable, one being flushed, the
/// cache (the settings `common::start` gives).
fn engine_bytes(c: &DeviceConfig) -> u64 {
    2 * c.engine.memtable_bytes as u64 + c.engine.cache_bytes
}

/// A device with its NVMe/TCP target: the tenant's host granted all, `HOST` the namespace
/// "kv". Returns it, its config, the namespace and its secret.
fn device(
    dir: &std::path::Path,
    tweak: impl FnOnce(&mut DeviceConfig),
) -> (DeviceHandle, DeviceConfig, u32, String) {
    let mut config = None;
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(TEST_HOSTNQN.into(), vec!["*".into()]);
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
        c.write_timeout_ms = 1000;
        c.frame_timeout_ms = 1000;
        c.nvme.icreq_timeout_ms = 1000;
        c.nvme.idle_timeout_secs = 60;
        tweak(c);
        config = Some(c.clone());
    });
    // The native admin connection closes before the tests count connections.
    let (ns, secret) = common::admin(&dev).create_namespace("kv").expect("kv");
    wait_open(&dev, 0);
    (dev, config.expect("configured"), ns, secret)
}

/// The tenant: one thread putting and getting 1 KiB values through a `BlockingClient` over
/// NVMe/TCP, every call checked.
struct Tenant {
    stop: Arc<AtomicBool>,
    calls: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<Vec<Duration>>,
}

impl Tenant {
    fn start(dev: &DeviceHandle, ns: u32, secret: &str) -> Tenant {
        let addr = dev.nvme_addr().expect("nvme on").to_string();
        let secret = secret.to_string();
        let (stop, calls) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (s, n) = (stop.clone(), calls.clone());
        let thread = std::thread::spawn(move || {
            let config = ClientConfig::new(addr).with_nvme(SUBNQN, TEST_HOSTNQN);
            let c = BlockingClient::connect_with(config).expect("tenant connects");
            c.open_namespace(ns, &secret).expect("tenant authenticates");
            let mut lat = Vec::new();
            let mut i = 0u32;
            while !s.load(Ordering::Relaxed) {
                let (key, value) = (format!("t{:03}", i % 200), vec![(i % 251) as u8; 1024]);
                let why = |e: cerberus_host::Error| -> ! {
                    panic!("tenant: {e:?} ({:?})", c.close_reason())
                };
                let t = Instant::now();
                let put = c.namespace(ns).put(key.clone(), value.clone());
                put.unwrap_or_else(|e| why(e));
                lat.push(t.elapsed());
                let t = Instant::now();
                let got = c.namespace(ns).get(key).unwrap_or_else(|e| why(e));
                lat.push(t.elapsed());
                assert_eq!(got.as_deref(), Some(&value[..]), "the tenant's value");
                i += 1;
                n.store(u64::from(i), Ordering::Relaxed);
            }
            lat
        });
        let t = Tenant {
            stop,
            calls,
            thread,
        };
        t.wait_past(0);
        t
    }

    /// Waits (up to `GENEROUS`) until the tenant has done more than `n` rounds.
    fn wait_past(&self, n: u64) -> u64 {
        let until = Instant::now() + GENEROUS;
        while self.calls.load(Ordering::Relaxed) <= n && Instant::now() < until {
            assert!(!self.thread.is_finished(), "the tenant failed");
            std::thread::sleep(Duration::from_millis(5));
        }
        let done = self.calls.load(Ordering::Relaxed);
        assert!(done > n, "the tenant was not served");
        done
    }

    /// Stops it (it must have been served during the case) and prints its latencies.
    fn finish(self, case: &str, during: u64) {
        self.wait_past(during);
        self.stop.store(true, Ordering::Relaxed);
        let mut lat = self.thread.join().expect("every tenant call succeeded");
        lat.sort();
        let at = |q: usize| lat[(lat.len() * q / 100).min(lat.len() - 1)];
        println!(
            "{case}: tenant {} calls, p50 {:?}, p99 {:?}, max {:?}",
            lat.len(),
            at(50),
            at(99),
            lat[lat.len() - 1]
        );
    }
}

/// Reads `s` (and drops what it reads) until the device closes it; when, or None past
/// `until`.
fn closed_by(s: &mut TcpStream, until: Instant) -> Option<Instant> {
    let mut b = vec![0u8; 64 << 10];
    loop {
        let left = until.checked_duration_since(Instant::now())?;
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        match s.read(&mut b) {
            Ok(0) => return Some(Instant::now()),
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock) => return None,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut) => return None,
            Err(_) => return Some(Instant::now()),
        }
    }
}

/// Asserts every socket of `group` closed within `GENEROUS` of `from`; prints when.
fn all_closed(group: &str, socks: &mut [TcpStream], from: Instant) {
    let until = from + GENEROUS;
    let mut last = Duration::ZERO;
    for s in socks.iter_mut() {
        let at = closed_by(s, until).unwrap_or_else(|| panic!("a {group} socket is still open"));
        last = last.max(at - from);
    }
    println!(
        "  {} {group}: all closed by the device within {last:?}",
        socks.len()
    );
}

fn icreq() -> BytesMut {
    let mut b = BytesMut::new();
    let pdu = Pdu::IcReq {
        pfv: PFV_1_0,
        hpda: 0,
        digests: Digests::default(),
        maxr2t: 0,
    };
    pdu.encode(Digests::default(), &mut b);
    b
}

/// An admin queue's Connect capsule for `HOST`, its 1,024 bytes of data in the capsule.
fn connect_capsule() -> BytesMut {
    let data = connect_data([7; 16], 0xFFFF, SUBNQN, HOST);
    let mut sqe = Sqe {
        opcode: FABRICS_OPCODE,
        nsid: 0x01,
        ..Sqe::default()
    };
    sqe.cdw[1] = 31;
    sqe.dptr[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
    sqe.dptr[15] = 0x01;
    let mut b = BytesMut::new();
    let data = Bytes::from(data);
    Pdu::CapsuleCmd { sqe, data }.encode(Digests::default(), &mut b);
    b
}

/// A KV capsule (data through R2T or into the host's buffer) of `size` bytes.
fn kv_capsule(ns: u32, cid: u16, opcode: KvOpcode, key: &[u8], size: u32, out: &mut BytesMut) {
    let mut sqe = Sqe {
        nsid: ns,
        ..Sqe::default()
    };
    let cmd = KvCommand {
        opcode,
        key: KvKey::new(key).expect("a test key of at most 16 bytes"),
        size,
        options: 0,
    };
    cmd.encode(&mut sqe);
    sqe.cid = cid;
    sqe.dptr[8..12].copy_from_slice(&size.to_le_bytes());
    sqe.dptr[15] = 0x5A;
    let data = Bytes::new();
    Pdu::CapsuleCmd { sqe, data }.encode(Digests::default(), out);
}

/// Connects `HOST` (admin and I/O queue) and hands back both queues' sockets as std ones.
fn connected(dev: &DeviceHandle) -> (TcpStream, TcpStream) {
    common::rt().block_on(async {
        let h = NvmeHost::connect(&common::nvme_target(dev, HOST))
            .await
            .expect("the hostile host connects");
        let (admin, _) = h.admin.into_std().expect("admin socket");
        let (io, _) = h.io.into_std().expect("I/O socket");
        (admin, io)
    })
}

/// Sends `bytes` one a second on a clone of `s` (the device closing it ends this).
fn trickle(s: &TcpStream, bytes: BytesMut) {
    let mut w = s.try_clone().expect("clone");
    std::thread::spawn(move || {
        for b in bytes.iter() {
            if w.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
}

/// Connects to `addr` and reads the ICResp of an ICReq sent whole.
fn past_icreq(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(&icreq()).expect("ICReq");
    let mut resp = [0u8; 128];
    s.read_exact(&mut resp).expect("ICResp");
    s
}

/// Case 1: a storm on the NVMe/TCP port. The tenant holds its two queues before it begins
/// (past `max_connections`, a newcomer is closed: the cap cannot tell a tenant from a
/// hostile host).
#[test]
fn a_tenant_is_served_through_a_storm_on_the_nvme_port() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let (dev, cfg, ns, secret) = device(dir.path(), |c| {
        c.nvme.max_connections = 48;
        c.nvme.max_h2c_data = 16 << 10;
    });
    let addr = dev.nvme_addr().unwrap().to_string();
    let tenant = Tenant::start(&dev, ns, &secret);
    let peak = Peak::start();
    let calls = tenant.calls.load(Ordering::Relaxed);
    let storm = Instant::now();
    // Hosts that connect properly, then trickle a KV capsule on their I/O queue: only the
    // deadline on a whole PDU closes them (the idle one is a minute).
    let mut capsule_admin = Vec::new();
    let mut capsule_io = Vec::new();
    for _ in 0..2 {
        let (admin, io) = connected(&dev);
        let mut cap = BytesMut::new();
        kv_capsule(ns, 1, KvOpcode::Retrieve, b"k", 64, &mut cap);
        trickle(&io, cap);
        capsule_admin.push(admin);
        capsule_io.push(io);
    }
    let connected_at = Instant::now();
    // An ICReq trickled; a Connect trickled after a whole ICReq; silent after the ICReq.
    let mut icreqs: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    icreqs.iter().for_each(|s| trickle(s, icreq()));
    let mut connects: Vec<TcpStream> = (0..8).map(|_| past_icreq(&addr)).collect();
    connects.iter().for_each(|s| trickle(s, connect_capsule()));
    let mut unconnected: Vec<TcpStream> = (0..8).map(|_| past_icreq(&addr)).collect();
    // Garbage, then silent sockets (most past the cap).
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut garbage: Vec<TcpStream> = (0..30)
        .map(|_| common::garbage_socket(&addr, &mut rng))
        .collect();
    let mut silent: Vec<TcpStream> = (0..150)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    println!("storm: on in {:?}", storm.elapsed());
    let during = tenant.wait_past(calls);

    all_closed("garbage", &mut garbage, storm);
    all_closed("silent (no ICReq, or past the cap)", &mut silent, storm);
    all_closed("trickled ICReq", &mut icreqs, storm);
    all_closed("trickled Connect", &mut connects, storm);
    all_closed("silent after the ICReq", &mut unconnected, storm);
    all_closed("trickled capsule", &mut capsule_io, connected_at);
    // Their admin queues stay (the idle deadline is a minute): then only the tenant's two.
    wait_open(&dev, 2 + capsule_admin.len() as u64);
    drop(capsule_admin);
    wait_open(&dev, 2);
    for (name, at_least) in [
        ("cerberus_connections_refused_total", 1),
        ("cerberus_protocol_errors_total", 1),
        ("cerberus_frame_timeouts_total", 2),
        ("cerberus_auth_timeouts_total", 8),
    ] {
        let n = metric(&dev, name);
        println!("  {name} {n}");
        assert!(n >= at_least, "{name}: {n}");
    }
    // What the device may hold: per connection slot its read buffer (one PDU and a read's
    // 16 KiB) and a little state; besides, the engine.
    let per_conn = u64::from(cfg.nvme.max_h2c_data.max(cfg.nvme.in_capsule_bytes)) + (32 << 10);
    let bound = cfg.nvme.max_connections as u64 * per_conn + engine_bytes(&cfg) + SLACK;
    let grew = peak.growth();
    println!(
        "storm: memory +{} KiB (bound {} KiB)",
        grew >> 10,
        bound >> 10
    );
    assert!(grew < bound, "memory grew by {grew} bytes");
    tenant.finish("storm", during);
}

/// Case 2: hosts that send Retrieves of a 1 MiB value and never read: each I/O queue is
/// closed at the write deadline, holding no more than its byte budget meanwhile.
#[test]
fn hosts_that_never_read_their_data_are_closed_at_the_write_deadline() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let (dev, cfg, ns, secret) = device(dir.path(), |c| {
        c.nvme.max_queue_bytes = 2 << 20;
    });
    let value = 1u32 << 20;
    store_as_host(&dev, ns, b"big", value);
    let tenant = Tenant::start(&dev, ns, &secret);
    let peak = Peak::start();
    let calls = tenant.calls.load(Ordering::Relaxed);
    let (hosts, gets) = (4usize, 32u16);
    let start = Instant::now();
    let mut admins = Vec::new();
    let mut ios = Vec::new();
    for _ in 0..hosts {
        let (admin, mut io) = connected(&dev);
        let mut out = BytesMut::new();
        for cid in 0..gets {
            kv_capsule(ns, cid, KvOpcode::Retrieve, b"big", value, &mut out);
        }
        io.write_all(&out).unwrap();
        admins.push(admin);
        ios.push(io);
    }
    // Closed at the deadline: nothing read until then.
    let until = start + GENEROUS;
    while metric(&dev, "cerberus_write_timeouts_total") < hosts as u64 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "unread data: {hosts} queues at their write deadline after {:?}",
        start.elapsed()
    );
    assert_eq!(metric(&dev, "cerberus_write_timeouts_total"), hosts as u64);
    let during = tenant.wait_past(calls);
    all_closed("unread I/O queue", &mut ios, start);
    wait_open(&dev, 2 + hosts as u64);
    drop(admins);
    wait_open(&dev, 2);
    // Per queue: its budget of answers, the answer being encoded (a value and its copy),
    // what is queued for the socket (256 KiB).
    let per_queue = 2 * u64::from(cfg.nvme.max_queue_bytes) + 2 * u64::from(value) + (256 << 10);
    let bound = hosts as u64 * per_queue + engine_bytes(&cfg) + SLACK;
    let asked = hosts as u64 * u64::from(gets) * u64::from(value);
    let grew = peak.growth();
    println!(
        "unread data: memory +{} KiB (bound {} KiB; the hosts asked for {} KiB)",
        grew >> 10,
        bound >> 10,
        asked >> 10
    );
    assert!(grew < bound, "memory grew by {grew} bytes");
    tenant.finish("unread data", during);
}

/// One round of case 3 for one host: 32 Stores of `value` bytes announced, all but a byte
/// of each R2T's data sent, then silence on the I/O queue (its admin queue kept alive).
/// The R2Ts it got, and when the device closed its I/O queue.
/// Chattering KV Exists a hostile host sends at most: with its 8 Stores, its queue's 32
/// entries. At 200 ms each, 4.8 s: far past the 500 ms frame deadline.
const CHATTER: u16 = 24;

/// A host that announces 8 Stores of `value` bytes and sends all of each one's data but a
/// byte, then chatters: a KV Exist on the same queue every 200 ms, up to `CHATTER` (each a
/// whole PDU, which must not restart the owed data's deadline). Its R2Ts, and when the
/// device closed it (None: not while it chattered).
async fn stores_without_data(t: NvmeTarget, ns: u32, value: u32) -> (u32, Option<Instant>) {
    let mut h = NvmeHost::connect(&t)
        .await
        .expect("the hostile host connects: no slot leaked");
    let mut out = BytesMut::new();
    for cid in 0..8u16 {
        kv_capsule(ns, cid, KvOpcode::Store, b"pending", value, &mut out);
    }
    h.io.send_raw(&out).await.unwrap();
    let mut r2ts = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut cid = 100u16;
    loop {
        tokio::select! {
            pdu = h.io.recv() => match pdu {
                Ok(Pdu::R2T { cccid, ttag, r2tl, .. }) => {
                    assert_eq!(r2tl, value);
                    r2ts += 1;
                    let (half, rest) = (value / 2, value / 2 - 1);
                    for (datao, len) in [(0, half), (half, rest)] {
                        let data = Bytes::from(vec![1u8; len as usize]);
                        let pdu = Pdu::H2CData { cccid, ttag, datao, last: false, data };
                        if h.io.send(&pdu).await.is_err() {
                            // Closed meanwhile (the device may close at any PDU).
                            return (r2ts, Some(Instant::now()));
                        }
                    }
                }
                // The chatter's answers.
                Ok(Pdu::CapsuleResp { cqe }) if cqe.cid >= 100 => {}
                Ok(other) => panic!("unexpected {other:?}"),
                Err(NvmeError::Closed | NvmeError::Io(_)) => return (r2ts, Some(Instant::now())),
                Err(e) => panic!("unexpected {e}"),
            },
            _ = tick.tick() => {
                h.keep_alive().await.expect("the admin queue stays");
                if cid == 100 + CHATTER {
                    return (r2ts, None);
                }
                let mut out = BytesMut::new();
                kv_capsule(ns, cid, KvOpcode::Exist, b"chatter", 0, &mut out);
                cid += 1;
                if h.io.send_raw(&out).await.is_err() {
                    return (r2ts, Some(Instant::now()));
                }
            }
        }
    }
}

/// Case 3: hosts that announce large Stores and never send all their data: the Stores
/// waiting for it hold at most `max_queue_bytes` per queue, the queue is closed at the frame
/// deadline (data an R2T asked for is owed as the rest of a PDU is; before issue 61's second
/// round it stayed until the idle deadline), however much else the host sends on the queue
/// meanwhile (before the third round, any whole PDU restarted the deadline: a host sending a
/// KV Exist every 200 ms kept its Stores' bytes for good), and the next rounds find every
/// slot and byte given back.
#[test]
fn stores_whose_data_never_comes_are_bounded_and_closed_at_the_frame_deadline() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let (hosts, rounds, value) = (4usize, 3, 256u32 << 10);
    let (dev, cfg, ns, secret) = device(dir.path(), |c| {
        c.nvme.idle_timeout_secs = 1;
        // Before the idle deadline: the owing queues close at this one.
        c.frame_timeout_ms = 500;
        c.nvme.max_queue_bytes = 1 << 20;
        // The hosts' queues and the tenant's: a leaked slot would leave a later round's
        // host without one.
        c.nvme.max_connections = 2 * hosts + 4;
    });
    // One connection throughout: its admin queue is silent past every idle deadline,
    // kept while its I/O queue is busy (`controllers::Activity`).
    let tenant = Tenant::start(&dev, ns, &secret);
    let peak = Peak::start();
    let budget = u64::from(cfg.nvme.max_queue_bytes);
    let mut during = 0;
    for round in 0..rounds {
        let calls = tenant.calls.load(Ordering::Relaxed);
        let start = Instant::now();
        let results = common::rt().block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..hosts {
                set.spawn(stores_without_data(
                    common::nvme_target(&dev, HOST),
                    ns,
                    value,
                ));
            }
            let mut results = Vec::new();
            while let Some(r) = set.join_next().await {
                results.push(r.expect("a hostile host's task"));
            }
            results
        });
        let mut last = Duration::ZERO;
        for (r2ts, closed) in results {
            assert!(
                r2ts >= 1 && u64::from(r2ts * value) <= budget,
                "{r2ts} R2Ts"
            );
            let closed = closed.expect("a queue owing data was not closed while it chattered");
            last = last.max(closed - start);
        }
        println!("pending data, round {round}: {hosts} I/O queues closed within {last:?}");
        during = tenant.wait_past(calls);
    }
    let owed = metric(&dev, "cerberus_frame_timeouts_total");
    println!("  cerberus_frame_timeouts_total {owed}");
    assert!(owed >= (hosts * rounds) as u64);
    tenant.finish("pending data", during);
    wait_open(&dev, 0);
    // Per queue: its budget of values (each allocated whole at its R2T), a PDU being read.
    let per_queue = budget + u64::from(cfg.nvme.max_h2c_data) + (32 << 10);
    let bound = hosts as u64 * per_queue + engine_bytes(&cfg) + SLACK;
    let grew = peak.growth();
    println!(
        "pending data: memory +{} KiB over {rounds} rounds (bound for one: {} KiB)",
        grew >> 10,
        bound >> 10
    );
    assert!(grew < bound, "memory grew by {grew} bytes");
}

/// Writes `capsules` on `io` until the device stops it; the bytes written.
fn flood(mut io: TcpStream, capsules: BytesMut) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        // Not the device neither reading nor closing: that fails below.
        io.set_write_timeout(Some(GENEROUS)).unwrap();
        let mut written = 0;
        // Far more than the kernel's buffers on both sides hold.
        while written < 256 << 20 {
            match io.write_all(&capsules) {
                Ok(()) => written += capsules.len(),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    panic!("the device neither read nor closed the queue")
                }
                Err(_) => return written,
            }
        }
        panic!("the device took {written} bytes of capsules past the queue's depth")
    })
}

/// Case 4: a full queue. One host's 32 Stores wait for data it never sends (it reads no
/// R2T) and it floods capsules past the queue's depth: the device ends the connection at
/// the first one past it. Another floods Retrieves and reads nothing: ended the same way
/// once 32 are unanswered (held for one engine read, or their answers backed up), else at
/// the write deadline once the device stops reading it. Neither is buffered without bound.
#[test]
fn capsules_past_a_full_queue_are_refused_not_buffered() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let (dev, cfg, ns, secret) = device(dir.path(), |_| {});
    let value = 64u32 << 10;
    store_as_host(&dev, ns, b"v64k", value);
    let tenant = Tenant::start(&dev, ns, &secret);
    let peak = Peak::start();
    let calls = tenant.calls.load(Ordering::Relaxed);
    let (errors, timeouts) = (
        metric(&dev, "cerberus_protocol_errors_total"),
        metric(&dev, "cerberus_write_timeouts_total"),
    );
    let start = Instant::now();
    let (stores_admin, stores_io) = connected(&dev);
    let mut capsules = BytesMut::new();
    for cid in 0..64u16 {
        kv_capsule(ns, cid, KvOpcode::Store, b"never", value, &mut capsules);
    }
    let stores = flood(stores_io, capsules);
    let (gets_admin, gets_io) = connected(&dev);
    let mut capsules = BytesMut::new();
    for cid in 0..64u16 {
        kv_capsule(ns, cid, KvOpcode::Retrieve, b"v64k", value, &mut capsules);
    }
    let gets = flood(gets_io, capsules);
    let stores = stores.join().expect("the Stores' queue was ended");
    println!(
        "full queue: Stores past the depth: closed after {:?}, {} KiB of capsules taken",
        start.elapsed(),
        stores >> 10
    );
    let gets = gets.join().expect("the Retrieves' queue was ended");
    println!(
        "full queue: unread Retrieves: closed after {:?}, {} KiB of capsules taken",
        start.elapsed(),
        gets >> 10
    );
    let during = tenant.wait_past(calls);
    // Each queue ended at the first capsule past its depth (a C2HTermReq) or, had the
    // device answered fast enough to stay within it, at the write deadline.
    let errors = metric(&dev, "cerberus_protocol_errors_total") - errors;
    let timeouts = metric(&dev, "cerberus_write_timeouts_total") - timeouts;
    println!("  protocol errors +{errors}, write timeouts +{timeouts}");
    assert!(errors >= 1 && errors + timeouts >= 2);
    wait_open(&dev, 4);
    drop((stores_admin, gets_admin));
    wait_open(&dev, 2);
    // Per queue: its budget, an answer and its copy, 256 KiB queued for the socket, a read.
    let per_queue = 2 * u64::from(cfg.nvme.max_queue_bytes) + 2 * u64::from(value) + (512 << 10);
    let bound = 2 * per_queue + engine_bytes(&cfg) + SLACK;
    let grew = peak.growth();
    println!(
        "full queue: memory +{} KiB (bound {} KiB)",
        grew >> 10,
        bound >> 10
    );
    assert!(grew < bound, "memory grew by {grew} bytes");
    tenant.finish("full queue", during);
}

/// Stores `key` (`len` bytes) as the hostile host, which then goes.
fn store_as_host(dev: &DeviceHandle, ns: u32, key: &[u8], len: u32) {
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&common::nvme_target(dev, HOST)).await;
        let value = vec![3u8; len as usize];
        h.as_mut().unwrap().store(ns, key, &value, 0).await.unwrap();
    });
    wait_open(dev, 0);
}
