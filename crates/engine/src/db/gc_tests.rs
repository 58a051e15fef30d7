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

    const MIB: u64 = 1 << 20;

    fn gate(ratio: f64) -> GcGate {
        GcGate {
            ratio,
            short: false,
            free: None,
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

    /// A segment nearly all dead (a destroyed tenant's, a bulk delete's) costs almost nothing
    /// to collect: it goes at once.
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

    /// Short of space, every segment past the ratio may go: when a job failed for want of
    /// space, or when the storage's free space is below the log's garbage.
    #[test]
    fn short_of_space_the_gate_opens() {
        let log = [
            (1, 100 * MIB, 60 * MIB),
            (2, 100 * MIB, 0),
            (3, 100 * MIB, 0),
        ];
        let failed = GcGate {
            short: true,
            ..gate(0.5)
        };
        assert_eq!(failed.pick(&log), Some(1));
        let full = GcGate {
            free: Some(59 * MIB),
            ..gate(0.5)
        };
        assert_eq!(full.pick(&log), Some(1));
        let roomy = GcGate {
            free: Some(60 * MIB),
            ..gate(0.5)
        };
        assert_eq!(roomy.pick(&log), None);
        // Never a segment under the ratio, nor one without garbage.
        let below = [(1, 100 * MIB, 40 * MIB), (2, 100 * MIB, 0)];
        assert_eq!(failed.pick(&below), None);
        assert_eq!(
            GcGate {
                ratio: 0.0,
                ..failed
            }
            .pick(&[(1, 100 * MIB, 0)]),
            None
        );
    }
}
