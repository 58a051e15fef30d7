//! Issue 61, attack 6, over the native wire: a namespace's capacity holds through index
//! creates (each backfill that would pass it is refused, leaving no index), index
//! drop/create cycles do not flush the shared memtable each time, a namespace's indexes are
//! bounded (`IndexLimit`), and an iterator lives at most `snapshot_max_age_ms`
//! (`SnapshotExpired`), after which the device closes it however often it is touched (on
//! both wires: the NVMe/TCP vendor pair shares the dispatch).

mod common;

use cerberus_host::{BlockingClient, IndexKind, NamespaceSettings, ScanOptions};
use cerberus_proto::Status;
use std::time::Duration;

fn doc(i: u32) -> Vec<u8> {
    format!(
        r#"{{"a": {i}, "b": "b{i:04}", "c": {i}.5, "d": "dddddddddd{i}", "pad": "{}"}}"#,
        "x".repeat(40)
    )
    .into_bytes()
}

/// A tenant with capacity `capacity` (`None`: none), on its own connection.
fn tenant(
    dev: &cerberus_device::DeviceHandle,
    name: &str,
    capacity: Option<u64>,
) -> (BlockingClient, u32) {
    let settings = NamespaceSettings {
        capacity,
        ..NamespaceSettings::default()
    };
    let (ns, secret) = common::admin(dev)
        .create_namespace_with(name, &settings)
        .unwrap();
    let c = common::connect(dev);
    c.open_namespace(ns, &secret).unwrap();
    (c, ns)
}

#[test]
fn index_creates_never_take_a_namespace_past_its_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.engine.max_indexes_per_namespace = 3);
    let (c, nsid) = tenant(&dev, "full", Some(20_000));
    let ns = c.namespace(nsid);
    let mut stored = 0u32;
    let err = loop {
        match ns.put(format!("k{stored:05}").into_bytes(), doc(stored)) {
            Ok(()) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 10_000, "the capacity never refused");
    };
    assert_eq!(err.status(), Some(Status::CapacityExceeded), "{err}");
    let used = |what: &str| {
        let s = ns.stats().unwrap();
        let (used, pending) = (
            s["used_bytes"].as_u64().unwrap(),
            s["pending_bytes"].as_u64().unwrap(),
        );
        assert!(
            used + pending <= 20_000,
            "{what}: {used} used + {pending} pending: {s}"
        );
        assert!(s["pinned_bytes"].is_u64(), "{s}");
        used + pending
    };
    let before = used("full");
    for attr in ["a", "b", "c", "d"] {
        let err = ns.create_index(attr, IndexKind::Classic).unwrap_err();
        assert_eq!(
            err.status(),
            Some(Status::CapacityExceeded),
            "{attr}: {err}"
        );
        assert!(used(attr) <= before, "{attr}");
        assert_eq!(ns.list_indexes().unwrap().as_array().map(Vec::len), Some(0));
    }

    // Index churn in a namespace with room: bounded flushes of the shared memtable.
    let (c2, other) = tenant(&dev, "churn", None);
    let churn = c2.namespace(other);
    for i in 0..50 {
        churn.put(format!("k{i:05}").into_bytes(), doc(i)).unwrap();
    }
    let flushes = || common::metric(&dev, "cerberus_flushes_total");
    let at = flushes();
    for _ in 0..20 {
        churn.create_index("a", IndexKind::Classic).unwrap();
        churn.drop_index("a").unwrap();
    }
    let made = flushes() - at;
    assert!(made < 10, "{made} flushes for 20 index creates");

    // The namespace's index count is bounded, with a status of its own.
    for attr in ["a", "b", "c"] {
        churn.create_index(attr, IndexKind::Classic).unwrap();
    }
    let err = churn.create_index("d", IndexKind::Classic).unwrap_err();
    assert_eq!(err.status(), Some(Status::IndexLimit), "{err}");
}

#[test]
fn an_iterator_past_its_maximum_age_answers_snapshot_expired() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.engine.snapshot_max_age_ms = 100);
    let (c, nsid) = tenant(&dev, "t", None);
    let ns = c.namespace(nsid);
    for i in 0..20 {
        ns.put(format!("k{i:05}").into_bytes(), doc(i)).unwrap();
    }
    let it = ns.iter_open(&ScanOptions::default()).unwrap();
    let (first, _) = ns.iter_next(it, 1, 1 << 20).unwrap();
    assert_eq!(first.len(), 1);
    std::thread::sleep(Duration::from_millis(300));
    let err = ns.iter_next(it, 1, 1 << 20).unwrap_err();
    assert_eq!(err.status(), Some(Status::SnapshotExpired), "{err}");
    let stats = c.namespace(nsid).stats().unwrap();
    assert_eq!(stats["snapshots"], 0, "{stats}");
}

both_wires!(an_expired_iterator_is_closed_however_often_it_is_touched);

/// Touched on and on past its age, an iterator answers `SnapshotExpired` once and then is
/// unknown (`IteratorNotFound`): never a batch. It used to answer an empty, finished batch
/// after the first refusal, and its slot stayed (touched, it was never idle): the device's
/// gauge of open iterators goes back to 0 now.
fn an_expired_iterator_is_closed_however_often_it_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.engine.snapshot_max_age_ms = 200);
    let (c, nsid) = tenant(&dev, "t", None);
    let ns = c.namespace(nsid);
    for i in 0..20 {
        ns.put(format!("k{i:05}").into_bytes(), doc(i)).unwrap();
    }
    let open = |n| {
        let ids: Vec<u32> = (0..n)
            .map(|_| ns.iter_open(&ScanOptions::default()).unwrap())
            .collect();
        for &it in &ids {
            assert_eq!(ns.iter_next(it, 1, 1 << 20).unwrap().0.len(), 1);
        }
        ids
    };
    let ids = open(3);
    assert_eq!(common::metric(&dev, "cerberus_iterators_open"), 3);
    std::thread::sleep(Duration::from_millis(300));
    for &it in &ids {
        for touch in 0..3 {
            let err = ns.iter_next(it, 10, 1 << 20).unwrap_err();
            let want = match touch {
                0 => Status::SnapshotExpired,
                _ => Status::IteratorNotFound,
            };
            assert_eq!(err.status(), Some(want), "touch {touch}: {err}");
        }
    }
    assert_eq!(common::metric(&dev, "cerberus_iterators_open"), 0);
    let stats = ns.stats().unwrap();
    assert_eq!(stats["snapshots"], 0, "{stats}");
    // The connection's slots are free again; new iterators read.
    let fresh = open(3);
    assert_eq!(common::metric(&dev, "cerberus_iterators_open"), 3);
    for it in fresh {
        ns.iter_close(it).unwrap();
    }
    assert_eq!(common::metric(&dev, "cerberus_iterators_open"), 0);
}
