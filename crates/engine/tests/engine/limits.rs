//! Bad input and a full disk: clear errors, nothing half written, the store stays readable.

use crate::common;

use cerberus_engine::storage::{FaultStorage, MemStorage};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Error, Options, WriteBatch};
use std::sync::Arc;

fn options() -> Options {
    let mut o = common::small_options();
    o.max_key_size = 100;
    o.max_value_size = 1000;
    o
}

#[test]
fn oversized_keys_and_values_are_refused_whole() {
    let db = Db::builder(options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let long_key = vec![b'k'; 101];
    assert!(matches!(
        db.default_namespace().put(&long_key, b"v"),
        Err(Error::KeyTooLarge {
            len: 101,
            limit: 100
        })
    ));
    assert!(matches!(
        db.default_namespace().put(b"k", &vec![0; 1001]),
        Err(Error::ValueTooLarge {
            len: 1001,
            limit: 1000
        })
    ));
    let mut batch = WriteBatch::new();
    batch.put(b"a".to_vec(), b"1".to_vec());
    batch.put(b"b".to_vec(), vec![0; 1001]);
    assert!(matches!(
        db.default_namespace().write(batch),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(
        db.default_namespace().get(b"a").unwrap(),
        None,
        "half of a refused batch was written"
    );
    assert_eq!(db.stats().puts, 0);
    // Limits are inclusive.
    db.default_namespace()
        .put(&[b'k'; 100], &[1; 1000])
        .unwrap();
    assert_eq!(
        db.default_namespace()
            .get(&[b'k'; 100])
            .unwrap()
            .unwrap()
            .len(),
        1000
    );
}

#[test]
fn full_disk_fails_the_write_and_keeps_the_store_readable() {
    let fs = FaultStorage::new();
    let db = Db::builder(options())
        .open_storage(Arc::new(fs.clone()))
        .unwrap();
    fs.set_space_limit(Some(fs.total_bytes() + 300_000));
    let mut acked = Vec::new();
    let err = loop {
        let k = format!("key{:06}", acked.len()).into_bytes();
        match db.default_namespace().put(&k, &[7u8; 500]) {
            Ok(()) => acked.push(k),
            Err(e) => break e,
        }
        assert!(acked.len() < 10_000, "the space limit never hit");
    };
    assert!(
        matches!(err, Error::NoSpace { .. } | Error::Background(_)),
        "unexpected error {err}"
    );
    assert!(err.to_string().contains("space"), "unclear error: {err}");
    for k in &acked {
        assert_eq!(
            db.default_namespace().get(k).unwrap().as_deref(),
            Some(&[7u8; 500][..])
        );
    }
    db.close().unwrap_or(());
    drop(db);
    fs.set_space_limit(None);
    let db = Db::builder(options()).open_storage(Arc::new(fs)).unwrap();
    for k in &acked {
        assert_eq!(
            db.default_namespace().get(k).unwrap().as_deref(),
            Some(&[7u8; 500][..])
        );
    }
    db.default_namespace()
        .put(b"after", b"space came back")
        .unwrap();
}

#[test]
fn a_directory_opens_once_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    match Db::open(dir.path(), options()) {
        Err(e) => assert!(e.to_string().contains("in use"), "{e}"),
        Ok(_) => panic!("a second instance opened the same directory"),
    }
    db.close().unwrap();
    drop(db);
    Db::open(dir.path(), options()).unwrap();
}
