//! `BlockingClient` over NVMe/TCP, whose callers' threads drive the I/O queue themselves
//! (`crates/host/src/nvme_direct.rs`): threads sharing one client, with KV commands, vendor
//! pairs, values past the capsule (R2T) and past a Retrieve's buffer mixed, agree with a model; a connection the
//! device side closes in the middle of calls fails them instead of leaving them waiting.

use crate::common;

use bytes::Bytes;
use cerberus_host::{BlockingClient, BlockingNamespace, Error};
use common::Wire;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Long enough that only a hang reaches it.
const HANG: Duration = Duration::from_secs(30);

fn value(thread: usize, i: usize, round: usize) -> Bytes {
    // Every fifth value is past the 8 KiB capsule: a pair whose frame goes through R2T; every
    // 23rd past a Retrieve's 64 KiB buffer too: a short key's get then goes again as the
    // pair for the whole value.
    let len = if i.is_multiple_of(23) {
        (64 << 10) + 100 + i
    } else if i.is_multiple_of(5) {
        9000 + i
    } else {
        10 + i % 300
    };
    Bytes::from(vec![(thread * 31 + i + round) as u8; len])
}

fn key(thread: usize, i: usize) -> Bytes {
    // Short keys go as KV commands, long ones (past 16 bytes) as the vendor pair.
    if i.is_multiple_of(2) {
        Bytes::from(format!("t{thread}-{i:05}"))
    } else {
        Bytes::from(format!("t{thread}-long-key-past-sixteen-{i:05}"))
    }
}

/// One thread's share of the work on its own keys, checked against its own model.
fn work(ns: &BlockingNamespace, t: usize) -> BTreeMap<Bytes, Bytes> {
    let mut model = BTreeMap::new();
    for round in 0..3 {
        for i in 0..60 {
            let (k, v) = (key(t, i), value(t, i, round));
            match (i + round) % 4 {
                0 | 1 => {
                    ns.put(k.clone(), v.clone()).unwrap();
                    model.insert(k, v);
                }
                2 => assert_eq!(ns.get(k.clone()).unwrap(), model.get(&k).cloned()),
                _ => {
                    let had = model.remove(&k).is_some();
                    assert_eq!(ns.delete(k).unwrap(), had, "thread {t} key {i}");
                }
            }
        }
        // Batches: more commands than the queue takes at once (31, 8 of them pairs).
        let pairs: Vec<(Bytes, Bytes)> =
            (60..110).map(|i| (key(t, i), value(t, i, round))).collect();
        ns.put_many(pairs.clone()).unwrap();
        model.extend(pairs);
        let keys: Vec<Bytes> = (0..110).map(|i| key(t, i)).collect();
        let got = ns.get_many(keys.clone()).unwrap();
        for (k, v) in keys.iter().zip(got) {
            assert_eq!(v, model.get(k).cloned(), "thread {t} key {k:?}");
            assert_eq!(ns.contains(k.clone()).unwrap(), v.is_some());
        }
        // A find of the thread's keys (List: the vendor pair).
        let prefix = format!("t{t}-");
        let (listed, _) = ns.list(prefix.clone(), false, 1000).unwrap();
        let mine: Vec<Bytes> = listed
            .into_iter()
            .filter(|k| k.starts_with(prefix.as_bytes()))
            .collect();
        assert_eq!(mine, model.keys().cloned().collect::<Vec<_>>());
    }
    model
}

#[test]
fn threads_sharing_one_blocking_nvme_client_agree_with_a_model() {
    common::over(Wire::Nvme, || {
        let dir = tempfile::tempdir().unwrap();
        let dev = common::start(dir.path(), |_| {});
        let (c, nsid, _) = common::tenant(&dev, "shared");
        let ns = c.namespace(nsid);
        let (tx, rx) = mpsc::channel();
        for t in 0..6 {
            let (ns, tx) = (ns.clone(), tx.clone());
            std::thread::spawn(move || tx.send(work(&ns, t)).unwrap());
        }
        drop(tx);
        let mut model = BTreeMap::new();
        for _ in 0..6 {
            model.extend(rx.recv_timeout(HANG).expect("a thread hung or failed"));
        }
        let all = ns.list_all(Bytes::new(), 64).unwrap();
        assert_eq!(all, model.keys().cloned().collect::<Vec<_>>());
        for (k, v) in &model {
            assert_eq!(ns.get(k.clone()).unwrap().as_ref(), Some(v));
        }
        assert!(!c.is_closed());
        drop((ns, c));
        dev.shutdown().unwrap();
    });
}

/// A proxy to the device's NVMe/TCP port that can stop passing the host's bytes on
/// (`swallow`) and close every connection it carries (`cut`).
struct Proxy {
    addr: String,
    swallow: Arc<AtomicBool>,
    socks: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(to: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let swallow = Arc::new(AtomicBool::new(false));
        let socks = Arc::new(Mutex::new(Vec::new()));
        let (s, k) = (swallow.clone(), socks.clone());
        std::thread::spawn(move || {
            for host in listener.incoming() {
                let Ok(host) = host else { return };
                let dev = TcpStream::connect(&to).unwrap();
                let mut socks = k.lock().unwrap();
                socks.push(host.try_clone().unwrap());
                socks.push(dev.try_clone().unwrap());
                pump(
                    host.try_clone().unwrap(),
                    dev.try_clone().unwrap(),
                    Some(s.clone()),
                );
                pump(dev, host, None);
            }
        });
        Proxy {
            addr,
            swallow,
            socks,
        }
    }

    fn cut(&self) {
        for s in self.socks.lock().unwrap().iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, swallow: Option<Arc<AtomicBool>>) {
    std::thread::spawn(move || {
        let mut buf = vec![0; 64 << 10];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if swallow.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
                continue;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

fn nvme_client(dev: &cerberus_device::DeviceHandle, proxy: &Proxy) -> BlockingNamespace {
    let (nsid, secret) = common::admin(dev).create_namespace("cut").unwrap();
    let mut config = common::config(dev);
    config.addr = proxy.addr.clone();
    let c = BlockingClient::connect_with(config).unwrap();
    c.open_namespace(nsid, &secret).unwrap()
}

#[test]
fn calls_in_flight_fail_when_the_device_side_closes_the_connection() {
    common::over(Wire::Nvme, || {
        let dir = tempfile::tempdir().unwrap();
        let dev = common::start(dir.path(), |_| {});
        let proxy = Proxy::start(dev.nvme_addr().unwrap().to_string());
        let ns = nvme_client(&dev, &proxy);
        ns.put("k", "v").unwrap();
        ns.put("a-key-longer-than-sixteen", "v").unwrap();
        // From now on the device never hears of a command: every call waits, one thread
        // reading for all, until the connection closes under them.
        proxy.swallow.store(true, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        for i in 0..4 {
            let (ns, tx) = (ns.clone(), tx.clone());
            std::thread::spawn(move || {
                let r = match i % 2 {
                    0 => ns.get("k").map(|_| ()),
                    _ => ns.put("a-key-longer-than-sixteen", vec![1; 20_000]),
                };
                tx.send(r).unwrap();
            });
        }
        std::thread::sleep(Duration::from_millis(300));
        proxy.cut();
        for _ in 0..4 {
            let r = rx.recv_timeout(HANG).expect("a call hung");
            assert!(matches!(r, Err(Error::ConnectionClosed)), "{r:?}");
        }
        assert!(ns.client().is_closed());
        assert!(matches!(ns.get("k"), Err(Error::ConnectionClosed)));
        dev.shutdown().unwrap();
    });
}

#[test]
fn a_call_nobody_answers_times_out_and_the_next_one_waits_for_room() {
    common::over(Wire::Nvme, || {
        let dir = tempfile::tempdir().unwrap();
        let dev = common::start(dir.path(), |_| {});
        let proxy = Proxy::start(dev.nvme_addr().unwrap().to_string());
        let (nsid, secret) = common::admin(&dev).create_namespace("slow").unwrap();
        let mut config = common::config(&dev).with_request_timeout(Duration::from_millis(300));
        config.addr = proxy.addr.clone();
        let c = BlockingClient::connect_with(config).unwrap();
        let ns = c.open_namespace(nsid, &secret).unwrap();
        ns.put("k", "v").unwrap();
        proxy.swallow.store(true, Ordering::SeqCst);
        assert!(matches!(ns.get("k"), Err(Error::Timeout)));
        // Pairs that are never answered fill the queue's room (8 pairs): a call then waits
        // for room, and gives up at its deadline without leaving a command behind.
        let keys: Vec<Bytes> = (0..10)
            .map(|i| Bytes::from(format!("a-key-longer-than-sixteen-{i}")))
            .collect();
        let got = ns.get_many(keys);
        assert!(matches!(got, Err(Error::Timeout)), "{got:?}");
        assert!(!c.is_closed());
        proxy.cut();
        dev.shutdown().unwrap();
    });
}
