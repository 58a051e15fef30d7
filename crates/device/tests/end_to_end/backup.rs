//! Backup under writes from another connection: a second device started on the backup
//! serves a prefix of the writes (at least those acknowledged before the call, batches
//! whole) with the same namespaces and credentials; tenants and existing directories are
//! refused.

use crate::common;

use cerberus_host::{Error, WriteBatch};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value {i} {}", "v".repeat(40)).into_bytes()
}

#[test]
fn a_backup_under_writes_serves_a_prefix_with_the_same_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let dev = common::start(&tmp.path().join("data"), |_| {});
    let (c, ns, secret) = common::tenant(&dev, "app");
    let admin = common::admin(&dev);
    let (stop, acked) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let writer = {
        let (stop, acked) = (stop.clone(), acked.clone());
        let h = c.namespace(ns);
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) {
                if i.is_multiple_of(10) {
                    let mut b = WriteBatch::new();
                    for j in i..i + 3 {
                        b.put(key(j), value(j));
                    }
                    h.write(b).unwrap();
                    i += 3;
                } else {
                    h.put(key(i), value(i)).unwrap();
                    i += 1;
                }
                acked.store(i, Ordering::Release);
            }
        })
    };
    while acked.load(Ordering::Acquire) < 300 {
        std::thread::yield_now();
    }
    let before = acked.load(Ordering::Acquire);
    let info = admin.backup("bk").unwrap();
    let after = acked.load(Ordering::Acquire);
    while acked.load(Ordering::Acquire) < after + 50 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    assert!(info.dir.ends_with("/bk"), "{info:?}");
    assert_eq!(info.namespaces, 1);

    // A tenant may not; a directory that exists is not written over.
    match c.backup("bk2") {
        Err(Error::AccessDenied(_)) => {}
        other => panic!("a tenant's backup: {other:?}"),
    }
    assert!(!tmp.path().join("bk2").exists());
    let e = admin.backup("bk").unwrap_err().to_string();
    assert!(e.contains("exists"), "{e}");
    // Made after the backup: not in it.
    admin.create_namespace("late").unwrap();

    let copy = common::start(&tmp.path().join("bk"), |_| {});
    assert_eq!(copy.admin_secret(), dev.admin_secret());
    let names: Vec<String> = common::admin(&copy)
        .list_namespaces()
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["app"]);
    let c2 = common::connect(&copy);
    let h = c2.open_namespace(ns, &secret).unwrap();
    let keys = h.list_all(Vec::new(), 1000).unwrap();
    let n = keys.len() as u64;
    assert!(
        n >= before,
        "{n} keys, {before} acknowledged before the backup"
    );
    assert!(n % 10 != 1 && n % 10 != 2, "a batch cut: {n} keys");
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(k.as_ref(), key(i as u64).as_slice());
    }
    for i in [0, n / 2, n - 1] {
        assert_eq!(
            h.get(key(i)).unwrap().unwrap().as_ref(),
            value(i).as_slice()
        );
    }
    // The backup is a device of its own; the source keeps its writes.
    h.put(b"x".to_vec(), b"y".to_vec()).unwrap();
    let total = acked.load(Ordering::Acquire);
    assert_eq!(
        c.namespace(ns).list_all(Vec::new(), 1000).unwrap().len() as u64,
        total
    );
    copy.shutdown().unwrap();
    dev.shutdown().unwrap();
}
