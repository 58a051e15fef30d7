//! What a host can make the NVMe/TCP target hold (issue 61, point 2): a command capsule
//! carries at most `in_capsule_bytes` (not MAXH2CDATA), and a Store or vendor Submit whose
//! namespace the host may not use gets no R2T (it is refused before any of its data is
//! asked for). Unfetched vendor responses are bounded in `nvme/vendor.rs`'s unit tests.

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
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        c.nvme.require_host_auth = false;
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
