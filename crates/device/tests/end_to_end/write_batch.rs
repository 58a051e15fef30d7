//! The `WriteBatch` command over loopback: puts and deletes of a namespace applied all
//! together; a bad write, a full namespace or a stranger's connection leaves nothing written.

use crate::common;

use cerberus_host::{BlockingClient, NamespaceSettings, WriteBatch};
use cerberus_proto::{Status, MAX_BATCH_WRITES};

fn key(i: usize) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

#[test]
fn a_batch_of_puts_and_deletes_lands_whole() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (c, nsid, _) = common::tenant(&dev, "batches");
    let ns = c.namespace(nsid);
    ns.put(key(0), b"old".to_vec()).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..1_000 {
        b.put(key(i), format!("v{i}").into_bytes());
    }
    b.delete(key(1)); // after its put: the delete wins
    b.delete(b"never-written".to_vec()); // no error in a batch
    b.put(key(2), b"second".to_vec()); // a later write of a key wins
    ns.write(b).unwrap();
    assert_eq!(ns.get(key(0)).unwrap().as_deref(), Some(&b"v0"[..]));
    assert_eq!(ns.get(key(1)).unwrap(), None);
    assert_eq!(ns.get(key(2)).unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(ns.get(key(999)).unwrap().as_deref(), Some(&b"v999"[..]));
    // An empty batch is no command and no error.
    ns.write(WriteBatch::new()).unwrap();
    // With sync, answered once durable: the same writes land.
    let mut b = WriteBatch::new();
    b.put(key(5_000), b"synced".to_vec());
    let synced = ns.with_write_options(cerberus_host::WriteOptions { sync: true });
    synced.write(b).unwrap();
    assert_eq!(ns.get(key(5_000)).unwrap().as_deref(), Some(&b"synced"[..]));
}

#[test]
fn a_bad_write_refuses_the_batch_whole() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_value_len = 1024);
    let (c, nsid, _) = common::tenant(&dev, "strict");
    let ns = c.namespace(nsid);
    let mut b = WriteBatch::new();
    b.put(key(0), b"fine".to_vec());
    b.put(key(1), vec![b'x'; 1025]);
    let err = ns.write(b).unwrap_err();
    assert_eq!(err.status(), Some(Status::InvalidValueSize), "{err}");
    assert!(err.to_string().contains("write 1 of the batch"), "{err}");
    let mut b = WriteBatch::new();
    b.put(key(2), b"fine".to_vec());
    b.delete(Vec::new());
    let err = ns.write(b).unwrap_err();
    assert_eq!(err.status(), Some(Status::InvalidKeySize), "{err}");
    assert_eq!(ns.get(key(0)).unwrap(), None);
    assert_eq!(ns.get(key(2)).unwrap(), None);
    // More writes than a batch may carry: refused by the client before sending.
    let mut b = WriteBatch::new();
    for i in 0..=MAX_BATCH_WRITES {
        b.delete(key(i));
    }
    assert!(ns.write(b).is_err());
    // The connection goes on.
    ns.put(key(3), b"after".to_vec()).unwrap();
}

#[test]
fn a_full_namespace_refuses_the_batch_and_a_stranger_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin = common::admin(&dev);
    let settings = NamespaceSettings {
        capacity: Some(8_000),
        ..NamespaceSettings::default()
    };
    let (full, secret) = admin.create_namespace_with("full", &settings).unwrap();
    let c = BlockingClient::connect(&dev.local_addr().to_string()).unwrap();
    c.open_namespace(full, &secret).unwrap();
    let ns = c.namespace(full);
    let mut b = WriteBatch::new();
    for i in 0..100 {
        b.put(key(i), vec![b'v'; 200]);
    }
    let err = ns.write(b).unwrap_err();
    assert_eq!(err.status(), Some(Status::CapacityExceeded), "{err}");
    assert_eq!(ns.get(key(0)).unwrap(), None);
    assert_eq!(ns.get(key(99)).unwrap(), None);
    // Another tenant's connection may not write into it.
    let (other, _, _) = common::tenant(&dev, "other");
    let mut b = WriteBatch::new();
    b.put(key(0), b"intruder".to_vec());
    let err = other.namespace(full).write(b).unwrap_err();
    assert_eq!(err.status(), Some(Status::AccessDenied), "{err}");
    assert_eq!(ns.get(key(0)).unwrap(), None);
}
