//! NVMe in-band authentication (DH-HMAC-CHAP) on the NVMe/TCP target: hosts with a secret
//! in `[nvme.host_secrets]` prove their NQN on every queue before anything else; a wrong
//! secret, no authentication, a malformed message each leave that queue refusing commands,
//! and other hosts are served throughout.

use crate::common;

use bytes::Bytes;
use cerberus_device::{Device, DeviceConfig, DeviceHandle};
use cerberus_host::nvme::{NvmeError, NvmeHost, NvmeQueue, NvmeTarget};
use cerberus_host::proto::nvme::{
    auth_command, authentication_required, connect_data, failure, property, AuthMessage,
    Challenged, Cqe, DhchapSecret, HashId, KvCommand, KvKey, KvOpcode, NvmeStatus, Sqe,
    CONNECT_ATR, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND,
};
use cerberus_host::{BlockingClient, ClientConfig};

pub(super) use common::SUBNQN;
pub(super) const ALICE: &str = "nqn.2014-08.org.example:alice";
pub(super) const BOB: &str = "nqn.2014-08.org.example:bob";
pub(super) const OPEN: &str = "nqn.2014-08.org.example:no-secret";

pub(super) fn secret(byte: u8) -> String {
    DhchapSecret::encode(Some(HashId::Sha256), &[byte; 32])
}

/// A device whose target grants ALICE "a", BOB "b" and OPEN "o" (and each "z", made by
/// the test that uses it); ALICE and BOB have secrets.
pub(super) fn device(dir: &std::path::Path, require: bool) -> (DeviceHandle, [u32; 3]) {
    device_with(dir, require, |_| {})
}

/// [`device`], its settings then given to `tweak`.
pub(super) fn device_with(
    dir: &std::path::Path,
    require: bool,
    tweak: impl FnOnce(&mut cerberus_device::DeviceConfig),
) -> (DeviceHandle, [u32; 3]) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        for (h, ns) in [(ALICE, "a"), (BOB, "b"), (OPEN, "o")] {
            c.nvme.hosts.insert(h.into(), vec![ns.into(), "z".into()]);
        }
        c.nvme.host_secrets.insert(ALICE.into(), secret(1));
        // BOB's key is transformed with SHA-512 and 64 bytes long.
        let bob = DhchapSecret::encode(Some(HashId::Sha512), &[2; 64]);
        c.nvme.host_secrets.insert(BOB.into(), bob);
        c.nvme.require_host_auth = require;
        tweak(c);
    });
    let admin = common::admin(&dev);
    let ids = ["a", "b", "o"].map(|n| admin.create_namespace(n).expect("namespace").0);
    (dev, ids)
}

pub(super) fn target(dev: &DeviceHandle, hostnqn: &str, secret: Option<String>) -> NvmeTarget {
    NvmeTarget {
        host_secret: secret,
        ..common::nvme_target(dev, hostnqn)
    }
}

fn bob_secret() -> String {
    DhchapSecret::encode(Some(HashId::Sha512), &[2; 64])
}

fn fabrics(fctype: u8, cdw10: u32, cdw11: u32) -> Sqe {
    cerberus_host::proto::nvme::fabrics_command(fctype, cdw10, cdw11, 0)
}

/// Opens a queue and sends its Connect by hand; the completion.
pub(super) async fn connect(
    dev: &DeviceHandle,
    host: &str,
    qid: u16,
    cntlid: u16,
) -> (NvmeQueue, Cqe) {
    let addr = dev.nvme_addr().unwrap().to_string();
    let mut q = NvmeQueue::open(&addr, Default::default()).await.unwrap();
    let data = connect_data([7; 16], cntlid, SUBNQN, host);
    let sqe = fabrics(0x01, u32::from(qid) << 16, 31);
    let (cqe, _) = q.command(sqe, Bytes::from(data), true, 0).await.unwrap();
    (q, cqe)
}

pub(super) async fn send(q: &mut NvmeQueue, data: Vec<u8>) -> NvmeStatus {
    let sqe = auth_command(FCTYPE_AUTH_SEND, data.len() as u32);
    q.command(sqe, Bytes::from(data), true, 0)
        .await
        .unwrap()
        .0
        .status
}

pub(super) async fn receive(q: &mut NvmeQueue) -> Result<AuthMessage, NvmeStatus> {
    let sqe = auth_command(FCTYPE_AUTH_RECEIVE, 4096);
    let (cqe, data) = q.command(sqe, Bytes::new(), true, 4096).await.unwrap();
    if !cqe.status.is_success() {
        return Err(cqe.status);
    }
    Ok(AuthMessage::decode(&data).expect("a well-formed message"))
}

/// One transaction by hand with `key` (already transformed for `host`); the controller's
/// last message.
async fn authenticate(q: &mut NvmeQueue, host: &str, key: &[u8]) -> AuthMessage {
    let negotiate = AuthMessage::Negotiate {
        tid: 9,
        sc_c: 0,
        hashes: vec![1],
        dhgroups: vec![0],
    };
    assert!(send(q, negotiate.encode()).await.is_success());
    let AuthMessage::Challenge {
        tid,
        hash,
        dhgroup,
        seqnum,
        challenge,
        ..
    } = receive(q).await.unwrap()
    else {
        panic!("no challenge");
    };
    assert_eq!((tid, hash, dhgroup, challenge.len()), (9, 1, 0, 32));
    let at = Challenged {
        hash: HashId::Sha256,
        challenge: &challenge,
        seqnum,
        tid: 9,
        sc_c: 0,
    };
    let response = at.host_response(key, host, SUBNQN);
    let reply = AuthMessage::Reply {
        tid: 9,
        seqnum: 0,
        response,
        challenge: None,
        dh_value: vec![],
    };
    assert!(send(q, reply.encode()).await.is_success());
    receive(q).await.unwrap()
}

/// Commands a queue must refuse before authentication: Identify, Property Set, a KV
/// Retrieve; each answers "authentication required".
pub(super) async fn refused_everything(q: &mut NvmeQueue, nsid: u32) {
    let identify = Sqe {
        opcode: 0x06,
        cdw: [1, 0, 0, 0, 0, 0],
        ..Sqe::default()
    };
    let set_cc = {
        let mut s = fabrics(0x00, 0, property::CC);
        s.cdw[2] = 1;
        s
    };
    let mut retrieve = Sqe {
        nsid,
        ..Sqe::default()
    };
    KvCommand {
        opcode: KvOpcode::Retrieve,
        key: KvKey::new(b"k").unwrap(),
        size: 64,
        options: 0,
    }
    .encode(&mut retrieve);
    for (sqe, buf) in [(identify, 4096), (set_cc, 0), (retrieve, 64)] {
        let (cqe, data) = q.command(sqe, Bytes::new(), true, buf).await.unwrap();
        assert_eq!(cqe.status, authentication_required());
        assert!(data.is_empty());
    }
}

#[test]
fn a_host_with_its_secret_connects_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, [a, b, o]) = device(dir.path(), false);
    common::rt().block_on(async {
        let mut alice = NvmeHost::connect(&target(&dev, ALICE, Some(secret(1))))
            .await
            .expect("alice authenticates");
        alice.store(a, b"k", b"alice's", 0).await.unwrap();
        let got = alice.retrieve(a, b"k", 64).await.unwrap().unwrap();
        assert_eq!(&got.0[..], b"alice's");
        assert_eq!(alice.active_namespaces().await.unwrap(), vec![a]);
        // SHA-512-transformed key; the host offers SHA-256 first and gets it.
        let mut bob = NvmeHost::connect(&target(&dev, BOB, Some(bob_secret())))
            .await
            .expect("bob authenticates");
        bob.store(b, b"k", b"bob's", 0).await.unwrap();
        // A host without a secret, while the device does not require one.
        let mut open = NvmeHost::connect(&target(&dev, OPEN, None)).await.unwrap();
        open.store(o, b"k", b"open", 0).await.unwrap();
        assert!(alice.exist(a, b"k").await.unwrap());
        // The Connect response asked for authentication (ATR), on both queues.
        let (_, cqe) = connect(&dev, ALICE, 0, 0xFFFF).await;
        assert!(cqe.status.is_success() && cqe.dw0 & CONNECT_ATR != 0);
        let (_, cqe) = connect(&dev, OPEN, 0, 0xFFFF).await;
        assert_eq!(cqe.dw0 & CONNECT_ATR, 0);
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_wrong_secret_is_refused_and_reaches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, [a, ..]) = device(dir.path(), false);
    let failures = || common::metric(&dev, "cerberus_auth_failures_total");
    assert_eq!(failures(), 0);
    common::rt().block_on(async {
        let r = NvmeHost::connect(&target(&dev, ALICE, Some(secret(3)))).await;
        assert!(matches!(r, Err(NvmeError::Auth(_))), "{:?}", r.err());
        assert_eq!(failures(), 1, "a failed transaction is counted");
        // No secret at all, for a host that has one.
        let r = NvmeHost::connect(&target(&dev, ALICE, None)).await;
        assert!(matches!(r, Err(NvmeError::Auth(_))), "{:?}", r.err());
        // By hand: Failure1, then the queue refuses everything, a second try included.
        let (mut q, _) = connect(&dev, ALICE, 0, 0xFFFF).await;
        let wrong = DhchapSecret::parse(&secret(3)).unwrap().transformed(ALICE);
        let last = authenticate(&mut q, ALICE, &wrong).await;
        assert!(matches!(
            last,
            AuthMessage::Failure {
                from_host: false,
                explanation: failure::FAILED,
                ..
            }
        ));
        refused_everything(&mut q, a).await;
        let again = AuthMessage::Negotiate {
            tid: 1,
            sc_c: 0,
            hashes: vec![1],
            dhgroups: vec![0],
        };
        assert!(!send(&mut q, again.encode()).await.is_success());
        // The right secret, by hand, opens the queue (and counts no failure).
        let counted = failures();
        let (mut q, _) = connect(&dev, ALICE, 0, 0xFFFF).await;
        let right = DhchapSecret::parse(&secret(1)).unwrap().transformed(ALICE);
        let last = authenticate(&mut q, ALICE, &right).await;
        assert!(matches!(last, AuthMessage::Success1 { tid: 9, .. }));
        let mut set_cc = fabrics(0x00, 0, property::CC);
        set_cc.cdw[2] = 1 | 0b110 << 4 | 6 << 16 | 4 << 20;
        let (cqe, _) = q.command(set_cc, Bytes::new(), true, 0).await.unwrap();
        assert!(cqe.status.is_success());
        assert_eq!(failures(), counted);
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_host_that_skips_authentication_is_refused_on_each_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, [a, ..]) = device(dir.path(), false);
    common::rt().block_on(async {
        // The admin queue: Property Get answers (a host may need it), nothing else.
        let (mut admin, cqe) = connect(&dev, ALICE, 0, 0xFFFF).await;
        let cntlid = cqe.dw0 as u16;
        let (cqe, _) = admin
            .command(fabrics(0x04, 0, property::VS), Bytes::new(), true, 0)
            .await
            .unwrap();
        assert!(cqe.status.is_success());
        refused_everything(&mut admin, a).await;
        // Authenticated admin queue, enabled controller; then an I/O queue that skips it.
        let key = DhchapSecret::parse(&secret(1)).unwrap().transformed(ALICE);
        let last = authenticate(&mut admin, ALICE, &key).await;
        assert!(matches!(last, AuthMessage::Success1 { .. }));
        let mut set_cc = fabrics(0x00, 0, property::CC);
        set_cc.cdw[2] = 1 | 0b110 << 4 | 6 << 16 | 4 << 20;
        let (cqe, _) = admin.command(set_cc, Bytes::new(), true, 0).await.unwrap();
        assert!(cqe.status.is_success());
        let (mut io, cqe) = connect(&dev, ALICE, 1, cntlid).await;
        assert!(cqe.status.is_success() && cqe.dw0 & CONNECT_ATR != 0);
        refused_everything(&mut io, a).await;
        // Once authenticated, the same I/O queue serves the namespace (a Success2 the host
        // sends anyway changes nothing).
        let last = authenticate(&mut io, ALICE, &key).await;
        assert!(matches!(last, AuthMessage::Success1 { .. }));
        let success2 = AuthMessage::Success2 { tid: 9 }.encode();
        assert!(send(&mut io, success2).await.is_success());
        let mut exist = Sqe {
            nsid: a,
            ..Sqe::default()
        };
        KvCommand {
            opcode: KvOpcode::Exist,
            key: KvKey::new(b"nothing").unwrap(),
            size: 0,
            options: 0,
        }
        .encode(&mut exist);
        let (cqe, _) = io.command(exist, Bytes::new(), true, 0).await.unwrap();
        assert_ne!(cqe.status, authentication_required());
        assert_eq!(cqe.status.sct, 1, "key does not exist: {:?}", cqe.status);
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_host_without_a_secret_is_refused_when_the_device_requires_one() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, [a, ..]) = device(dir.path(), true);
    common::rt().block_on(async {
        let r = NvmeHost::connect(&target(&dev, OPEN, None)).await;
        match r {
            Err(NvmeError::Status(s)) => assert_eq!((s.sct, s.sc), (1, 0x84)),
            other => panic!("expected Connect Invalid Host, got {:?}", other.err()),
        }
        let mut alice = NvmeHost::connect(&target(&dev, ALICE, Some(secret(1))))
            .await
            .expect("alice is served");
        alice.store(a, b"k", b"v", 0).await.unwrap();
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_malformed_message_fails_only_its_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, [a, b, _]) = device(dir.path(), false);
    common::rt().block_on(async {
        let mut bob = NvmeHost::connect(&target(&dev, BOB, Some(bob_secret())))
            .await
            .unwrap();
        let cases: Vec<Vec<u8>> = vec![
            vec![0xFF; 10],                     // no message type
            vec![1, 2, 0, 0, 9, 0, 32],         // a reply cut short, out of turn
            vec![0, 0, 0, 0, 1, 0, 0, 1, 7, 0], // a negotiate without a whole descriptor
            AuthMessage::Negotiate {
                tid: 1,
                sc_c: 0,
                hashes: vec![1],
                dhgroups: vec![6, 9], // no known group
            }
            .encode(),
            AuthMessage::Negotiate {
                tid: 1,
                sc_c: 0,
                hashes: vec![9], // no known hash
                dhgroups: vec![0],
            }
            .encode(),
        ];
        let explanations = [
            failure::INCORRECT_MESSAGE,
            failure::INCORRECT_PAYLOAD,
            failure::NOT_USABLE,
            failure::DHGROUP_UNUSABLE,
            failure::HASH_UNUSABLE,
        ];
        for (data, want) in cases.into_iter().zip(explanations) {
            let (mut q, _) = connect(&dev, ALICE, 0, 0xFFFF).await;
            assert!(send(&mut q, data).await.is_success());
            match receive(&mut q).await {
                Ok(AuthMessage::Failure { explanation, .. }) => assert_eq!(explanation, want),
                other => panic!("expected Failure1, got {other:?}"),
            }
            refused_everything(&mut q, a).await;
            // Another host's queues go on.
            bob.store(b, b"k", b"still", 0).await.unwrap();
        }
        // A Receive before any Send: out of turn, the queue still waits for a Negotiate.
        let (mut q, _) = connect(&dev, ALICE, 0, 0xFFFF).await;
        assert!(receive(&mut q).await.is_err());
        let key = DhchapSecret::parse(&secret(1)).unwrap().transformed(ALICE);
        let last = authenticate(&mut q, ALICE, &key).await;
        assert!(matches!(last, AuthMessage::Success1 { .. }));
    });
    dev.shutdown().unwrap();
}

#[test]
fn the_blocking_client_authenticates_over_the_nvme_wire() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, _) = device(dir.path(), true);
    let (z, z_secret) = common::admin(&dev).create_namespace("z").unwrap();
    let addr = dev.nvme_addr().unwrap().to_string();
    let config = ClientConfig::new(addr.clone()).with_nvme(SUBNQN, ALICE);
    assert!(BlockingClient::connect_with(config.clone()).is_err());
    let c = BlockingClient::connect_with(config.with_nvme_secret(secret(1))).expect("connect");
    c.open_namespace(z, &z_secret)
        .expect("the namespace's credential");
    let ns = c.namespace(z);
    assert!(ns.get(Bytes::from_static(b"absent")).unwrap().is_none());
    drop((ns, c));
    dev.shutdown().unwrap();
}

#[test]
fn a_malformed_secret_stops_the_device_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "DHHC-1:01:AAAA:".to_string(),
        secret(1).replace("DHHC-1", "DHHC-2"),
        // The CRC of another key.
        {
            let good = secret(1);
            let other = secret(2);
            let (g, o) = (&good[10..good.len() - 1], &other[10..other.len() - 1]);
            format!("DHHC-1:01:{}{}:", &g[..40], &o[40..])
        },
    ] {
        let mut c = DeviceConfig {
            data_dir: dir.path().to_path_buf(),
            listen: "127.0.0.1:0".into(),
            nvme_listen: Some("127.0.0.1:0".into()),
            ..DeviceConfig::default()
        };
        c.nvme.host_secrets.insert(ALICE.into(), bad.clone());
        let err = Device::start(c)
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(err.to_string().contains("host_secrets"), "{err}");
    }
}
