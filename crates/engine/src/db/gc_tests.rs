use super::super::database::Db;
use super::GcStats;
use crate::options::{Layout, Options};
use crate::storage::{MemStorage, StorageRef};
use bytes::Bytes;
use std::sync::Arc;

/// A segment deleted between the listing and its collection (another collection took
/// it) is skipped, not an error that stops the database.
#[test]
fn a_segment_gone_since_the_listing_is_skipped() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let db = Db::builder(Options::default())
        .open_storage(storage)
        .unwrap();
    let mut stats = GcStats::default();
    db.inner.gc_segment(999_999, 0.0, &mut stats).unwrap();
    assert_eq!(stats, GcStats::default());
    db.close().unwrap();
}

/// A destroy between GC's lookup and its look at the destroyed set: the namespace's tables
/// are out of the version, it is not in the destroyed set yet, and an iterator opened before
/// still reads its records. The check must count that iterator's snapshot (it took the
/// miss for a newer version and let the segment go, found by the stress test).
#[test]
fn a_destroy_racing_the_snapshot_check_keeps_the_iterators_segment() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let opts = Options {
        layout: Layout::PerNamespace,
        inline_value_threshold: 0,
        ..Options::default()
    };
    let db = Db::builder(opts).open_storage(storage).unwrap();
    let ns = db.create_namespace("t").unwrap();
    ns.put(b"k", &[7u8; 300]).unwrap();
    db.compact_all().unwrap();
    let id = ns.id();
    let hit = db
        .inner
        .reader()
        .lookup(id, b"k", None, &db.inner.counters)
        .unwrap();
    let addr = hit
        .and_then(|h| h.addr)
        .expect("the record has a value-log address");
    let snapshot = ns.snapshot();
    // The window: the tables are gone, the destroyed set does not say so yet.
    db.inner.namespace_admin().remove_trees(&[id]).unwrap();
    let puts = [(id, Bytes::from_static(b"k"), addr)];
    assert_eq!(db.inner.seen_by_snapshot(&puts).unwrap(), vec![id]);
    drop(snapshot);
    assert!(db.inner.seen_by_snapshot(&puts).unwrap().is_empty());
    db.close().unwrap();
}
