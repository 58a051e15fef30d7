//! Read-only namespaces (`Namespace::set_read_only`, issue 61 point 7): every kind of write is
//! refused with `NamespaceReadOnly` and writes nothing, reads go on, the flag survives a
//! restart, clearing it makes the namespace writable, and a write racing the flag is either
//! readable once the call returns or refused.

use bytes::Bytes;
use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{
    Db, ErrorKind, Filter, FindOptions, IndexKind, Namespace, Options, ReadOptions, Readable,
    WriteBatch,
};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn open(storage: &StorageRef) -> Db {
    Db::builder(Options::default())
        .open_storage(storage.clone())
        .expect("open")
}

fn keys(ns: &Namespace) -> BTreeSet<Bytes> {
    ns.iter(ReadOptions::default())
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect()
}

fn refused<T: std::fmt::Debug>(what: &str, r: cerberus_engine::Result<T>) {
    match r {
        Err(e) => assert_eq!(e.kind(), ErrorKind::NamespaceReadOnly, "{what}: {e}"),
        Ok(v) => panic!("{what} was accepted by a read-only namespace: {v:?}"),
    }
}

#[test]
fn every_write_is_refused_and_reads_go_on() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = open(&storage);
    let ns = db.create_namespace("moving").unwrap();
    let other = db.create_namespace("other").unwrap();
    for i in 0..20 {
        let v = format!(r#"{{"city": "c{}", "n": {i}}}"#, i % 3);
        ns.put(format!("k{i:02}").as_bytes(), v.as_bytes()).unwrap();
    }
    ns.create_index("city", IndexKind::Vas).unwrap();
    let before = keys(&ns);
    assert!(!ns.is_read_only());
    ns.set_read_only(true).unwrap();
    // Idempotent.
    ns.set_read_only(true).unwrap();
    assert!(ns.is_read_only());

    refused("put", ns.put(b"k00", b"new"));
    refused("put of a new key", ns.put(b"zz", b"new"));
    refused("delete", ns.delete(b"k01"));
    refused("delete of an absent key", ns.delete(b"absent"));
    let mut batch = WriteBatch::new();
    batch
        .put(b"k02".to_vec(), b"x".to_vec())
        .delete(b"k03".to_vec());
    refused("write batch", ns.write(batch));
    refused("empty write batch", ns.write(WriteBatch::new()));
    refused("index create", ns.create_index("n", IndexKind::Classic));
    refused("index drop", ns.drop_index("city"));

    // Nothing changed, and every read still works.
    assert_eq!(keys(&ns), before);
    assert_eq!(
        ns.get(b"k00").unwrap().as_deref(),
        Some(&br#"{"city": "c0", "n": 0}"#[..])
    );
    assert!(ns.contains(b"k03").unwrap());
    let filter = Filter::parse_str(r#"{"city": "c1"}"#).unwrap();
    let found = ns.find(&filter, &FindOptions::default()).unwrap();
    assert_eq!(found.value.len(), 7);
    assert_eq!(ns.list_indexes().unwrap().len(), 1);
    let stats = ns.stats().unwrap();
    assert!(stats.space.read_only);
    let doc = serde_json::to_value(&stats).unwrap();
    assert_eq!(doc["read_only"], true, "{doc}");
    // Background work on its data goes on, and other namespaces are writable.
    db.flush().unwrap();
    db.compact_all().unwrap();
    assert_eq!(keys(&ns), before);
    other.put(b"k", b"v").unwrap();
    assert!(!other.stats().unwrap().space.read_only);

    ns.set_read_only(false).unwrap();
    ns.set_read_only(false).unwrap();
    assert!(!ns.is_read_only());
    ns.put(b"zz", b"new").unwrap();
    ns.delete(b"k01").unwrap();
    ns.create_index("n", IndexKind::Classic).unwrap();
    assert_eq!(ns.get(b"zz").unwrap().as_deref(), Some(&b"new"[..]));
    assert!(!ns.stats().unwrap().space.read_only);
}

#[test]
fn a_restart_keeps_the_flag() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = open(&storage);
    let ns = db.create_namespace("moving").unwrap();
    let id = ns.id();
    ns.put(b"a", b"1").unwrap();
    ns.set_read_only(true).unwrap();
    db.close().unwrap();

    let db = open(&storage);
    let ns = db.namespace(id).unwrap();
    assert!(ns.is_read_only());
    assert!(ns.stats().unwrap().space.read_only);
    refused("put after a restart", ns.put(b"b", b"2"));
    assert_eq!(ns.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    ns.set_read_only(false).unwrap();
    db.close().unwrap();

    let db = open(&storage);
    let ns = db.namespace(id).unwrap();
    assert!(!ns.is_read_only());
    ns.put(b"b", b"2").unwrap();
    // A destroyed namespace's flag goes with it: a namespace made after is writable.
    ns.set_read_only(true).unwrap();
    db.destroy_namespace(id).unwrap();
    refused_kind(ns.set_read_only(false), ErrorKind::UnknownNamespace);
    let fresh = db.create_namespace("moving").unwrap();
    fresh.put(b"c", b"3").unwrap();
    db.close().unwrap();
    let db = open(&storage);
    assert!(!db.namespace(fresh.id()).unwrap().is_read_only());
}

fn refused_kind(r: cerberus_engine::Result<()>, kind: ErrorKind) {
    assert_eq!(r.map_err(|e| e.kind()), Err(kind));
}

/// Writers keep putting keys of their own until refused; the flag is set meanwhile. Every
/// write acknowledged, before or after `set_read_only` returned, is in a scan taken as soon
/// as it returned, and nothing else is: a write is either in before the flag or refused.
#[test]
fn a_racing_write_is_readable_or_refused() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = open(&storage);
    let ns = db.create_namespace("moving").unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (ns, written) = (ns.clone(), written.clone());
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for i in 0.. {
                    let key = Bytes::from(format!("t{t}-{i:06}"));
                    let r = match i % 3 {
                        0 => ns.put(&key, b"v"),
                        _ => {
                            let mut b = WriteBatch::new();
                            b.put(key.to_vec(), b"v".to_vec());
                            ns.write(b)
                        }
                    };
                    match r {
                        Ok(()) => acked.push(key),
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::NamespaceReadOnly, "{e}");
                            return acked;
                        }
                    }
                    written.fetch_add(1, Ordering::Relaxed);
                }
                unreachable!()
            })
        })
        .collect();
    while written.load(Ordering::Relaxed) < 2_000 {
        std::thread::yield_now();
    }
    ns.set_read_only(true).unwrap();
    let seen = keys(&ns);
    let mut acked = BTreeSet::new();
    for w in writers {
        acked.extend(w.join().unwrap());
    }
    let late: Vec<_> = acked.difference(&seen).take(5).collect();
    assert!(
        late.is_empty(),
        "acknowledged after the flag held: {late:?}"
    );
    let unacked: Vec<_> = seen.difference(&acked).take(5).collect();
    assert!(
        unacked.is_empty(),
        "in the namespace, never acknowledged: {unacked:?}"
    );
    assert_eq!(keys(&ns), seen);
}
