//! Several commands in flight on one NVMe/TCP I/O queue: completions out of order (by
//! command id), Stores waiting for their data within the connection's byte budget, and the
//! host's pipelined initiator.

use crate::common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{NvmeHost, NvmeTarget};
use cerberus_host::proto::nvme::{KvCommand, KvKey, KvOpcode, NvmeStatus, Pdu, Sqe};

const HOST: &str = "nqn.2014-08.org.example:host1";

/// A device with its NVMe/TCP target; HOST granted "kv". Returns it and the namespace id.
fn device(
    dir: &std::path::Path,
    tweak: impl FnOnce(&mut cerberus_device::DeviceConfig),
) -> (DeviceHandle, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
        tweak(c);
    });
    let (ns, _) = common::admin(&dev).create_namespace("kv").expect("kv");
    (dev, ns)
}

fn target(dev: &DeviceHandle) -> NvmeTarget {
    common::nvme_target(dev, HOST)
}

use common::kv_sqe as sqe;

fn capsule(sqe: Sqe, data: &[u8]) -> Pdu {
    Pdu::CapsuleCmd {
        sqe,
        data: Bytes::copy_from_slice(data),
    }
}

fn h2c(cccid: u16, ttag: u16, data: Vec<u8>) -> Pdu {
    Pdu::H2CData {
        cccid,
        ttag,
        datao: 0,
        last: true,
        data: Bytes::from(data),
    }
}

#[test]
fn a_later_command_completes_while_a_store_waits_for_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path(), |_| {});
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev)).await.unwrap();
        h.store(ns, b"here", b"v", 0).await.unwrap();
        // cid 1: a Store of 20,000 bytes (past the 8 KiB in-capsule size): an R2T.
        let big = 20_000u32;
        let store = sqe(ns, 1, KvOpcode::Store, b"big", big, false);
        h.io.send(&capsule(store, b"")).await.unwrap();
        let ttag = match h.io.recv().await.unwrap() {
            Pdu::R2T {
                cccid: 1,
                ttag,
                r2to: 0,
                r2tl,
            } if r2tl == big => ttag,
            other => panic!("expected the R2T, got {other:?}"),
        };
        // cid 2: a Retrieve sent after it completes first, its data before its completion.
        let get = sqe(ns, 2, KvOpcode::Retrieve, b"here", 64, false);
        h.io.send(&capsule(get, b"")).await.unwrap();
        match h.io.recv().await.unwrap() {
            Pdu::C2HData { cccid: 2, data, .. } => assert_eq!(&data[..], b"v"),
            other => panic!("expected cid 2's data, got {other:?}"),
        }
        match h.io.recv().await.unwrap() {
            Pdu::CapsuleResp { cqe } => {
                assert_eq!((cqe.cid, cqe.dw0), (2, 1));
                assert!(cqe.status.is_success());
            }
            other => panic!("expected cid 2's completion, got {other:?}"),
        }
        // Then the Store's data, and its completion.
        h.io.send(&h2c(1, ttag, vec![9u8; big as usize]))
            .await
            .unwrap();
        match h.io.recv().await.unwrap() {
            Pdu::CapsuleResp { cqe } => {
                assert_eq!(cqe.cid, 1);
                assert!(cqe.status.is_success());
            }
            other => panic!("expected cid 1's completion, got {other:?}"),
        }
        let (v, size) = h.retrieve(ns, b"big", big).await.unwrap().unwrap();
        assert_eq!((v.len(), size), (big as usize, big));
    });
    dev.shutdown().unwrap();
}

#[test]
fn stores_waiting_for_data_stay_within_the_connections_budget() {
    let dir = tempfile::tempdir().unwrap();
    // A budget of four 16 KiB values.
    let value = 16 << 10;
    let (dev, ns) = device(dir.path(), |c| c.nvme.max_queue_bytes = 4 * value);
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev)).await.unwrap();
        let stores = 8u16;
        for cid in 0..stores {
            let key = format!("key{cid}");
            let s = sqe(ns, cid, KvOpcode::Store, key.as_bytes(), value, false);
            h.io.send(&capsule(s, b"")).await.unwrap();
        }
        // Four R2Ts, no more: the next PDU after them is the completion of the first
        // Store once its data came, and only then the fifth R2T.
        let mut tags = std::collections::HashMap::new();
        for want in 0..4u16 {
            match h.io.recv().await.unwrap() {
                Pdu::R2T { cccid, ttag, .. } if cccid == want => {
                    tags.insert(cccid, ttag);
                }
                other => panic!("expected the R2T of cid {want}, got {other:?}"),
            }
        }
        let fill = |cid: u16| vec![cid as u8; value as usize];
        h.io.send(&h2c(0, tags[&0], fill(0))).await.unwrap();
        match h.io.recv().await.unwrap() {
            Pdu::CapsuleResp { cqe } => assert_eq!(cqe.cid, 0),
            other => panic!("past the budget: expected cid 0's completion, got {other:?}"),
        }
        // From here on answer every R2T; all eight complete.
        let mut done = 1;
        let mut next_data = 1u16;
        while done < stores {
            // Data for those already asked, one at a time.
            if let Some(t) = tags.remove(&next_data) {
                h.io.send(&h2c(next_data, t, fill(next_data)))
                    .await
                    .unwrap();
                next_data += 1;
            }
            match h.io.recv().await.unwrap() {
                Pdu::R2T { cccid, ttag, .. } => {
                    tags.insert(cccid, ttag);
                }
                Pdu::CapsuleResp { cqe } => {
                    assert_eq!(cqe.status, NvmeStatus::SUCCESS);
                    done += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        for cid in 0..stores {
            let key = format!("key{cid}");
            let (v, _) = h
                .retrieve(ns, key.as_bytes(), value)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(v, Bytes::from(fill(cid)));
        }
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_pipelined_host_gets_every_answer_matched_by_its_command_id() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path(), |_| {});
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev)).await.unwrap();
        let n = 100usize;
        // Values alternate in the capsule and through R2T.
        let value = |i: usize| vec![i as u8; if i.is_multiple_of(2) { 10 } else { 9000 + i }];
        let stores = (0..n)
            .map(|i| {
                let v = value(i);
                let cmd = KvCommand {
                    opcode: KvOpcode::Store,
                    key: KvKey::new(format!("p{i:03}").as_bytes()).unwrap(),
                    size: v.len() as u32,
                    options: 0,
                };
                (cmd, Bytes::from(v))
            })
            .collect();
        for (cqe, _) in h.pipeline(ns, stores, 16).await.unwrap() {
            assert!(cqe.status.is_success());
        }
        let gets = (0..n)
            .map(|i| {
                let cmd = KvCommand {
                    opcode: KvOpcode::Retrieve,
                    key: KvKey::new(format!("p{i:03}").as_bytes()).unwrap(),
                    size: 16 << 10,
                    options: 0,
                };
                (cmd, Bytes::new())
            })
            .collect();
        let got = h.pipeline(ns, gets, 16).await.unwrap();
        for (i, (cqe, data)) in got.into_iter().enumerate() {
            assert!(cqe.status.is_success());
            assert_eq!(data, Bytes::from(value(i)), "value {i}");
            assert_eq!(cqe.dw0 as usize, value(i).len());
        }
    });
    dev.shutdown().unwrap();
}

#[test]
fn retrieves_at_hand_are_answered_by_one_engine_read() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path(), |_| {});
    let batches = |dev: &DeviceHandle| -> u64 {
        dev.metrics_text()
            .lines()
            .find_map(|l| l.strip_prefix("cerberus_get_batches_total "))
            .and_then(|n| n.trim().parse().ok())
            .expect("the get_batches counter")
    };
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev)).await.unwrap();
        for i in 0..20u32 {
            let v = format!("value {i}");
            h.store(ns, format!("g{i:02}").as_bytes(), v.as_bytes(), 0)
                .await
                .unwrap();
        }
        let before = batches(&dev);
        // 21 Retrieves (one of an absent key) in one write: at hand together at the target.
        let mut out = bytes::BytesMut::new();
        for i in 0..21u16 {
            let get = sqe(
                ns,
                100 + i,
                KvOpcode::Retrieve,
                format!("g{i:02}").as_bytes(),
                64,
                false,
            );
            capsule(get, b"").encode(Default::default(), &mut out);
        }
        h.io.send_raw(&out).await.unwrap();
        let (data, done) = common::gather(&mut h.io, 21).await;
        for i in 0..20u16 {
            let want = format!("value {i}");
            assert!(done[&(100 + i)].status.is_success());
            assert_eq!(&data[&(100 + i)][..], want.as_bytes(), "cid {}", 100 + i);
        }
        assert_eq!(
            done[&120].status,
            NvmeStatus::error(1, 0x87),
            "the absent key"
        );
        assert!(!data.contains_key(&120));
        assert!(
            batches(&dev) > before,
            "no batch of gets: each Retrieve was read alone"
        );
    });
    dev.shutdown().unwrap();
}

#[test]
fn stores_at_hand_are_written_together_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path(), |_| {});
    let counter = |dev: &DeviceHandle, name: &str| -> u64 {
        dev.metrics_text()
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}_total ")))
            .and_then(|n| n.trim().parse().ok())
            .expect("the counter")
    };
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev)).await.unwrap();
        h.store(ns, b"s00", b"old", 0).await.unwrap();
        let before = counter(&dev, "cerberus_put_batches");
        // 20 unconditional Stores (one over an existing key) and a conditional one, in one
        // write: the 20 at hand together, the conditional one after them.
        let mut out = bytes::BytesMut::new();
        for i in 0..20u16 {
            let v = format!("value {i}");
            let put = sqe(
                ns,
                200 + i,
                KvOpcode::Store,
                format!("s{i:02}").as_bytes(),
                v.len() as u32,
                true,
            );
            capsule(put, v.as_bytes()).encode(Default::default(), &mut out);
        }
        let mut only_absent = sqe(ns, 220, KvOpcode::Store, b"s00", 1, true);
        only_absent.cdw[1] |= u32::from(cerberus_host::proto::nvme::STORE_ONLY_IF_ABSENT) << 8;
        capsule(only_absent, b"x").encode(Default::default(), &mut out);
        h.io.send_raw(&out).await.unwrap();
        let mut done = std::collections::HashMap::new();
        while done.len() < 21 {
            match h.io.recv().await.unwrap() {
                Pdu::CapsuleResp { cqe } => {
                    done.insert(cqe.cid, cqe);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        for i in 0..20u16 {
            assert!(done[&(200 + i)].status.is_success(), "cid {}", 200 + i);
            let (v, _) = h
                .retrieve(ns, format!("s{i:02}").as_bytes(), 64)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(&v[..], format!("value {i}").as_bytes());
        }
        assert_eq!(done[&220].status, NvmeStatus::error(1, 0x89), "s00 exists");
        assert!(
            counter(&dev, "cerberus_put_batches") > before,
            "no batch of puts: each Store was written alone"
        );
    });
    dev.shutdown().unwrap();
}

#[test]
fn io_queues_of_several_hosts_spread_over_the_network_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path(), |c| c.network_threads = 2);
    // The native admin connection that made the namespace is closed; the device notices on
    // its own time (seen late on a loaded machine: counts [2, 1]). Wait until it has.
    let counted = || -> usize {
        dev.scheduler_stats()
            .cores
            .iter()
            .map(|c| c.connections)
            .sum()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while counted() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the admin connection was never released"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    common::rt().block_on(async {
        // Each host connects an admin queue, then an I/O queue: counted, the admin queues
        // would take turns with the I/O queues and every I/O queue land on one thread.
        let mut a = NvmeHost::connect(&target(&dev)).await.unwrap();
        let mut b = NvmeHost::connect(&target(&dev)).await.unwrap();
        let conns: Vec<usize> = dev
            .scheduler_stats()
            .cores
            .iter()
            .map(|c| c.connections)
            .collect();
        assert_eq!(conns, vec![1, 1], "the I/O queues alone count, one a core");
        a.store(ns, b"a", b"1", 0).await.unwrap();
        b.store(ns, b"b", b"2", 0).await.unwrap();
    });
}
