//! Issue 61, attack 6: a snapshot or an iterator lives at most `snapshot_max_age` from its
//! opening, however often it is used; past it, its pin is released (value-log GC collects what
//! it held) and reads through it fail with `SnapshotExpired`.

use crate::common;

use cerberus_engine::storage::{MemStorage, Storage};
use cerberus_engine::{Db, ErrorKind, ReadOptions, Readable};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// A database in memory with namespace `t` holding 300 keys of 500 B values.
fn loaded(opts: cerberus_engine::Options) -> (Db, cerberus_engine::Namespace) {
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for k in 0..300 {
        ns.put(&key(k), &common::value_for(k, 1, 500)).unwrap();
    }
    (db, ns)
}

#[test]
fn an_old_snapshot_and_iterator_are_released_and_fail_clearly() {
    let mut opts = common::small_options();
    opts.vlog_gc_dead_ratio = 0.0;
    opts.snapshot_max_age = Some(Duration::from_millis(50));
    let (db, ns) = loaded(opts);
    let snap = ns.snapshot();
    let mut it = ns.iter(ReadOptions::default()).unwrap();
    assert!(it.next().unwrap().is_ok());
    assert_eq!(db.stats().snapshots, 2);
    for k in 0..300 {
        ns.put(&key(k), &common::value_for(k, 2, 500)).unwrap();
    }
    db.compact_all().unwrap();
    // Used now and then, as the attack's iterator was: its age still counts from its opening.
    let mut touched = 0;
    let err = loop {
        std::thread::sleep(Duration::from_millis(20));
        match it.next() {
            Some(Ok(_)) => touched += 1,
            Some(Err(e)) => break e,
            None => panic!("the iterator ended after {touched} touches"),
        }
        assert!(touched < 250, "never expired");
    };
    assert_eq!(err.kind(), ErrorKind::SnapshotExpired, "{err}");
    // Every later use says so too (it used to end the iteration as if the namespace had).
    let err = it.next().expect("an expired iterator answers").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SnapshotExpired, "{err}");
    let err = snap.get(&key(1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SnapshotExpired, "{err}");
    assert!(it.seek(b"").unwrap_err().kind() == ErrorKind::SnapshotExpired);
    let err = it.next().expect("an expired iterator answers").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SnapshotExpired, "{err}");
    let mut batch = Vec::new();
    let err = it.next_batch(8, &mut batch).unwrap_err();
    assert!(
        err.kind() == ErrorKind::SnapshotExpired && batch.is_empty(),
        "{err}"
    );
    // Released although both handles live: GC collects the old versions' segments.
    assert_eq!(db.stats().snapshots, 0);
    assert_eq!(ns.stats().unwrap().snapshots, 0);
    let freed = db.gc_value_log().unwrap();
    assert!(freed.segments_deleted > 0, "{freed:?}");
    for k in 0..300 {
        assert_eq!(
            ns.get(&key(k)).unwrap(),
            Some(common::value_for(k, 2, 500).into())
        );
    }
    // A new snapshot reads; so does the namespace, whose reads take short-lived ones.
    assert!(ns.snapshot().get(&key(1)).unwrap().is_some());
    // An iterator's age counts from its opening: on a loaded machine 300 records may take past
    // the 50 ms, and an expired iterator answers `SnapshotExpired` at every call (`count()`
    // would never end), so a walk that expires is made again.
    let walked = (0..20).find_map(|_| {
        let it = ns.iter(ReadOptions::default()).unwrap();
        it.collect::<Result<Vec<_>, _>>().ok().map(|all| all.len())
    });
    assert_eq!(walked, Some(300));
    drop((snap, it));
    assert_eq!(db.stats().snapshots, 0);
}

/// With no maximum age, a snapshot lives as long as its handle.
#[test]
fn without_a_maximum_age_a_snapshot_lives_on() {
    let mut opts = common::small_options();
    opts.snapshot_max_age = None;
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    ns.put(b"k", b"v").unwrap();
    let snap = ns.snapshot();
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(snap.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.stats().snapshots, 1);
}

/// A namespace's stats show the garbage its snapshots hold back from GC (`pinned_bytes`),
/// back to 0 once they go.
#[test]
fn stats_show_the_garbage_a_snapshot_pins() {
    let mut opts = common::small_options();
    opts.vlog_gc_dead_ratio = 0.0;
    opts.snapshot_max_age = None;
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    let other = db.create_namespace("o").unwrap();
    for k in 0..300 {
        ns.put(&key(k), &common::value_for(k, 1, 500)).unwrap();
    }
    let snap = ns.snapshot();
    for k in 0..300 {
        ns.put(&key(k), &common::value_for(k, 2, 500)).unwrap();
    }
    db.compact_all().unwrap();
    assert_eq!(db.gc_value_log().unwrap().segments_deleted, 0);
    let space = ns.stats().unwrap().space;
    assert!(space.garbage_bytes > 0, "{space:?}");
    assert!(space.pinned_bytes > 0, "{space:?}");
    assert!(space.pinned_bytes <= space.garbage_bytes, "{space:?}");
    assert_eq!(other.stats().unwrap().space.pinned_bytes, 0);
    drop(snap);
    assert_eq!(ns.stats().unwrap().space.pinned_bytes, 0);
    assert!(db.gc_value_log().unwrap().segments_deleted > 0);
}

fn tables(storage: &MemStorage) -> BTreeSet<String> {
    let names = storage.list().unwrap().into_iter();
    names.filter(|n| n.ends_with(".sst")).collect()
}

/// An iterator past its age gives back what it read through at once, not when its handle
/// goes: the version it was opened on (tables compactions replaced stay on storage while a
/// reader holds them), its memtables and its read-ahead. The background sweep takes them
/// with no call on the iterator; every later call fails with `SnapshotExpired`.
#[test]
fn an_expired_iterator_gives_back_its_tables_and_memtables_at_once() {
    let mut opts = common::small_options();
    opts.snapshot_max_age = Some(Duration::from_millis(200));
    let storage = Arc::new(MemStorage::new());
    let db = Db::builder(opts).open_storage(storage.clone()).unwrap();
    let ns = db.create_namespace("t").unwrap();
    for k in 0..300 {
        ns.put(&key(k), &common::value_for(k, 1, 500)).unwrap();
    }
    db.flush().unwrap();
    // Some in the memtable too: the iterator reads it as well.
    for k in 300..320 {
        ns.put(&key(k), &common::value_for(k, 1, 500)).unwrap();
    }
    let mut it = ns
        .iter(ReadOptions {
            prefetch_degree: 4,
            ..ReadOptions::default()
        })
        .unwrap();
    for _ in 0..10 {
        assert!(it.next().unwrap().is_ok());
    }
    let held = it.memory();
    assert!(held.buffers > 0, "{held:?}");
    for k in 0..320 {
        ns.put(&key(k), &common::value_for(k, 2, 500)).unwrap();
    }
    db.flush().unwrap();
    db.compact_all().unwrap();
    // No call on the iterator: the background, woken at the expiry, releases it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while it.memory().buffers > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = it.memory();
    assert_eq!(gone.buffers, 0, "{gone:?}");
    assert!(gone.state < held.state, "{gone:?} {held:?}");
    let after = tables(&storage);
    for _ in 0..3 {
        let err = it.next().expect("an expired iterator answers").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::SnapshotExpired, "{err}");
    }
    let err = it.seek(&key(0)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SnapshotExpired, "{err}");
    // Its handle held nothing more: dropping it deletes no table (it used to hold every
    // table the compaction replaced).
    drop(it);
    assert_eq!(tables(&storage), after);
    assert_eq!(db.stats().snapshots, 0);
    for k in [0, 150, 319] {
        let v = ns.get(&key(k)).unwrap();
        assert_eq!(v, Some(common::value_for(k, 2, 500).into()));
    }
}

#[test]
fn pins_taken_after_the_first_wake_nobody_and_are_released_at_their_age() {
    let mut opts = common::small_options();
    opts.snapshot_max_age = Some(Duration::from_millis(150));
    // No look of its own every second: expiries alone wake the background.
    opts.idle_settle_ms = 0;
    let (db, ns) = loaded(opts);
    db.flush().unwrap();
    // The first wakes the background, which plans its look at the first's expiry; the
    // later ones (a scan's cursors) expire after it and wake nobody.
    let first = ns.snapshot();
    std::thread::sleep(Duration::from_millis(50));
    let opts = ReadOptions {
        prefetch_degree: 4,
        ..ReadOptions::default()
    };
    let mut later = Vec::new();
    for _ in 0..20 {
        let mut it = ns.iter(opts.clone()).unwrap();
        assert!(it.next().unwrap().is_ok());
        assert!(it.memory().buffers > 0);
        later.push(it);
    }
    drop(first);
    // No call on them, nor on the database (its stats reap too): the background, at the
    // first's expiry, plans for theirs and releases them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while later.iter().any(|it| it.memory().buffers > 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for it in &mut later {
        assert_eq!(it.memory().buffers, 0);
        let err = it.next().expect("an expired iterator answers").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::SnapshotExpired, "{err}");
    }
    assert_eq!(db.stats().snapshots, 0);
}
