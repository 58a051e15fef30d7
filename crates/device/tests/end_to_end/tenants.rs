//! End to end over loopback: tenants see only their own data, credentials gate every data
//! opcode, conditional stores and size limits answer with the NVMe status codes.

use crate::common;

both_wires!(
    two_tenants_with_the_same_keys_read_only_their_own,
    missing_or_wrong_credentials_are_denied_for_every_data_opcode,
    conditional_stores_and_limits_answer_with_nvme_codes,
    destroyed_namespaces_are_gone_and_their_ids_not_reused,
    paging_through_a_list_returns_every_key_once_in_order,
);

use cerberus_host::{Error, WriteOptions};
use cerberus_proto::{Request, Status, StoreMode};

fn two_tenants_with_the_same_keys_read_only_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (a, na, _) = common::tenant(&dev, "alpha");
    let (b, nb, _) = common::tenant(&dev, "beta");
    assert_ne!(na, nb);
    for i in 0..500u32 {
        let k = format!("key-{i:04}");
        a.namespace(na)
            .put(k.clone().into_bytes(), format!("a{i}").into_bytes())
            .unwrap();
        b.namespace(nb)
            .put(k.into_bytes(), format!("b{i}").into_bytes())
            .unwrap();
    }
    for i in 0..500u32 {
        let k = format!("key-{i:04}").into_bytes();
        assert_eq!(
            a.namespace(na).get(k.clone()).unwrap().unwrap(),
            format!("a{i}").as_bytes()
        );
        assert_eq!(
            b.namespace(nb).get(k).unwrap().unwrap(),
            format!("b{i}").as_bytes()
        );
    }
    // Lists hold the tenant's own keys only.
    let (keys, more) = a.namespace(na).list(Vec::new(), false, 1000).unwrap();
    assert_eq!(keys.len(), 500);
    assert!(!more);
    // A tenant cannot reach the other's namespace even by naming it.
    assert!(matches!(
        a.namespace(nb).get(b"key-0001".to_vec()),
        Err(Error::AccessDenied(_))
    ));
    // Deleting in one namespace leaves the other alone.
    assert!(a.namespace(na).delete(b"key-0001".to_vec()).unwrap());
    assert!(!a.namespace(na).contains(b"key-0001".to_vec()).unwrap());
    assert!(b.namespace(nb).contains(b"key-0001".to_vec()).unwrap());
    dev.shutdown().unwrap();
}

fn data_requests() -> Vec<Request> {
    vec![
        Request::Store {
            key: "k".into(),
            value: "v".into(),
            mode: StoreMode::Always,
            sync: false,
        },
        Request::Retrieve { key: "k".into() },
        Request::List {
            start: "".into(),
            start_exclusive: false,
            max_keys: 10,
        },
        Request::Delete { key: "k".into() },
        Request::Exist { key: "k".into() },
        Request::IterOpen {
            start: "".into(),
            upper_bound: "".into(),
            prefix: "".into(),
            keys_only: false,
        },
        Request::IterNext {
            iter: 0,
            max_entries: 10,
            max_bytes: 1000,
        },
        Request::IterClose { iter: 0 },
        Request::IndexCreate {
            attr: "a".into(),
            vas: false,
        },
        Request::IndexDrop { attr: "a".into() },
        Request::IndexList,
        Request::Query {
            query: r#"{"op": "find", "filter": {}}"#.into(),
        },
        Request::Query {
            query: r#"{"op": "aggregate", "fn": "count"}"#.into(),
        },
        Request::Stats,
    ]
}

fn missing_or_wrong_credentials_are_denied_for_every_data_opcode() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (owner, ns, secret) = common::tenant(&dev, "owner");
    owner
        .namespace(ns)
        .put(b"k".to_vec(), b"kept".to_vec())
        .unwrap();
    let anonymous = common::connect(&dev);
    let wrong = common::connect(&dev);
    let failures = common::metric(&dev, "cerberus_auth_failures_total");
    assert!(matches!(
        wrong.open_namespace(ns, "not-the-secret"),
        Err(Error::AccessDenied(_))
    ));
    // Counted, over either wire (through the vendor pair on NVMe/TCP).
    assert_eq!(
        common::metric(&dev, "cerberus_auth_failures_total"),
        failures + 1
    );
    // The owner's secret does not open another namespace.
    let (_, other_ns, _) = common::tenant(&dev, "other");
    let misused = common::connect(&dev);
    assert!(matches!(
        misused.open_namespace(other_ns, &secret),
        Err(Error::AccessDenied(_))
    ));
    for client in [&anonymous, &wrong, &misused] {
        for req in data_requests() {
            let op = req.opcode();
            let resp = client.call(ns, req).unwrap();
            assert_eq!(resp.status, Status::AccessDenied, "{op:?}");
        }
        // Namespace administration needs the admin credential.
        assert!(matches!(
            client.create_namespace("x"),
            Err(Error::AccessDenied(_))
        ));
        assert!(matches!(
            client.destroy_namespace(ns),
            Err(Error::AccessDenied(_))
        ));
        assert!(matches!(
            client.list_namespaces(),
            Err(Error::AccessDenied(_))
        ));
        let bk = dir.path().join("bk");
        assert!(matches!(
            client.backup(bk.to_str().unwrap()),
            Err(Error::AccessDenied(_))
        ));
        assert!(!bk.exists());
    }
    // Nothing was touched: the store and the delete were refused.
    assert_eq!(
        owner.namespace(ns).get(b"k".to_vec()).unwrap().unwrap(),
        "kept".as_bytes()
    );
    // Nor was an index created: the owner's list is empty.
    assert_eq!(
        owner.namespace(ns).list_indexes().unwrap(),
        serde_json::json!([])
    );
    let stats = owner.namespace(ns).stats().unwrap();
    assert_eq!(stats["puts"], 1, "{stats}");
    assert_eq!(stats["deletes"], 0, "{stats}");
    dev.shutdown().unwrap();
}

fn conditional_stores_and_limits_answer_with_nvme_codes() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.max_key_len = 16;
        c.max_value_len = 1024;
    });
    let (c, ns, _) = common::tenant(&dev, "t");
    c.namespace(ns)
        .put(b"k".to_vec(), b"first".to_vec())
        .unwrap();

    let r = c
        .namespace(ns)
        .store(b"k".to_vec(), b"second".to_vec(), StoreMode::OnlyIfAbsent);
    assert!(matches!(r, Err(Error::KeyExists)), "{r:?}");
    assert_eq!(r.unwrap_err().status(), Some(Status::KeyExists));
    assert_eq!(
        c.namespace(ns).get(b"k".to_vec()).unwrap().unwrap(),
        "first".as_bytes()
    );

    let r = c
        .namespace(ns)
        .store(b"absent".to_vec(), b"x".to_vec(), StoreMode::OnlyIfPresent);
    assert!(matches!(r, Err(Error::KeyNotExist)), "{r:?}");
    assert!(!c.namespace(ns).contains(b"absent".to_vec()).unwrap());
    c.namespace(ns)
        .with_write_options(WriteOptions { sync: true })
        .store(b"k".to_vec(), b"third".to_vec(), StoreMode::OnlyIfPresent)
        .unwrap();
    c.namespace(ns)
        .store(b"new".to_vec(), b"n".to_vec(), StoreMode::OnlyIfAbsent)
        .unwrap();
    assert_eq!(
        c.namespace(ns).get(b"k".to_vec()).unwrap().unwrap(),
        "third".as_bytes()
    );

    let long_key = vec![b'k'; 17];
    let r = c.namespace(ns).put(long_key.clone(), b"v".to_vec());
    assert_eq!(r.unwrap_err().status(), Some(Status::InvalidKeySize));
    let r = c.namespace(ns).get(long_key);
    assert_eq!(r.unwrap_err().status(), Some(Status::InvalidKeySize));
    let r = c.namespace(ns).put(Vec::new(), b"v".to_vec());
    assert_eq!(r.unwrap_err().status(), Some(Status::InvalidKeySize));
    let r = c.namespace(ns).put(b"big".to_vec(), vec![0u8; 1025]);
    assert_eq!(r.unwrap_err().status(), Some(Status::InvalidValueSize));
    assert!(!c.namespace(ns).contains(b"big".to_vec()).unwrap());
    // A value exactly at the limit is fine.
    c.namespace(ns)
        .put(b"big".to_vec(), vec![7u8; 1024])
        .unwrap();
    assert_eq!(
        c.namespace(ns).get(b"big".to_vec()).unwrap().unwrap().len(),
        1024
    );

    // Deleting an absent key says so.
    assert!(!c.namespace(ns).delete(b"never".to_vec()).unwrap());
    let id = c.identify().unwrap();
    assert_eq!(id.max_key_len, 16);
    assert_eq!(id.max_value_len, 1024);
    dev.shutdown().unwrap();
}

fn destroyed_namespaces_are_gone_and_their_ids_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin = common::admin(&dev);
    let (c, ns, _) = common::tenant(&dev, "doomed");
    c.namespace(ns).put(b"k".to_vec(), b"v".to_vec()).unwrap();
    admin.destroy_namespace(ns).unwrap();
    let r = c.namespace(ns).get(b"k".to_vec());
    assert_eq!(r.unwrap_err().status(), Some(Status::InvalidNamespace));
    assert!(admin
        .list_namespaces()
        .unwrap()
        .iter()
        .all(|e| e.nsid != ns));
    let (again, _) = admin.create_namespace("doomed").unwrap();
    assert_ne!(again, ns);
    dev.shutdown().unwrap();
}

fn paging_through_a_list_returns_every_key_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_list_keys = 7);
    let (c, ns, _) = common::tenant(&dev, "pages");
    let mut want: Vec<Vec<u8>> = (0..100u32)
        .map(|i| format!("{:03}", i * 7 % 100).into_bytes())
        .collect();
    for k in &want {
        c.namespace(ns).put(k.clone(), b"v".to_vec()).unwrap();
    }
    want.sort();
    want.dedup();
    let got: Vec<Vec<u8>> = c
        .namespace(ns)
        .list_all(Vec::new(), 1000)
        .unwrap()
        .into_iter()
        .map(|k| k.to_vec())
        .collect();
    assert_eq!(got, want);
    dev.shutdown().unwrap();
}
