//! Issue 61, attack 6: a namespace's capacity holds through its indexes (entries written at
//! every put and by a backfill count against it), a namespace has a bounded number of
//! indexes, and index creation does not flush the memtable every tenant shares at will.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{Db, ErrorKind, IndexKind, Namespace, NamespaceOptions, Options};
use std::sync::Arc;

fn open(storage: &StorageRef, opts: &Options) -> Db {
    Db::builder(opts.clone())
        .open_storage(storage.clone())
        .expect("open")
}

fn capped(capacity: u64) -> NamespaceOptions {
    NamespaceOptions {
        capacity: Some(capacity),
        ..NamespaceOptions::default()
    }
}

fn doc(i: u32) -> Vec<u8> {
    format!(
        r#"{{"a": {i}, "b": "b{i:04}", "c": {i}.5, "d": "dddddddddd{i}", "pad": "{}"}}"#,
        "x".repeat(40)
    )
    .into_bytes()
}

/// Puts documents until the capacity refuses one; returns how many it took.
fn fill(ns: &Namespace) -> u32 {
    let mut i = 0u32;
    loop {
        match ns.put(format!("k{i:05}").as_bytes(), &doc(i)) {
            Ok(()) => i += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::CapacityExceeded, "{e}");
                return i;
            }
        }
        assert!(i < 10_000, "the capacity never refused");
    }
}

/// Live bytes after a flush (nothing pending).
fn used(db: &Db, ns: &Namespace) -> u64 {
    db.flush().unwrap();
    let s = ns.stats().unwrap().space;
    assert_eq!(s.pending_bytes, 0);
    s.used_bytes
}

/// The attack as filed: full namespace, then 4 index creates. Each backfill that would pass
/// the capacity is refused and leaves nothing (registry, entries, figure), after a reopen too.
#[test]
fn index_creates_on_a_full_namespace_never_pass_its_capacity() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let opts = common::small_options();
    let db = open(&storage, &opts);
    let ns = db.create_namespace_with("t", capped(20_000)).unwrap();
    let n = fill(&ns);
    assert!(n > 50, "{n} documents");
    let before = used(&db, &ns);
    assert!(before <= 20_000, "{before}");
    for attr in ["a", "b", "c", "d"] {
        let err = ns.create_index(attr, IndexKind::Classic).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CapacityExceeded, "{attr}: {err}");
        assert!(
            ns.list_indexes().unwrap().is_empty(),
            "{attr}: an index left"
        );
        assert_eq!(used(&db, &ns), before, "{attr}: usage moved");
    }
    let (kept, counted) = ns.check_usage().unwrap();
    assert_eq!(kept, counted);
    assert_eq!(kept.index, 0);
    let id = ns.id();
    drop(ns);
    db.close().unwrap();
    drop(db);
    let db = open(&storage, &opts);
    let ns = db.namespace(id).unwrap();
    assert!(ns.list_indexes().unwrap().is_empty());
    assert_eq!(used(&db, &ns), before);
    let (kept, counted) = ns.check_usage().unwrap();
    assert_eq!((kept, kept.index), (counted, 0));
}

/// A put whose record fits the room left exactly but whose index entries do not is refused;
/// the usage never passes the capacity.
#[test]
fn a_put_whose_index_entries_pass_the_capacity_is_refused() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = open(&storage, &common::small_options());
    let ns = db.create_namespace_with("t", capped(20_000)).unwrap();
    ns.create_index("a", IndexKind::Classic).unwrap();
    for i in 0..100 {
        ns.put(format!("k{i:05}").as_bytes(), &doc(i)).unwrap();
    }
    let room = 20_000 - used(&db, &ns);
    let key = b"last";
    let head = br#"{"a": 7, "pad": ""}"#.len() as u64 + key.len() as u64;
    assert!(room > head, "{room}");
    let value = format!(
        r#"{{"a": 7, "pad": "{}"}}"#,
        "x".repeat((room - head) as usize)
    );
    assert_eq!((key.len() + value.len()) as u64, room);
    let err = ns.put(key, value.as_bytes()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CapacityExceeded, "{err}");
    // Without its entry (no attribute "a") the same bytes fit.
    let value = value.replacen("\"a\"", "\"z\"", 1);
    ns.put(key, value.as_bytes()).unwrap();
    assert_eq!(used(&db, &ns), 20_000);
}

/// A namespace has at most `max_indexes_per_namespace` indexes; the create past it is
/// refused with its own error and leaves nothing.
#[test]
fn indexes_per_namespace_are_bounded() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let mut opts = common::small_options();
    opts.max_indexes_per_namespace = 3;
    let db = open(&storage, &opts);
    let ns = db.create_namespace("t").unwrap();
    ns.put(b"k", &doc(1)).unwrap();
    for attr in ["a", "b", "c"] {
        ns.create_index(attr, IndexKind::Classic).unwrap();
    }
    let err = ns.create_index("d", IndexKind::Classic).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyIndexes, "{err}");
    assert_eq!(ns.list_indexes().unwrap().len(), 3);
    // Another namespace has its own count; a drop makes room.
    let other = db.create_namespace("u").unwrap();
    other.create_index("d", IndexKind::Classic).unwrap();
    ns.drop_index("a").unwrap();
    ns.create_index("d", IndexKind::Classic).unwrap();
}

/// Index creates do not each flush the memtable every tenant shares: 20 drop/create cycles
/// made 20 flushes before; the backfills now ride one flush per second at most, and the
/// index answers (ready in memory) at once, and after a flush and a reopen.
#[test]
fn index_create_cycles_do_not_flush_the_shared_memtable_each_time() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let mut opts = common::small_options();
    opts.memtable_bytes = 4 << 20;
    let db = open(&storage, &opts);
    let ns = db.create_namespace("t").unwrap();
    let victim = db.create_namespace("v").unwrap();
    for i in 0..50 {
        ns.put(format!("k{i:05}").as_bytes(), &doc(i)).unwrap();
        victim.put(format!("k{i:05}").as_bytes(), b"x").unwrap();
    }
    let before = db.stats().flushes;
    for _ in 0..20 {
        ns.create_index("a", IndexKind::Classic).unwrap();
        ns.drop_index("a").unwrap();
    }
    ns.create_index("a", IndexKind::Classic).unwrap();
    let flushes = db.stats().flushes - before;
    assert!(flushes < 10, "{flushes} flushes for 21 index creates");
    assert!(ns.list_indexes().unwrap()[0].ready);
    let f = cerberus_engine::Filter::parse_str(r#"{"a": 7}"#).unwrap();
    let find = |ns: &Namespace| {
        use cerberus_engine::Readable;
        let found = ns.find(&f, &Default::default()).unwrap();
        let pks: Vec<Vec<u8>> = found.value.iter().map(|r| r.pk.to_vec()).collect();
        (pks, found.stats.plan)
    };
    assert_eq!(
        find(&ns),
        (vec![b"k00007".to_vec()], "classic index on a".to_string())
    );
    let id = ns.id();
    drop(ns);
    drop(victim);
    db.close().unwrap();
    drop(db);
    // Not flushed at close, or flushed: either way the reopened index answers.
    let db = open(&storage, &opts);
    let ns = db.namespace(id).unwrap();
    assert_eq!(
        find(&ns),
        (vec![b"k00007".to_vec()], "classic index on a".to_string())
    );
    db.flush().unwrap();
    assert!(ns.list_indexes().unwrap()[0].ready);
}
