//! NVMe/TCP KV Stores held with the puts of every connection of their network thread
//! (`put_batch`), native ones among them: stored together, each answered after the write,
//! read back over both wires; a command after them sees them; a full namespace answers each
//! held Store with its own error.

use crate::common;

use bytes::{Bytes, BytesMut};
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{NvmeError, NvmeHost, NvmeTarget};
use cerberus_host::proto::nvme::{KvOpcode, NvmeStatus, Pdu};
use cerberus_host::{BlockingClient, NamespaceSettings};
use cerberus_proto::Status;
use std::collections::HashMap;

const HOST: &str = "nqn.2014-08.org.example:host1";

/// Rounds of puts tried at most before a test gives up on seeing a batch.
const ROUNDS: usize = 20;

/// A device with its NVMe/TCP target on one network thread (every connection shares its
/// held puts); HOST granted every namespace.
fn device(dir: &std::path::Path) -> DeviceHandle {
    common::start(dir, |c| {
        c.network_threads = 1;
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["*".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
    })
}

fn target(dev: &DeviceHandle) -> NvmeTarget {
    common::nvme_target(dev, HOST)
}

fn counter(dev: &DeviceHandle, name: &str) -> u64 {
    dev.metrics_text()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}_total ")))
        .and_then(|n| n.trim().parse().ok())
        .expect("the counter")
}

/// A KV command's entry with command id `cid` (its data in the capsule, or sent by the
/// target for a Retrieve).
fn capsule(ns: u32, cid: u16, opcode: KvOpcode, key: &[u8], value: &[u8], size: u32) -> Pdu {
    Pdu::CapsuleCmd {
        sqe: common::kv_sqe(ns, cid, opcode, key, size, !value.is_empty()),
        data: Bytes::copy_from_slice(value),
    }
}

/// Each of `nvme_hosts` queues and `native` store `per_round` keys one at a time (each
/// waiting for its answer), at once; returns the keys and values they stored.
fn round(
    rt: &tokio::runtime::Runtime,
    hosts: &mut Vec<NvmeHost>,
    native: &BlockingClient,
    ns: u32,
    round: usize,
    per_round: usize,
) -> Vec<(String, String)> {
    let native_puts = std::thread::scope(|s| {
        let from_native = s.spawn(|| {
            let mut stored = Vec::new();
            for i in 0..per_round {
                let (k, v) = (format!("n-{round}-{i}"), format!("native {round} {i}"));
                native
                    .namespace(ns)
                    .put(k.clone().into_bytes(), v.clone().into_bytes())
                    .expect("native put");
                stored.push((k, v));
            }
            stored
        });
        let mut stored = rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for (h, mut host) in std::mem::take(hosts).into_iter().enumerate() {
                set.spawn(async move {
                    let mut stored = Vec::new();
                    for i in 0..per_round {
                        let (k, v) = (format!("q{h}-{round}-{i}"), format!("queue {h} {i}"));
                        host.store(ns, k.as_bytes(), v.as_bytes(), 0)
                            .await
                            .expect("NVMe store");
                        stored.push((k, v));
                    }
                    (host, stored)
                });
            }
            let mut all = Vec::new();
            while let Some(done) = set.join_next().await {
                let (host, stored) = done.expect("a host's task");
                hosts.push(host);
                all.extend(stored);
            }
            all
        });
        stored.extend(from_native.join().expect("the native thread"));
        stored
    });
    native_puts
}

/// Every `stored` key holds its value, read natively and over NVMe/TCP.
fn read_back(
    rt: &tokio::runtime::Runtime,
    native: &BlockingClient,
    host: &mut NvmeHost,
    ns: u32,
    stored: &[(String, String)],
) {
    for (k, v) in stored {
        let got = native.namespace(ns).get(k.clone().into_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(v.as_bytes()), "{k} natively");
    }
    rt.block_on(async {
        for (k, v) in stored {
            let (got, _) = host.retrieve(ns, k.as_bytes(), 64).await.unwrap().unwrap();
            assert_eq!(&got[..], v.as_bytes(), "{k} over NVMe/TCP");
        }
    });
}

/// One queue and one native connection, each waiting for every put: a batch of two or more
/// puts can only hold puts of both wires.
#[test]
fn a_queues_stores_and_a_native_connections_puts_share_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (native, ns, _) = common::tenant(&dev, "kv");
    let rt = common::rt();
    let host = rt.block_on(NvmeHost::connect(&target(&dev))).unwrap();
    let mut hosts = vec![host];
    let before = counter(&dev, "cerberus_put_batches");
    let mut stored = Vec::new();
    for r in 0..ROUNDS {
        stored.extend(round(&rt, &mut hosts, &native, ns, r, 100));
        if counter(&dev, "cerberus_put_batches") > before {
            break;
        }
    }
    assert!(
        counter(&dev, "cerberus_put_batches") > before,
        "no write held a native put and an NVMe/TCP Store together"
    );
    read_back(&rt, &native, &mut hosts[0], ns, &stored);
    dev.shutdown().unwrap();
}

/// Four queues (of four hosts' controllers) and a native connection, each waiting for
/// every put: batches hold puts of several connections, and every acknowledged put reads
/// back on both wires.
#[test]
fn stores_of_several_queues_are_written_together_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (native, ns, _) = common::tenant(&dev, "kv");
    let rt = common::rt();
    let mut hosts: Vec<NvmeHost> = rt.block_on(async {
        let mut hosts = Vec::new();
        for _ in 0..4 {
            hosts.push(NvmeHost::connect(&target(&dev)).await.unwrap());
        }
        hosts
    });
    let (batches, puts) = (
        counter(&dev, "cerberus_put_batches"),
        counter(&dev, "cerberus_batched_puts"),
    );
    let mut stored = Vec::new();
    for r in 0..ROUNDS {
        stored.extend(round(&rt, &mut hosts, &native, ns, r, 50));
        if r >= 1 && counter(&dev, "cerberus_put_batches") > batches {
            break;
        }
    }
    let (batches_after, puts_after) = (
        counter(&dev, "cerberus_put_batches"),
        counter(&dev, "cerberus_batched_puts"),
    );
    assert!(batches_after > batches, "no batch of puts");
    assert!(puts_after >= puts + 2 * (batches_after - batches));
    // Each connection had one put in flight at a time: every batch holds several's.
    let mut reader = hosts.pop().unwrap();
    read_back(&rt, &native, &mut reader, ns, &stored);
    dev.shutdown().unwrap();
}

/// A Retrieve sent right after a Store was acknowledged, on another queue or the other
/// wire, returns the new value; on the same queue, Retrieves pipelined behind Stores of
/// their keys (one write) return the Stores' values.
#[test]
fn a_retrieve_after_a_store_sees_it_on_any_queue_and_wire() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (native, ns, _) = common::tenant(&dev, "kv");
    common::rt().block_on(async {
        let mut a = NvmeHost::connect(&target(&dev)).await.unwrap();
        let mut b = NvmeHost::connect(&target(&dev)).await.unwrap();
        for i in 0..50u32 {
            let v = format!("from a {i}");
            a.store(ns, b"key", v.as_bytes(), 0).await.unwrap();
            let (got, _) = b.retrieve(ns, b"key", 64).await.unwrap().unwrap();
            assert_eq!(&got[..], v.as_bytes(), "queue b after queue a's Store {i}");
            let got = native.namespace(ns).get(&b"key"[..]).unwrap();
            assert_eq!(
                got.as_deref(),
                Some(v.as_bytes()),
                "natively after Store {i}"
            );
            let w = format!("from native {i}");
            native.namespace(ns).put(&b"key"[..], w.clone()).unwrap();
            let (got, _) = a.retrieve(ns, b"key", 64).await.unwrap().unwrap();
            assert_eq!(&got[..], w.as_bytes(), "queue a after the native put {i}");
        }
        // 20 Stores, then 20 Retrieves of their keys, in one write on one queue.
        let mut out = BytesMut::new();
        for i in 0..20u16 {
            let (k, v) = (format!("p{i:02}"), format!("piped {i}"));
            let put = capsule(
                ns,
                i,
                KvOpcode::Store,
                k.as_bytes(),
                v.as_bytes(),
                v.len() as u32,
            );
            put.encode(Default::default(), &mut out);
        }
        for i in 0..20u16 {
            let k = format!("p{i:02}");
            let get = capsule(ns, 100 + i, KvOpcode::Retrieve, k.as_bytes(), b"", 64);
            get.encode(Default::default(), &mut out);
        }
        a.io.send_raw(&out).await.unwrap();
        let (data, done) = common::gather(&mut a.io, 40).await;
        for i in 0..20u16 {
            assert!(done[&i].status.is_success(), "Store {i}");
            assert!(done[&(100 + i)].status.is_success(), "Retrieve {i}");
            assert_eq!(&data[&(100 + i)][..], format!("piped {i}").as_bytes());
        }
    });
    dev.shutdown().unwrap();
}

/// A namespace with room for a few puts: Stores held together past its capacity are each
/// answered Capacity Exceeded (generic status 0x81, as the target says `CapacityExceeded`)
/// and none of them is stored; the Stores answered with success read back.
#[test]
fn a_full_namespace_answers_each_held_store() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let admin = common::admin(&dev);
    let settings = NamespaceSettings {
        capacity: Some(4_000),
        ..NamespaceSettings::default()
    };
    let (ns, secret) = admin.create_namespace_with("full", &settings).unwrap();
    let native = common::connect(&dev);
    native.open_namespace(ns, &secret).unwrap();
    let full = NvmeStatus::error(0, 0x81);
    common::rt().block_on(async {
        let mut a = NvmeHost::connect(&target(&dev)).await.unwrap();
        let mut b = NvmeHost::connect(&target(&dev)).await.unwrap();
        // 30 Stores of 100 bytes in one write on each queue (within its 31 slots): more
        // than the capacity.
        let value = vec![b'v'; 100];
        let mut sent = HashMap::new();
        for (q, host) in [&mut a, &mut b].into_iter().enumerate() {
            let mut out = BytesMut::new();
            for i in 0..30u16 {
                let k = format!("f{q}-{i:02}");
                let put = capsule(ns, i, KvOpcode::Store, k.as_bytes(), &value, 100);
                put.encode(Default::default(), &mut out);
                sent.insert((q, i), k);
            }
            host.io.send_raw(&out).await.unwrap();
        }
        let mut answered = HashMap::new();
        for (q, host) in [&mut a, &mut b].into_iter().enumerate() {
            while answered.keys().filter(|(aq, _)| *aq == q).count() < 30 {
                match host.io.recv().await.unwrap() {
                    Pdu::CapsuleResp { cqe } => {
                        answered.insert((q, cqe.cid), cqe.status);
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        let refused = answered.values().filter(|s| **s == full).count();
        assert!(refused > 0, "the capacity refused nothing");
        for ((q, i), status) in &answered {
            let k = &sent[&(*q, *i)];
            let got = a.retrieve(ns, k.as_bytes(), 128).await.unwrap();
            if status.is_success() {
                assert_eq!(got.map(|(v, _)| v.to_vec()), Some(value.clone()), "{k}");
            } else {
                assert_eq!(*status, full, "{k}: the status of a full namespace");
                assert!(got.is_none(), "{k} was refused, yet stored");
            }
        }
        // Stores one at a time (a batch of one) are refused the same way once it is full.
        let mut n = 0;
        let err = loop {
            match a.store(ns, format!("one {n}").as_bytes(), &value, 0).await {
                Ok(()) => n += 1,
                Err(e) => break e,
            }
            assert!(n < 100, "the capacity never refused a Store alone");
        };
        assert!(matches!(err, NvmeError::Status(s) if s == full), "{err}");
    });
    let err = native
        .namespace(ns)
        .put(&b"late native"[..], vec![b'v'; 100])
        .unwrap_err();
    assert_eq!(err.status(), Some(Status::CapacityExceeded));
    dev.shutdown().unwrap();
}
