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
    db.inner
        .value_log_gc()
        .gc_segment(999_999, 0.0, &mut stats)
        .unwrap();
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
    assert_eq!(
        db.inner.value_log_gc().seen_by_snapshot(&puts).unwrap(),
        vec![id]
    );
    drop(snapshot);
    assert!(db
        .inner
        .value_log_gc()
        .seen_by_snapshot(&puts)
        .unwrap()
        .is_empty());
    db.close().unwrap();
}

mod gate {
    use super::super::{GcGate, NEARLY_DEAD};
    use crate::background::GcUrgency;

    const MIB: u64 = 1 << 20;

    fn gate(ratio: f64) -> GcGate {
        GcGate {
            ratio,
            urgency: GcUrgency::Wait,
            free: None,
            room: None,
        }
    }

    /// A segment past the ratio waits while the log as a whole holds less garbage than the
    /// ratio: it gets deader, and cheaper to collect, the longer it waits.
    #[test]
    fn a_segment_past_the_ratio_waits_for_the_log() {
        // 60 % of the first dead, the others 10 %: 20 % of the log.
        let log = [
            (1, 100 * MIB, 60 * MIB),
            (2, 100 * MIB, 10 * MIB),
            (3, 100 * MIB, 10 * MIB),
        ];
        assert_eq!(gate(0.5).pick(&log), None);
        // At a ratio of 0.2 the log holds enough: the segment past it goes.
        assert_eq!(gate(0.2).pick(&log), Some(1));
    }

    /// Once the log holds the ratio's garbage, the deadest segment goes first, whatever its
    /// age; of two as dead, the older.
    #[test]
    fn the_deadest_segment_goes_first() {
        let log = [
            (1, 100 * MIB, 55 * MIB),
            (2, 100 * MIB, 85 * MIB),
            (3, 100 * MIB, 20 * MIB),
        ];
        assert_eq!(gate(0.5).pick(&log), Some(2));
        let even = [(4, 100 * MIB, 70 * MIB), (5, 100 * MIB, 70 * MIB)];
        assert_eq!(gate(0.5).pick(&even), Some(4));
        // Garbage counts by bytes: a short segment's share is its own.
        let short = [(6, 10 * MIB, 9 * MIB), (7, 100 * MIB, 60 * MIB)];
        assert_eq!(gate(0.5).pick(&short), Some(6));
    }

    /// A segment nearly all dead (a bulk delete's) costs almost nothing to collect: it goes
    /// at once.
    #[test]
    fn a_nearly_dead_segment_goes_at_once() {
        let dead = (NEARLY_DEAD * 100.0) as u64 * MIB;
        let log = [
            (1, 100 * MIB, 0),
            (2, 100 * MIB, dead),
            (3, 100 * MIB, 0),
            (4, 100 * MIB, 0),
            (5, 100 * MIB, 0),
        ];
        assert_eq!(gate(0.5).pick(&log), Some(2));
        let almost = [
            (1, 100 * MIB, dead - MIB),
            (2, 100 * MIB, 0),
            (3, 100 * MIB, 0),
        ];
        assert_eq!(gate(0.5).pick(&almost), None);
    }

    /// A destroyed namespace's garbage, or free space above the reserve below the log's
    /// garbage: segments past the ratio go without waiting, never one under it.
    #[test]
    fn reclaiming_takes_segments_past_the_ratio_at_once() {
        let log = [
            (1, 100 * MIB, 60 * MIB),
            (2, 100 * MIB, 40 * MIB),
            (3, 100 * MIB, 0),
        ];
        let reclaim = GcGate {
            urgency: GcUrgency::Reclaim,
            ..gate(0.5)
        };
        assert_eq!(reclaim.pick(&log), Some(1));
        assert_eq!(reclaim.pick(&log[1..]), None);
        let low = |free| GcGate {
            free: Some(free),
            ..gate(0.5)
        };
        assert_eq!(low(99 * MIB).pick(&log), Some(1));
        assert_eq!(low(100 * MIB).pick(&log), None);
        assert_eq!(low(0).pick(&log[1..]), None);
    }

    /// Writes refused for want of space: the deadest segment with any garbage goes, under
    /// the ratio too, if its live bytes fit in the free space; never one without garbage.
    #[test]
    fn refused_writes_take_the_deadest_segment_that_fits() {
        let space = |room| GcGate {
            urgency: GcUrgency::Space,
            room,
            ..gate(0.5)
        };
        let log = [
            (1, 100 * MIB, 20 * MIB),
            (2, 100 * MIB, 40 * MIB),
            (3, 100 * MIB, 0),
        ];
        assert_eq!(space(None).pick(&log), Some(2));
        // 60 MiB live in the deadest: it does not fit in 59 MiB; the next one's 80 do not.
        assert_eq!(space(Some(60 * MIB)).pick(&log), Some(2));
        assert_eq!(space(Some(59 * MIB)).pick(&log), None);
        assert_eq!(space(Some(80 * MIB)).pick(&log[..1]), Some(1));
        assert_eq!(space(None).pick(&[(1, 100 * MIB, 0)]), None);
    }
}
