//! The vendor command pair on NVMe/TCP (`docs/protocol.md`, "Over NVMe/TCP: vendor
//! commands"): its bounds (Fetch without Submit, a Submit longer than the device reads, a
//! Fetch into too small a buffer), host NQN grants and admin hosts, and what the KV command
//! set cannot carry (long keys, large values) through `cerberus_host::Client`.

use crate::common;

use bytes::{Bytes, BytesMut};
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{NvmeHost, NvmeTarget};
use cerberus_host::proto::nvme::{
    Digests, NvmeStatus, Sqe, SC_COMMAND_SEQUENCE_ERROR, SC_DATA_SGL_LENGTH_INVALID, VENDOR_FETCH,
    VENDOR_SUBMIT,
};
use cerberus_host::{BlockingClient, ClientConfig, Error};
use cerberus_proto::{Command, Request, Response, Status, DEVICE_NSID, HEADER_LEN};

const GRANTED: &str = "nqn.2014-08.org.example:granted";
const STRANGER: &str = "nqn.2014-08.org.example:stranger";

/// A device whose target grants GRANTED namespace "kv" (not as an admin host) and
/// STRANGER nothing; the namespace made. The device, the namespace and its secret.
fn device(dir: &std::path::Path) -> (DeviceHandle, u32, String) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(GRANTED.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
        c.max_value_len = 256 << 10;
    });
    let (ns, secret) = common::admin(&dev).create_namespace("kv").expect("kv");
    (dev, ns, secret)
}

fn target(dev: &DeviceHandle, hostnqn: &str) -> NvmeTarget {
    NvmeTarget {
        addr: dev.nvme_addr().expect("nvme on").to_string(),
        subnqn: common::SUBNQN.into(),
        hostnqn: hostnqn.into(),
        digests: Digests::default(),
        host_secret: None,
        ctrl_secret: None,
    }
}

fn client(dev: &DeviceHandle, hostnqn: &str) -> BlockingClient {
    let addr = dev.nvme_addr().expect("nvme on").to_string();
    BlockingClient::connect_with(ClientConfig::new(addr).with_nvme(common::SUBNQN, hostnqn))
        .expect("connect over NVMe/TCP")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn frame(nsid: u32, request: Request) -> Bytes {
    let mut out = BytesMut::new();
    Command {
        cid: 9,
        nsid,
        request,
    }
    .encode(&mut out)
    .unwrap();
    out.freeze()
}

fn vendor_sqe(opcode: u8, nsid: u32, cdw10: u32) -> Sqe {
    let mut sqe = Sqe {
        opcode,
        nsid,
        ..Sqe::default()
    };
    sqe.cdw[0] = cdw10;
    sqe
}

fn vendor_sqe_cid(opcode: u8, nsid: u32, cdw10: u32, native_cid: u32) -> Sqe {
    let mut sqe = vendor_sqe(opcode, nsid, cdw10);
    sqe.cdw[1] = native_cid;
    sqe
}

#[test]
fn fetch_without_submit_and_oversized_submits_are_refused_and_the_queue_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns, secret) = device(dir.path());
    let max_body = common::admin(&dev).identify().unwrap().max_frame_body;
    rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev, GRANTED)).await.unwrap();
        let fetch = vendor_sqe(VENDOR_FETCH, ns, 4096);
        let (cqe, data) = h.io.command(fetch, Bytes::new(), true, 4096).await.unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(0, SC_COMMAND_SEQUENCE_ERROR));
        assert!(data.is_empty());

        // Past the largest frame the device reads: refused at once, no R2T asks for it (the
        // queue's initiator would answer one with data it does not have, and fail).
        let huge = HEADER_LEN as u32 + max_body + 1;
        let submit = vendor_sqe(VENDOR_SUBMIT, ns, huge);
        let (cqe, _) = h.io.command(submit, Bytes::new(), false, 0).await.unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(0, 0x02));
        // So is a frame for another namespace than the command names.
        let auth = frame(
            ns,
            Request::Authenticate {
                secret: Bytes::from(secret.clone()),
            },
        );
        let r = h.io.vendor_pair(ns + 1, 9, auth.clone(), 8192, 4096);
        let r = r.await.unwrap();
        assert_eq!(r.submit.status, NvmeStatus::error(0, 0x02));
        assert!(r.fetch.is_none());
        // Nothing was kept for it.
        let fetch = vendor_sqe_cid(VENDOR_FETCH, ns, 4096, 9);
        let (cqe, _) = h.io.command(fetch, Bytes::new(), true, 4096).await.unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(0, SC_COMMAND_SEQUENCE_ERROR));

        // The queue still serves: authenticate, then a Fetch into too small a buffer keeps
        // the response for one that holds it.
        let r = h.io.vendor_pair(ns, 9, auth, 8192, 4096).await.unwrap();
        assert!(r.submit.status.is_success() && r.fetch.unwrap().status.is_success());
        let f = cerberus_proto::split_frame(&mut BytesMut::from(&r.data[..]), 1 << 20)
            .unwrap()
            .unwrap();
        assert_eq!(Response::decode(&f).unwrap().status, Status::Success);
        let value = Bytes::from(vec![7u8; 100]);
        let put = frame(
            ns,
            Request::Store {
                key: Bytes::from_static(b"k"),
                value: value.clone(),
                mode: cerberus_proto::StoreMode::Always,
                sync: false,
            },
        );
        let r = h.io.vendor_pair(ns, 9, put, 8192, 4096).await.unwrap();
        assert!(r.fetch.unwrap().status.is_success());
        let get = frame(
            ns,
            Request::Retrieve {
                key: Bytes::from_static(b"k"),
            },
        );
        let r = h.io.vendor_pair(ns, 9, get, 8192, 8).await.unwrap();
        assert!(r.submit.status.is_success());
        let short = r.fetch.unwrap();
        assert_eq!(
            short.status,
            NvmeStatus::error(0, SC_DATA_SGL_LENGTH_INVALID)
        );
        let whole = short.dw0;
        assert_eq!(whole, r.submit.dw0);
        assert!(whole as usize >= HEADER_LEN + 100);
        // Another native id has nothing kept; this one has.
        let other = vendor_sqe_cid(VENDOR_FETCH, ns, whole, 10);
        let (cqe, _) =
            h.io.command(other, Bytes::new(), true, whole)
                .await
                .unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(0, SC_COMMAND_SEQUENCE_ERROR));
        let fetch = vendor_sqe_cid(VENDOR_FETCH, ns, whole, 9);
        let (cqe, data) =
            h.io.command(fetch, Bytes::new(), true, whole)
                .await
                .unwrap();
        assert!(cqe.status.is_success());
        assert_eq!(data.len(), whole as usize);
        assert!(data.ends_with(&value));
    });
    dev.shutdown().unwrap();
}

#[test]
fn hosts_touch_only_granted_namespaces_and_admin_needs_an_admin_host() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns, secret) = device(dir.path());
    // The right secret does not open a namespace the host NQN was not granted.
    let stranger = client(&dev, STRANGER);
    assert!(matches!(
        stranger.open_namespace(ns, &secret),
        Err(Error::AccessDenied(_))
    ));
    let resp = stranger
        .call(
            ns,
            Request::Retrieve {
                key: Bytes::from_static(b"k"),
            },
        )
        .unwrap();
    assert_eq!(resp.status, Status::AccessDenied);
    // A granted host still proves the namespace's credential, as on the native wire.
    let granted = client(&dev, GRANTED);
    assert!(matches!(
        granted.open_namespace(ns, "wrong"),
        Err(Error::AccessDenied(_))
    ));
    let resp = granted
        .call(
            ns,
            Request::Retrieve {
                key: Bytes::from_static(b"k"),
            },
        )
        .unwrap();
    assert_eq!(resp.status, Status::AccessDenied);
    // The admin secret is refused from a host not listed in admin_hosts.
    assert!(matches!(
        granted.authenticate_admin(dev.admin_secret()),
        Err(Error::AccessDenied(_))
    ));
    assert!(matches!(
        granted.list_namespaces(),
        Err(Error::AccessDenied(_))
    ));
    // Identify needs no credential.
    let id = granted.identify().unwrap();
    assert_eq!(id.max_value_len, 256 << 10);
    let resp = granted.call(DEVICE_NSID, Request::Identify).unwrap();
    assert_eq!(resp.status, Status::Success);
    dev.shutdown().unwrap();
}

#[test]
fn long_keys_and_large_values_round_trip_over_nvme() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns, secret) = device(dir.path());
    let c = client(&dev, GRANTED);
    let n = c.open_namespace(ns, &secret).unwrap();
    // Longer than the KV command set's 16 bytes.
    let key = vec![b'k'; 200];
    n.put(key.clone(), b"v".to_vec()).unwrap();
    assert_eq!(n.get(key.clone()).unwrap().as_deref(), Some(&b"v"[..]));
    // Past the in-capsule data (8 KiB): the Submit's frame comes through R2T.
    let big = (0..200_000u32).map(|i| i as u8).collect::<Vec<u8>>();
    n.put(b"big".to_vec(), big.clone()).unwrap();
    assert_eq!(n.get(b"big".to_vec()).unwrap().as_deref(), Some(&big[..]));
    assert!(n.contains(key.clone()).unwrap());
    assert!(n.delete(key.clone()).unwrap());
    assert_eq!(n.get(key).unwrap(), None);
    // Too large for the device: refused by the client, as on the native wire.
    assert!(matches!(
        n.put(b"huge".to_vec(), vec![0u8; 300 << 10]),
        Err(Error::InvalidValueSize(_))
    ));
    dev.shutdown().unwrap();
}

#[test]
fn concurrent_calls_on_one_client_are_pipelined_and_each_gets_its_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns, secret) = device(dir.path());
    let addr = dev.nvme_addr().expect("nvme on").to_string();
    rt().block_on(async {
        let config = ClientConfig::new(addr).with_nvme(common::SUBNQN, GRANTED);
        let c = cerberus_host::Client::connect_with(config).await.unwrap();
        let n = c.open_namespace(ns, &secret).await.unwrap();
        // Small values in the capsule and large ones through R2T, interleaved.
        let value = |i: usize| vec![i as u8; if i.is_multiple_of(5) { 20_000 } else { 10 + i }];
        let mut puts = tokio::task::JoinSet::new();
        for i in 0..100 {
            let n = n.clone();
            puts.spawn(async move { n.put(format!("key-{i:03}"), value(i)).await });
        }
        while let Some(r) = puts.join_next().await {
            r.unwrap().unwrap();
        }
        let mut gets = tokio::task::JoinSet::new();
        for i in 0..100 {
            let n = n.clone();
            gets.spawn(async move { (i, n.get(format!("key-{i:03}")).await) });
        }
        while let Some(r) = gets.join_next().await {
            let (i, got) = r.unwrap();
            assert_eq!(got.unwrap().as_deref(), Some(&value(i)[..]), "key {i}");
        }
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_queue_keeps_eight_unfetched_responses_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, _, _) = device(dir.path());
    rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev, GRANTED)).await.unwrap();
        let submit = |cid: u32| {
            let f = Command {
                cid,
                nsid: DEVICE_NSID,
                request: Request::Identify,
            };
            let mut out = BytesMut::new();
            f.encode(&mut out).unwrap();
            let sqe = vendor_sqe(VENDOR_SUBMIT, DEVICE_NSID, out.len() as u32);
            (sqe, out.freeze())
        };
        for cid in 0..8 {
            let (sqe, data) = submit(cid);
            let (cqe, _) = h.io.command(sqe, data, true, 0).await.unwrap();
            assert!(cqe.status.is_success(), "submit {cid}");
        }
        // Never fetched: the ninth is refused until one is.
        let (sqe, data) = submit(8);
        let (cqe, _) = h.io.command(sqe, data.clone(), true, 0).await.unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(0, SC_COMMAND_SEQUENCE_ERROR));
        let fetch = vendor_sqe_cid(VENDOR_FETCH, DEVICE_NSID, 4096, 3);
        let (cqe, got) = h.io.command(fetch, Bytes::new(), true, 4096).await.unwrap();
        assert!(cqe.status.is_success());
        let f = cerberus_proto::split_frame(&mut BytesMut::from(&got[..]), 1 << 20)
            .unwrap()
            .unwrap();
        assert_eq!(f.header.cid, 3);
        let (cqe, _) = h.io.command(sqe, data, true, 0).await.unwrap();
        assert!(cqe.status.is_success());
    });
    dev.shutdown().unwrap();
}

/// Unfetched responses go at `nvme.unfetched_timeout_ms` even when their queue sends
/// nothing more. Before issue 61's third round they expired only at that queue's next
/// Submit or Fetch: a host that kept large responses and went silent held the device's
/// bound until its idle deadline (300 s), and another host's Retrieve waited all along.
#[test]
fn unfetched_responses_go_at_their_timeout_while_the_queue_is_silent() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(GRANTED.into(), vec!["kv".into()]);
        c.nvme.require_host_auth = false;
        c.nvme.max_queue_bytes = 1 << 20;
        c.max_held_bytes = 1 << 20;
        c.nvme.unfetched_timeout_ms = 300;
    });
    let (ns, secret) = common::admin(&dev).create_namespace("kv").expect("kv");
    let value = vec![5u8; 400 << 10];
    rt().block_on(async {
        let mut a = NvmeHost::connect(&target(&dev, GRANTED)).await.unwrap();
        for key in [b"v0", b"v1"] {
            a.store(ns, key, &value, 0).await.unwrap();
        }
        let auth = frame(
            ns,
            Request::Authenticate {
                secret: Bytes::from(secret.clone()),
            },
        );
        let r = a.io.vendor_pair(ns, 9, auth, 8192, 4096).await.unwrap();
        assert!(r.fetch.unwrap().status.is_success());
        // Two reads answered and kept: their Fetches' buffers are too small. 800 KiB of
        // the device's 1 MiB, then silence on that queue.
        for (cid, key) in [(20, "v0"), (21, "v1")] {
            let mut get = BytesMut::new();
            let request = Request::Retrieve {
                key: Bytes::from(key),
            };
            Command {
                cid,
                nsid: ns,
                request,
            }
            .encode(&mut get)
            .unwrap();
            let r =
                a.io.vendor_pair(ns, cid, get.freeze(), 8192, 8)
                    .await
                    .unwrap();
            assert!(r.submit.status.is_success());
            assert_eq!(
                r.fetch.unwrap().status,
                NvmeStatus::error(0, SC_DATA_SGL_LENGTH_INVALID)
            );
        }
        // Another host's Retrieve into a 400 KiB buffer needs 400 KiB of the bound.
        let mut b = NvmeHost::connect(&target(&dev, GRANTED)).await.unwrap();
        let got = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            b.retrieve(ns, b"v0", 400 << 10),
        )
        .await;
        let got = got.expect("the other host's Retrieve waited for the silent queue's responses");
        assert_eq!(got.unwrap().unwrap().0.len(), 400 << 10);
        drop(a);
    });
    dev.shutdown().unwrap();
}
