//! The NVMe/TCP target end to end through the host's initiator (`cerberus_host::nvme`): the
//! admin sequence an SPDK host sends, KV round trips, bad PDUs, host NQN grants, deadlines.

use crate::common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_engine::Readable;
use cerberus_host::nvme::{NvmeError, NvmeHost, NvmeQueue, NvmeTarget};
use cerberus_host::proto::nvme::{
    kv_status, property, Digests, KvCommand, KvKey, KvOpcode, NvmeStatus, Pdu, Sqe,
    STORE_ONLY_IF_ABSENT, STORE_ONLY_IF_PRESENT,
};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::SUBNQN;
const HOST1: &str = "nqn.2014-08.org.example:host1";
const HOST2: &str = "nqn.2014-08.org.example:host2";

/// A device with its NVMe/TCP target on a free port; HOST1 granted "kv1" (by name), HOST2
/// granted "kv2"; both namespaces made. Returns the device and the two namespace ids.
fn device(
    dir: &std::path::Path,
    tweak: impl FnOnce(&mut cerberus_device::DeviceConfig),
) -> (DeviceHandle, u32, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST1.into(), vec!["kv1".into()]);
        c.nvme.hosts.insert(HOST2.into(), vec!["kv2".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
        tweak(c);
    });
    let admin = common::admin(&dev);
    let (ns1, _) = admin.create_namespace("kv1").expect("kv1");
    let (ns2, _) = admin.create_namespace("kv2").expect("kv2");
    (dev, ns1, ns2)
}

fn target(dev: &DeviceHandle, hostnqn: &str) -> NvmeTarget {
    common::nvme_target(dev, hostnqn)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn admin_sqe(opcode: u8, nsid: u32, cdw10: u32, cdw11: u32) -> Sqe {
    let mut sqe = Sqe {
        opcode,
        nsid,
        ..Sqe::default()
    };
    sqe.cdw[0] = cdw10;
    sqe.cdw[1] = cdw11;
    sqe
}

fn status_of<T: std::fmt::Debug>(r: Result<T, NvmeError>) -> NvmeStatus {
    match r {
        Err(NvmeError::Status(s)) => s,
        other => panic!("expected a failure status, got {other:?}"),
    }
}

#[test]
fn the_admin_sequence_an_spdk_host_sends() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns1, _) = device(dir.path(), |_| {});
    common::rt().block_on(async {
        // Connect (cntlid 0xFFFF), VS, CAP, CC.EN, CSTS.RDY, Identify controller, I/O Connect.
        let mut h = NvmeHost::connect(&target(&dev, HOST1))
            .await
            .expect("connect");
        assert_ne!(h.cntlid, 0xFFFF);
        let cap = h.property_get(property::CAP).await.unwrap();
        assert_eq!(cap & 0xFFFF, 127, "MQES");
        assert_ne!(cap & (1 << 43), 0, "CSS: I/O command sets");
        assert_eq!(h.property_get(property::VS).await.unwrap(), 0x0002_0000);
        assert_eq!(h.property_get(property::CSTS).await.unwrap() & 1, 1);

        let c = h.identify(0x01, 0, 0).await.unwrap();
        assert_eq!(c.len(), 4096);
        assert_eq!(u16_at(&c, 0), 0, "VID");
        assert_eq!(
            std::str::from_utf8(&c[24..64]).unwrap().trim_end(),
            "Cerberus"
        );
        assert_eq!(u16_at(&c, 78), h.cntlid, "CNTLID");
        assert_eq!(u32_at(&c, 80), 0x0002_0000, "VER");
        assert_eq!(c[111], 1, "CNTRLTYPE: I/O");
        assert_eq!((c[512], c[513]), (0x66, 0x44), "SQES, CQES");
        assert_eq!(u16_at(&c, 514), 128, "MAXCMD");
        assert_eq!(u16_at(&c, 320), 10, "KAS: 10 x 100 ms");
        assert_eq!(c[1803], 1, "MSDBD");
        assert!(u32_at(&c, 516) >= ns1, "NN");
        assert!(c[768..].starts_with(SUBNQN.as_bytes()));
        assert_eq!(u32_at(&c, 1792), (64 + 8192) / 16, "IOCCSZ");
        assert_eq!(h.in_capsule, 8192);

        // Async event configuration, then an outstanding AER that is held: the Keep Alive
        // after it is the next completion.
        let (cqe, _) = h
            .admin_command(admin_sqe(0x09, 0, 0x0B, 0x0000_0100), 0)
            .await
            .unwrap();
        assert!(cqe.status.is_success());
        let mut aer = admin_sqe(0x0C, 0, 0, 0);
        aer.cid = 0xBEEF;
        h.admin
            .send(&Pdu::CapsuleCmd {
                sqe: aer,
                data: Bytes::new(),
            })
            .await
            .unwrap();
        h.admin_command(admin_sqe(0x18, 0, 0, 0), 0)
            .await
            .expect("keep alive");

        // I/O command set specific controller data: NVM and KV; 2 is refused.
        h.identify(0x06, 0, 0).await.expect("CSI 0");
        h.identify(0x06, 0, 1).await.expect("CSI 1");
        assert_eq!(
            status_of(h.identify(0x06, 0, 2).await),
            NvmeStatus::error(0, 0x02)
        );
        // Number of queues: granted.
        let (cqe, _) = h
            .admin_command(admin_sqe(0x09, 0, 0x07, 3 | 3 << 16), 0)
            .await
            .unwrap();
        assert_eq!(cqe.dw0, 3 | 3 << 16);

        assert_eq!(h.active_namespaces().await.unwrap(), vec![ns1]);
        let ns = h.identify(0x00, ns1, 0).await.unwrap();
        assert!(
            u64_at(&ns, 0) > 0 && u64_at(&ns, 8) > 0,
            "NSZE and NCAP non-zero"
        );
        let desc = h.identify(0x03, ns1, 0).await.unwrap();
        let mut at = 0;
        let mut csi = None;
        while desc[at] != 0 {
            if desc[at] == 0x04 {
                csi = Some(desc[at + 4]);
            }
            at += 4 + usize::from(desc[at + 1]);
        }
        assert_eq!(csi, Some(1), "CSI descriptor: KV");
        let kv = h.identify(0x05, ns1, 1).await.unwrap();
        assert!(u64_at(&kv, 0) > 0, "KV NSZE");
        assert_eq!(kv[25], 0, "NKVF (0-based): one format");
        assert_eq!(u16_at(&kv, 72), 16, "KML");
        assert_eq!(u32_at(&kv, 76), 2 << 20, "VML = max_value_len");

        // Log pages: error (empty), SMART (data units written after a store), firmware.
        h.store(ns1, b"k", &[7u8; 4096], 0).await.unwrap();
        dev.engine().flush().unwrap();
        let log =
            |lid: u32, bytes: u32| admin_sqe(0x02, 0xFFFF_FFFF, lid | (bytes / 4 - 1) << 16, 0);
        let (_, err) = h.admin_command(log(0x01, 64), 64).await.unwrap();
        assert!(err.iter().all(|&b| b == 0));
        let (_, smart) = h.admin_command(log(0x02, 512), 512).await.unwrap();
        assert_eq!(smart.len(), 512);
        assert!(u64_at(&smart, 48) > 0, "data units written");
        let (_, fw) = h.admin_command(log(0x03, 512), 512).await.unwrap();
        assert_eq!(fw[0], 1, "AFI");
        // A NUMD of 16 GiB is answered with the page and a bounded tail of zeros.
        let huge = admin_sqe(0x02, 0xFFFF_FFFF, 0x03 | 0xFFFF << 16, 0xFFFF);
        let (_, fw) = h.admin_command(huge, u32::MAX).await.unwrap();
        assert_eq!((fw[0], fw.len()), (1, 4096));

        // Detach: CC.SHN, then CSTS.SHST complete.
        h.shutdown().await.expect("shutdown");
    });
    dev.shutdown().unwrap();
}

#[test]
fn kv_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns, _) = device(dir.path(), |_| {});
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev, HOST1)).await.unwrap();
        h.store(ns, b"apple", b"red", 0).await.unwrap();
        h.store(ns, b"banana", b"yellow", 0).await.unwrap();
        assert_eq!(
            h.retrieve(ns, b"apple", 64).await.unwrap(),
            Some((Bytes::from_static(b"red"), 3))
        );
        assert!(h.exist(ns, b"banana").await.unwrap());
        assert!(!h.exist(ns, b"cherry").await.unwrap());
        assert_eq!(h.retrieve(ns, b"cherry", 64).await.unwrap(), None);
        // Only if absent / only if present.
        let exists = h.store(ns, b"apple", b"green", STORE_ONLY_IF_ABSENT).await;
        assert_eq!(status_of(exists), kv_status::key_exists());
        let absent = h.store(ns, b"cherry", b"dark", STORE_ONLY_IF_PRESENT).await;
        assert_eq!(status_of(absent), kv_status::key_does_not_exist());
        h.store(ns, b"apple", b"green", STORE_ONLY_IF_PRESENT)
            .await
            .unwrap();
        // A partial buffer: the first bytes, and the whole size in DW0.
        let big: Vec<u8> = (0..100u8).collect();
        h.store(ns, b"long", &big, 0).await.unwrap();
        let (part, size) = h.retrieve(ns, b"long", 10).await.unwrap().unwrap();
        assert_eq!((&part[..], size), (&big[..10], 100));
        // Past the in-capsule size: R2T and several H2CData PDUs (MAXH2CDATA 128 KiB).
        let huge: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        h.store(ns, b"huge", &huge, 0).await.unwrap();
        let (got, size) = h.retrieve(ns, b"huge", 1 << 20).await.unwrap().unwrap();
        assert_eq!((got.len(), size), (huge.len(), 300_000));
        assert!(got == huge);
        // Too large for the device: refused without its data being fetched.
        let over = h.store(ns, b"over", &vec![0u8; (2 << 20) + 1], 0).await;
        assert_eq!(status_of(over), kv_status::invalid_value_size());
        // List, whole and cut by the buffer.
        let keys = h.list(ns, b"", 4096).await.unwrap();
        assert_eq!(
            keys,
            vec![
                b"apple".to_vec(),
                b"banana".to_vec(),
                b"huge".to_vec(),
                b"long".to_vec()
            ]
        );
        assert_eq!(h.list(ns, b"b", 4096).await.unwrap()[0], b"banana");
        assert_eq!(h.list(ns, b"", 4 + 8 + 8).await.unwrap().len(), 2);
        // Delete.
        assert!(h.delete(ns, b"apple").await.unwrap());
        assert!(!h.delete(ns, b"apple").await.unwrap());
        assert_eq!(h.retrieve(ns, b"apple", 64).await.unwrap(), None);
        // Keys the command set does not carry are refused here, never cut to 16 bytes
        // (which would store under another key) nor sent empty.
        let long = [b'x'; 17];
        let refused = h.store(ns, &long, b"v", 0).await;
        assert!(
            matches!(refused, Err(NvmeError::KeyLength(17))),
            "{refused:?}"
        );
        assert!(matches!(
            h.exist(ns, b"").await,
            Err(NvmeError::KeyLength(0))
        ));
        assert!(h.list(ns, &long, 4096).await.is_err());
        assert_eq!(h.retrieve(ns, &long[..16], 64).await.unwrap(), None);
        // A 17-byte key length: invalid key size.
        let mut sqe = Sqe {
            nsid: ns,
            ..Sqe::default()
        };
        KvCommand {
            opcode: KvOpcode::Exist,
            key: KvKey::new(b"k").unwrap(),
            size: 0,
            options: 0,
        }
        .encode(&mut sqe);
        sqe.cdw[1] = 17;
        let r = h.io.command(sqe, Bytes::new(), true, 0).await.unwrap();
        assert_eq!(r.0.status, kv_status::invalid_key_size());
        // Seen by the native wire too: the same engine.
        assert!(dev
            .engine()
            .namespace(ns)
            .unwrap()
            .get(b"banana")
            .unwrap()
            .is_some());
    });
    dev.shutdown().unwrap();
}

#[test]
fn bad_pdus_close_only_their_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns, _) = device(dir.path(), |_| {});
    common::rt().block_on(async {
        let t = target(&dev, HOST1);
        let mut good = NvmeHost::connect(&t).await.unwrap();
        good.store(ns, b"k", b"v", 0).await.unwrap();
        // An unknown PDU type after the ICReq: C2HTermReq (invalid header field, byte 0).
        let mut bad = NvmeQueue::open(&t.addr, Digests::default()).await.unwrap();
        bad.send_raw(&[0x7E, 0, 24, 0, 24, 0, 0, 0]).await.unwrap();
        match bad.recv().await {
            Err(NvmeError::Terminated { fes: 0x01, fei: 0 }) => {}
            other => panic!("expected a C2HTermReq, got {other:?}"),
        }
        assert!(matches!(
            bad.recv().await,
            Err(NvmeError::Closed | NvmeError::Io(_))
        ));
        // A capsule whose HLEN is wrong: byte 2.
        let mut bad = NvmeQueue::open(&t.addr, Digests::default()).await.unwrap();
        bad.send_raw(&[0x04, 0, 24, 0, 72, 0, 0, 0]).await.unwrap();
        assert!(matches!(
            bad.recv().await,
            Err(NvmeError::Terminated { fes: 0x01, fei: 2 })
        ));
        // Data past the advertised in-capsule size: data transfer limit.
        let mut bad = NvmeQueue::open(&t.addr, Digests::default()).await.unwrap();
        let plen = 72 + 200_000u32;
        let mut hdr = vec![0x04, 0, 72, 72];
        hdr.extend_from_slice(&plen.to_le_bytes());
        bad.send_raw(&hdr).await.unwrap();
        assert!(matches!(
            bad.recv().await,
            Err(NvmeError::Terminated { fes: 0x05, .. })
        ));
        // An H2CData nobody asked for: a PDU sequence error.
        let mut bad = NvmeQueue::open(&t.addr, Digests::default()).await.unwrap();
        let h2c = Pdu::H2CData {
            cccid: 1,
            ttag: 9,
            datao: 0,
            last: true,
            data: Bytes::from_static(b"x"),
        };
        bad.send(&h2c).await.unwrap();
        assert!(matches!(
            bad.recv().await,
            Err(NvmeError::Terminated { fes: 0x02, .. })
        ));
        // Stores whose data never comes, more than the queue holds (32): each waits for
        // its data with the others in flight, and the one past the queue's size is a
        // sequence error, not a growing backlog.
        let mut stuck = NvmeHost::connect(&t).await.unwrap();
        let mut store = Sqe {
            nsid: ns,
            ..Sqe::default()
        };
        KvCommand {
            opcode: KvOpcode::Store,
            key: KvKey::new(b"s").unwrap(),
            size: 10_000,
            options: 0,
        }
        .encode(&mut store);
        for cid in 0..=32 {
            store.cid = cid;
            stuck
                .io
                .send(&Pdu::CapsuleCmd {
                    sqe: store,
                    data: Bytes::new(),
                })
                .await
                .unwrap();
        }
        let mut asked = 0;
        loop {
            match stuck.io.recv().await {
                Ok(Pdu::R2T {
                    cccid,
                    r2tl: 10_000,
                    ..
                }) => {
                    assert_eq!(cccid, asked);
                    asked += 1;
                }
                Err(NvmeError::Terminated { fes: 0x02, .. }) => break,
                other => panic!("expected R2Ts then a sequence error, got {other:?}"),
            }
        }
        assert_eq!(asked, 32, "one R2T per Store the queue holds");
        // The good connection goes on.
        assert_eq!(
            good.retrieve(ns, b"k", 8).await.unwrap().unwrap().0,
            Bytes::from_static(b"v")
        );
    });
    dev.shutdown().unwrap();
}

#[test]
fn another_host_cannot_see_or_touch_a_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns1, ns2) = device(dir.path(), |_| {});
    common::rt().block_on(async {
        let mut one = NvmeHost::connect(&target(&dev, HOST1)).await.unwrap();
        let mut two = NvmeHost::connect(&target(&dev, HOST2)).await.unwrap();
        one.store(ns1, b"secret", b"1", 0).await.unwrap();
        assert_eq!(two.active_namespaces().await.unwrap(), vec![ns2]);
        let invalid_ns = NvmeStatus::error(0, 0x0B);
        assert_eq!(status_of(two.retrieve(ns1, b"secret", 8).await), invalid_ns);
        assert_eq!(status_of(two.store(ns1, b"x", b"y", 0).await), invalid_ns);
        assert_eq!(status_of(two.delete(ns1, b"secret").await), invalid_ns);
        assert_eq!(status_of(two.list(ns1, b"", 4096).await), invalid_ns);
        assert_eq!(status_of(two.identify(0x00, ns1, 0).await), invalid_ns);
        // A host with no grant sees nothing.
        let mut none = NvmeHost::connect(&target(&dev, "nqn.2014-08.org.example:stranger"))
            .await
            .unwrap();
        assert!(none.active_namespaces().await.unwrap().is_empty());
        assert_eq!(status_of(none.exist(ns2, b"x").await), invalid_ns);
        // An I/O queue must name a live controller of the same host.
        let mut t = target(&dev, HOST2);
        t.hostnqn = HOST2.into();
        let mut q = NvmeQueue::open(&t.addr, Digests::default()).await.unwrap();
        let data = cerberus_host::proto::nvme::connect_data([7; 16], one.cntlid, SUBNQN, HOST2);
        let connect = admin_sqe(0x7F, 0x01, 1 << 16, 31);
        let (cqe, _) = q
            .command(connect, Bytes::from(data), true, 0)
            .await
            .unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(1, 0x82));
        assert_eq!(
            one.retrieve(ns1, b"secret", 8).await.unwrap().unwrap().0,
            Bytes::from_static(b"1")
        );
    });
    dev.shutdown().unwrap();
}

/// Attack 8 of issue 61: the SMART page gave every controller the device's counters, so a
/// tenant watched another's writes. Each controller's page counts only what its host moved.
#[test]
fn the_smart_page_counts_its_own_controllers_traffic_only() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns1, ns2) = device(dir.path(), |_| {});
    let smart = admin_sqe(0x02, 0xFFFF_FFFF, 0x02 | (512 / 4 - 1) << 16, 0);
    // Data units read and written, read and write commands.
    let figures = |page: &[u8]| [32, 48, 64, 80].map(|at| u64_at(page, at));
    common::rt().block_on(async {
        let mut one = NvmeHost::connect(&target(&dev, HOST1)).await.unwrap();
        let mut two = NvmeHost::connect(&target(&dev, HOST2)).await.unwrap();
        two.store(ns2, b"mine", b"v", 0).await.unwrap();
        let (_, before) = two.admin_command(smart, 512).await.unwrap();
        assert_eq!(figures(&before), [0, 1, 0, 1], "its own store only");
        for i in 0..10u32 {
            one.store(ns1, &i.to_be_bytes(), &[1u8; 1000], 0)
                .await
                .unwrap();
        }
        one.retrieve(ns1, &0u32.to_be_bytes(), 4096).await.unwrap();
        let (_, after) = two.admin_command(smart, 512).await.unwrap();
        assert_eq!(
            figures(&after),
            figures(&before),
            "another host's traffic shows"
        );
        let (_, own) = one.admin_command(smart, 512).await.unwrap();
        // 10,000 bytes written: one unit of 512,000 bytes (rounded up); 1,000 bytes read.
        assert_eq!(figures(&own), [1, 1, 1, 10]);
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_slow_icreq_is_closed_at_its_deadline_and_connections_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, _, _) = device(dir.path(), |c| {
        c.nvme.icreq_timeout_ms = 300;
        c.nvme.max_connections = 2;
    });
    let addr = dev.nvme_addr().unwrap().to_string();
    common::rt().block_on(async {
        // Half an ICReq, then nothing.
        let start = Instant::now();
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(&[0x00, 0, 128, 0]).await.unwrap();
        let mut b = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(3), s.read(&mut b)).await;
        assert!(matches!(n, Ok(Ok(0)) | Ok(Err(_))), "closed, got {n:?}");
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(3),
            "{took:?}"
        );
        drop(s);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Two connections held; a third is closed at once.
        let _a = NvmeQueue::open(&addr, Digests::default()).await.unwrap();
        let _b = NvmeQueue::open(&addr, Digests::default()).await.unwrap();
        let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let n = tokio::time::timeout(Duration::from_secs(2), c.read(&mut b)).await;
        assert!(matches!(n, Ok(Ok(0)) | Ok(Err(_))), "closed, got {n:?}");
    });
    dev.shutdown().unwrap();
}

#[test]
fn header_and_data_digests_as_the_host_asks() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns, _) = device(dir.path(), |_| {});
    common::rt().block_on(async {
        let mut t = target(&dev, HOST1);
        t.digests = Digests {
            header: true,
            data: true,
        };
        let mut h = NvmeHost::connect(&t).await.expect("digested connect");
        let value: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        h.store(ns, b"small", b"v", 0).await.unwrap();
        h.store(ns, b"r2t", &value, 0).await.unwrap();
        assert_eq!(
            h.retrieve(ns, b"r2t", 1 << 20).await.unwrap().unwrap().0,
            value
        );
        assert_eq!(h.list(ns, b"", 4096).await.unwrap().len(), 2);
    });
    dev.shutdown().unwrap();
}
