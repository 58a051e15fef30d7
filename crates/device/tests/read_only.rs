//! A read-only namespace on every wire (issue 61, point 7: the fence of a cluster move). A
//! tenant holding its own credential (native wire, the NVMe/TCP vendor pair) or its host's
//! grant and DH-HMAC-CHAP secret (NVMe/TCP KV commands) is refused every write once the admin
//! made its namespace read-only (`NamespaceReadOnly`, 0xCC; over KV commands the generic
//! "Namespace is Write Protected", 0x20), and nothing is written; reads are served; once the
//! admin clears it, writes work again. Before, the device had no such setting: a writer
//! with a part's credential kept writing to the old namespaces of a move.

mod common;

use bytes::Bytes;
use cerberus_host::nvme::{NvmeError, NvmeHost};
use cerberus_host::proto::nvme::NvmeStatus;
use cerberus_host::proto::{Status, StoreMode};
use cerberus_host::{
    BlockingClient, BlockingNamespace, ClientConfig, Error, IndexKind, ScanOptions, WriteBatch,
};
use common::{SUBNQN, TEST_HOSTNQN};

/// The generic status "Namespace is Write Protected".
const WRITE_PROTECTED: u8 = 0x20;

fn device(dir: &std::path::Path) -> cerberus_device::DeviceHandle {
    common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        // The tenant's host: granted its namespace alone, with its secret.
        c.nvme
            .hosts
            .insert(TEST_HOSTNQN.into(), vec!["moving".into()]);
        c.nvme
            .host_secrets
            .insert(TEST_HOSTNQN.into(), common::test_secret());
    })
}

fn read_only_refusal<T: std::fmt::Debug>(what: &str, r: cerberus_host::Result<T>) {
    match r {
        Err(e) => assert_eq!(e.status(), Some(Status::NamespaceReadOnly), "{what}: {e}"),
        Ok(v) => panic!("{what} was accepted by a read-only namespace: {v:?}"),
    }
}

fn keys(ns: &BlockingNamespace) -> Vec<Bytes> {
    ns.scan(ScanOptions::default())
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect()
}

/// Every write a tenant can send through `ns` is refused and changes nothing; reads work.
fn writes_refused(ns: &BlockingNamespace) {
    let before = keys(ns);
    read_only_refusal("put", ns.put("a", "changed"));
    read_only_refusal("put of a new key", ns.put("new", "x"));
    read_only_refusal(
        "put if absent",
        ns.store("new", "x", StoreMode::OnlyIfAbsent),
    );
    read_only_refusal(
        "put if present",
        ns.store("a", "x", StoreMode::OnlyIfPresent),
    );
    read_only_refusal("delete", ns.delete("b"));
    read_only_refusal("delete of an absent key", ns.delete("absent"));
    let mut batch = WriteBatch::new();
    batch.put("c", "x").delete("a");
    read_only_refusal("write batch", ns.write(batch));
    read_only_refusal(
        "put_many",
        ns.put_many(vec![(Bytes::from("d"), Bytes::from("x"))]),
    );
    read_only_refusal("index create", ns.create_index("city", IndexKind::Vas));
    read_only_refusal("delete range", ns.delete_range("a", "z"));
    read_only_refusal("delete prefix of no key", ns.delete_prefix("absent"));
    assert_eq!(ns.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(ns.contains("b").unwrap());
    assert_eq!(keys(ns), before);
    assert_eq!(ns.stats().unwrap()["read_only"], true);
}

#[test]
fn a_tenant_is_refused_writes_on_every_wire_while_read_only() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let admin = common::admin(&dev);
    let (nsid, secret) = admin.create_namespace("moving").unwrap();
    let native = common::connect(&dev).open_namespace(nsid, &secret).unwrap();
    native.put("a", "1").unwrap();
    native.put("b", "2").unwrap();
    let addr = dev.nvme_addr().unwrap().to_string();
    let config = ClientConfig::new(addr)
        .with_nvme(SUBNQN, TEST_HOSTNQN)
        .with_nvme_secret(common::test_secret());
    let vendor = BlockingClient::connect_with(config)
        .unwrap()
        .open_namespace(nsid, &secret)
        .unwrap();
    assert_eq!(native.stats().unwrap()["read_only"], false);

    admin.set_read_only(nsid, true).unwrap();
    admin.set_read_only(nsid, true).unwrap();
    writes_refused(&native);
    writes_refused(&vendor);
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&common::nvme_target(&dev, TEST_HOSTNQN))
            .await
            .unwrap();
        let refused = NvmeStatus::error(0, WRITE_PROTECTED);
        match h.store(nsid, b"a", b"kv", 0).await {
            Err(NvmeError::Status(s)) => assert_eq!(s, refused),
            other => panic!("KV Store to a read-only namespace: {other:?}"),
        }
        match h.delete(nsid, b"b").await {
            Err(NvmeError::Status(s)) => assert_eq!(s, refused),
            other => panic!("KV Delete in a read-only namespace: {other:?}"),
        }
        let (v, _) = h.retrieve(nsid, b"a", 64).await.unwrap().unwrap();
        assert_eq!(&v[..], b"1");
        assert!(h.exist(nsid, b"b").await.unwrap());

        admin.set_read_only(nsid, false).unwrap();
        h.store(nsid, b"a", b"kv", 0).await.unwrap();
        assert!(h.delete(nsid, b"b").await.unwrap());
    });
    assert_eq!(native.get("a").unwrap().as_deref(), Some(&b"kv"[..]));
    native.put("n", "native").unwrap();
    vendor.put("v", "vendor").unwrap();
    vendor.create_index("city", IndexKind::Vas).unwrap();
    assert_eq!(native.stats().unwrap()["read_only"], false);
}

/// Only the admin sets it; it outlives a restart; its other settings stay as they were.
#[test]
fn the_flag_is_the_admins_and_outlives_a_restart() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (tenant, nsid, secret) = common::tenant(&dev, "moving");
    let ns = tenant.namespace(nsid);
    match tenant.set_read_only(nsid, true) {
        Err(Error::AccessDenied(_)) => {}
        other => panic!("a tenant made its namespace read-only: {other:?}"),
    }
    ns.put("a", "1").unwrap();
    let admin = common::admin(&dev);
    let settings = cerberus_host::NamespaceSettings {
        weight: 7,
        ..Default::default()
    };
    admin.configure_namespace(nsid, &settings).unwrap();
    admin.set_read_only(nsid, true).unwrap();
    let stats = ns.stats().unwrap();
    assert_eq!(
        (
            stats["read_only"].clone(),
            stats["shares"]["weight"].clone()
        ),
        (true.into(), 7.into())
    );
    drop((tenant, admin));
    dev.shutdown().unwrap();

    let dev = device(dir.path());
    let ns = common::connect(&dev).open_namespace(nsid, &secret).unwrap();
    read_only_refusal("put after a restart", ns.put("b", "2"));
    assert_eq!(ns.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    common::admin(&dev).set_read_only(nsid, false).unwrap();
    ns.put("b", "2").unwrap();
    assert_eq!(ns.stats().unwrap()["shares"]["weight"], 7);
}
