//! Namespace capacities over loopback: a full namespace answers stores with
//! CapacityExceeded (0x81) while another goes on; settings are given at create, changed by
//! the admin, kept across a restart and shown by stats.

use crate::common;

use cerberus_host::{BlockingClient, NamespaceSettings};
use cerberus_proto::Status;

fn settings(capacity: Option<u64>, weight: u32) -> NamespaceSettings {
    NamespaceSettings {
        capacity,
        weight,
        reservation_ops: 10,
        limit_ops: 1000,
        ..NamespaceSettings::default()
    }
}

#[test]
fn a_full_namespace_answers_capacity_exceeded_and_settings_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin = common::admin(&dev);
    let (full, secret) = admin
        .create_namespace_with("full", &settings(Some(4_000), 3))
        .unwrap();
    let (oc, other, _) = common::tenant(&dev, "other");
    let c = BlockingClient::connect(&dev.local_addr().to_string()).unwrap();
    c.open_namespace(full, &secret).unwrap();
    let ns = c.namespace(full);
    let value = vec![b'v'; 100];
    let mut stored = 0;
    let err = loop {
        match ns.put(format!("k{stored:04}").into_bytes(), value.clone()) {
            Ok(()) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 100, "the capacity never refused");
    };
    assert_eq!(err.status(), Some(Status::CapacityExceeded));
    assert_eq!(Status::CapacityExceeded.code(), 0x81);
    // Deletes go; so do the other namespace's stores.
    assert!(ns.delete(b"k0000".to_vec()).unwrap());
    for i in 0..100 {
        oc.namespace(other)
            .put(format!("k{i:04}").into_bytes(), value.clone())
            .unwrap();
    }

    let stats = ns.stats().unwrap();
    assert_eq!(stats["capacity"], 4_000);
    assert_eq!(stats["shares"]["weight"], 3);
    assert!(stats["used_bytes"].as_u64().unwrap() > 0, "{stats}");

    // The admin raises the capacity: the store goes.
    admin
        .configure_namespace(full, &settings(Some(1 << 20), 7))
        .unwrap();
    ns.put(b"after".to_vec(), value.clone()).unwrap();
    // Invalid settings are refused.
    let bad = admin
        .configure_namespace(full, &settings(None, 0))
        .unwrap_err();
    assert_eq!(bad.status(), Some(Status::InvalidField));
    // A tenant may not configure, even its own namespace.
    let refused = ns.configure(&settings(None, 1)).unwrap_err();
    assert_eq!(refused.status(), Some(Status::AccessDenied));

    drop((ns, c, admin));
    dev.shutdown().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin = common::admin(&dev);
    let stats = admin.namespace(full).stats().unwrap();
    assert_eq!(stats["capacity"], 1 << 20);
    assert_eq!(stats["shares"]["weight"], 7);
    assert_eq!(stats["shares"]["limit_ops"], 1000);
}
