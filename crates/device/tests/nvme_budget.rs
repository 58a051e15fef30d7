//! What a host can make the NVMe/TCP target hold (issue 61, point 2): a command capsule
//! carries at most `in_capsule_bytes` (not MAXH2CDATA), and a Store or vendor Submit whose
//! namespace the host may not use gets no R2T (it is refused before any of its data is
//! asked for); many queues together hold at most the device's `max_held_bytes`, and Stores
//! whose data never comes are closed at the frame deadline. Unfetched vendor responses are
//! bounded in `nvme/vendor.rs`'s unit tests.

mod common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{NvmeHost, NvmeQueue};
use cerberus_host::proto::nvme::{KvCommand, KvKey, KvOpcode, Pdu, Sqe, VENDOR_SUBMIT};
use cerberus_host::proto::{DEVICE_NSID, HEADER_LEN};

const HOST: &str = "nqn.2014-08.org.example:budget";

/// A device granting `HOST` the namespace "kv" only (taken at its word: this file is not
/// about authentication); the ids of "kv" and of "other", which `HOST` may not use.
fn device(dir: &std::path::Path) -> (DeviceHandle, u32, u32) {
    device_with(dir, |_| {})
}

fn device_with(
    dir: &std::path::Path,
    tweak: impl FnOnce(&mut cerberus_device::DeviceConfig),
) -> (DeviceHandle, u32, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        c.nvme.require_host_auth = false;
        tweak(c);
    });
    let admin = common::admin(&dev);
    let kv = admin.create_namespace("kv").expect("kv").0;
    let other = admin.create_namespace("other").expect("other").0;
    (dev, kv, other)
}

fn store(ns: u32, key: &[u8], size: u32) -> Sqe {
    let mut sqe = Sqe {
        nsid: ns,
        ..Sqe::default()
    };
    KvCommand {
        opcode: KvOpcode::Store,
        key: KvKey::new(key).unwrap(),
        size,
        options: 0,
    }
    .encode(&mut sqe);
    sqe
}

/// The next PDU the target sends on `q`, R2T or not.
async fn next_pdu(q: &mut NvmeQueue) -> Pdu {
    q.recv().await.expect("the target answers")
}

#[test]
fn a_capsule_carries_at_most_in_capsule_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv, _) = device(dir.path());
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&common::nvme_target(&dev, HOST))
            .await
            .unwrap();
        // 8 KiB fits (the default in_capsule_bytes); 64 KiB is within MAXH2CDATA (128 KiB)
        // but not a capsule's size: the connection is terminated, nothing stored.
        let small = Bytes::from(vec![1u8; 8192]);
        let (cqe, _) =
            h.io.command(store(kv, b"small", 8192), small, true, 0)
                .await
                .unwrap();
        assert!(cqe.status.is_success(), "{:?}", cqe.status);
        let big = Bytes::from(vec![2u8; 64 << 10]);
        let r =
            h.io.command(store(kv, b"big", 64 << 10), big, true, 0)
                .await;
        assert!(r.is_err(), "a 64 KiB capsule was accepted: {r:?}");
        let mut again = NvmeHost::connect(&common::nvme_target(&dev, HOST))
            .await
            .unwrap();
        assert!(again.exist(kv, b"small").await.unwrap());
        assert!(!again.exist(kv, b"big").await.unwrap());
    });
    dev.shutdown().unwrap();
}

#[test]
fn no_r2t_before_the_namespace_is_granted() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv, other) = device(dir.path());
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&common::nvme_target(&dev, HOST))
            .await
            .unwrap();
        let value = Bytes::from(vec![3u8; 2 << 20]);
        // A 2 MiB Store on a namespace HOST may not use: refused at once, no R2T.
        h.io.submit(store(other, b"k", 2 << 20), value.clone(), false, 0)
            .await
            .unwrap();
        match next_pdu(&mut h.io).await {
            Pdu::CapsuleResp { cqe } => assert_eq!((cqe.status.sct, cqe.status.sc), (0, 0x0B)),
            other => panic!("expected a refusal, got {other:?}"),
        }
        // A vendor Submit of a large frame on the device's own nsid from a host that is
        // not an admin host: the same.
        let mut submit = Sqe {
            opcode: VENDOR_SUBMIT,
            nsid: DEVICE_NSID,
            ..Sqe::default()
        };
        submit.cdw[0] = HEADER_LEN as u32 + (1 << 20);
        let frame = Bytes::from(vec![0u8; HEADER_LEN + (1 << 20)]);
        h.io.submit(submit, frame, false, 0).await.unwrap();
        match next_pdu(&mut h.io).await {
            Pdu::CapsuleResp { cqe } => assert!(!cqe.status.is_success()),
            other => panic!("expected a refusal, got {other:?}"),
        }
        // The granted namespace still takes data through R2T.
        let mut fresh = NvmeHost::connect(&common::nvme_target(&dev, HOST))
            .await
            .unwrap();
        fresh.store(kv, b"k", &value, 0).await.unwrap();
        let got = fresh.retrieve(kv, b"k", 2 << 20).await.unwrap().unwrap();
        assert_eq!(got.0.len(), 2 << 20);
    });
    dev.shutdown().unwrap();
}

/// Issue 61, point 2: each queue within its own bound (4 MiB), six of them asked for the
/// data of 12 Stores of 2 MiB (24 MiB) and never sent it, and held it until the idle
/// deadline (300 s). Now the device's bound (8 MiB here) caps what all queues hold, a
/// queue owing data is closed at the frame deadline, and a host connecting fresh during
/// the attack is served.
#[test]
fn queues_together_hold_at_most_the_devices_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv, _) = device_with(dir.path(), |c| {
        c.max_held_bytes = 8 << 20;
        // Long past the R2Ts' half second below: no queue closes (and gives its bytes to a
        // waiting one) while they are counted.
        c.frame_timeout_ms = 3000;
    });
    let t = common::nvme_target(&dev, HOST);
    common::rt().block_on(async {
        let mut attackers = Vec::new();
        for i in 0..6u8 {
            let mut h = NvmeHost::connect(&t).await.unwrap();
            for j in 0..2u8 {
                let sqe = store(kv, &[b'a', i, j], 2 << 20);
                h.io.submit(sqe, Bytes::new(), false, 0).await.unwrap();
            }
            attackers.push(h);
        }
        // Every R2T the target sends within half a second (the rest wait for room).
        let mut r2ts = 0;
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(500);
        for h in &mut attackers {
            while let Ok(Ok(p)) = tokio::time::timeout_at(until, h.io.recv()).await {
                if matches!(p, Pdu::R2T { .. }) {
                    r2ts += 1;
                }
            }
        }
        assert!(
            r2ts <= 4,
            "{r2ts} values of 2 MiB asked for past an 8 MiB bound"
        );
        assert!(r2ts >= 1, "no Store was asked for its data");
        // A victim connecting during the attack is served once the owing queues close.
        let mut victim = NvmeHost::connect(&t).await.unwrap();
        let value = vec![5u8; 1 << 20];
        let stored = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            victim.store(kv, b"victim", &value, 0),
        )
        .await;
        assert!(matches!(stored, Ok(Ok(_))), "{stored:?}");
        let got = victim.retrieve(kv, b"victim", 1 << 20).await.unwrap();
        assert_eq!(got.map(|v| v.0.len()), Some(1 << 20));
        // The owing connections were closed.
        for h in &mut attackers {
            let r = tokio::time::timeout(std::time::Duration::from_secs(30), async {
                loop {
                    if h.io.recv().await.is_err() {
                        break;
                    }
                }
            })
            .await;
            assert!(r.is_ok(), "an attacker's connection stayed open");
        }
    });
    dev.shutdown().unwrap();
}

/// A vendor Fetch holds no bytes of its own: the response it sends is counted where it is
/// kept. Before issue 61's third round, a Fetch was charged its host buffer (2 MiB and a
/// header with the host library) on top of that: with kept responses filling the device's
/// bound to within 2 MiB, every Fetch waited for room that only a Fetch could give back,
/// and the queue hung until its host gave up.
#[test]
fn fetches_are_not_charged_twice_for_kept_responses() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, _, _) = device_with(dir.path(), |c| {
        c.nvme
            .hosts
            .insert(HOST.into(), vec!["kv".into(), "big".into()]);
        c.max_held_bytes = 4 << 20;
        c.nvme.max_queue_bytes = 4 << 20;
    });
    let (ns, secret) = common::admin(&dev).create_namespace("big").unwrap();
    let config = cerberus_host::ClientConfig::new(dev.nvme_addr().unwrap().to_string())
        .with_nvme(common::SUBNQN, HOST);
    let c = cerberus_host::BlockingClient::connect_with(config).unwrap();
    c.open_namespace(ns, &secret).unwrap();
    // Keys past the KV command set's 16 bytes: the vendor pair carries them.
    let keys: Vec<Bytes> = (0..3)
        .map(|i| Bytes::from(format!("a key longer than sixteen bytes {i}")))
        .collect();
    let value = Bytes::from(vec![7u8; 1_250_000]);
    for k in &keys {
        c.namespace(ns).put(k.clone(), value.clone()).unwrap();
    }
    // Three answered at once: 3.75 MiB kept of the device's 4 MiB.
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        for _ in 0..5 {
            let got = c.namespace(ns).get_many(keys.clone());
            let whole = got.as_ref().is_ok_and(|g| {
                g.iter()
                    .all(|v| v.as_ref().is_some_and(|v| v.len() == 1_250_000))
            });
            if tx.send(whole).is_err() {
                break;
            }
        }
    });
    for round in 0..5 {
        // Not a timing: a hung queue answers never (its host gives up after minutes).
        let whole = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("round {round}: the Fetches hung"));
        assert!(whole, "round {round}: every value whole");
    }
    worker.join().unwrap();
    dev.shutdown().unwrap();
}
