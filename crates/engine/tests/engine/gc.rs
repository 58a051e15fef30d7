//! Value-log garbage collection and namespace destroy: space comes back, live data stays.

use crate::common;

use cerberus_engine::Readable;
use cerberus_engine::{Db, Error, Options};
use std::path::Path;

fn options() -> Options {
    let mut o = common::small_options();
    o.memtable_bytes = 256 << 10;
    o.vlog_segment_bytes = 512 << 10;
    o.inline_value_threshold = 0;
    o
}

/// Bytes of value-log segments and tables in `dir` (files that background work deletes
/// while this looks count as gone).
fn data_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.ends_with(".vlog") || n.ends_with(".sst")
        })
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

const N: u32 = 3_000;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

fn value(ns: u32, k: u32) -> Vec<u8> {
    common::value_for(k, u64::from(ns), 1000)
}

#[test]
fn destroy_then_gc_returns_the_space() {
    // What the survivor needs alone.
    let alone = tempfile::tempdir().unwrap();
    {
        let db = Db::open(alone.path(), options()).unwrap();
        let a = db.create_namespace("a").unwrap().id();
        for k in 0..N {
            db.namespace(a).unwrap().put(&key(k), &value(a, k)).unwrap();
        }
        db.compact_all().unwrap();
        db.gc_value_log().unwrap();
        db.close().unwrap();
    }
    let needed = data_bytes(alone.path());

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let a = db.create_namespace("a").unwrap().id();
    let b = db.create_namespace("b").unwrap().id();
    for k in 0..N {
        db.namespace(a).unwrap().put(&key(k), &value(a, k)).unwrap();
        db.namespace(b).unwrap().put(&key(k), &value(b, k)).unwrap();
    }
    db.compact_all().unwrap();
    let before = data_bytes(dir.path());
    db.destroy_namespace(b).unwrap();
    db.compact_all().unwrap();
    let stats = db.gc_value_log().unwrap();
    let after = data_bytes(dir.path());
    assert!(stats.segments_deleted > 0, "{stats:?}");
    assert!(
        after as f64 <= 1.3 * needed as f64,
        "after destroy and GC {after} bytes; the survivor alone needs {needed} (before: {before})"
    );
    for k in 0..N {
        assert_eq!(
            db.namespace(a).unwrap().get(&key(k)).unwrap().as_deref(),
            Some(&value(a, k)[..])
        );
    }
    assert!(matches!(
        db.namespace(b).and_then(|n| n.get(&key(1))),
        Err(Error::UnknownNamespace(_))
    ));
    db.close().unwrap();
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    for k in 0..N {
        assert_eq!(
            db.namespace(a).unwrap().get(&key(k)).unwrap().as_deref(),
            Some(&value(a, k)[..])
        );
    }
    assert!(matches!(
        db.namespace(b).and_then(|n| n.put(&key(1), b"x")),
        Err(Error::UnknownNamespace(_))
    ));
}

#[test]
fn overwrites_are_collected_and_the_newest_values_stay() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options();
    opts.vlog_gc_dead_ratio = 0.0;
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for round in 0..4u32 {
        for k in 0..N {
            db.default_namespace()
                .put(&key(k), &value(round, k))
                .unwrap();
        }
    }
    for k in (0..N).step_by(3) {
        db.default_namespace().delete(&key(k)).unwrap();
    }
    let before = data_bytes(dir.path());
    db.compact_all().unwrap();
    let stats = db.gc_value_log().unwrap();
    let after = data_bytes(dir.path());
    assert!(
        after * 3 < before,
        "GC kept {after} of {before} bytes: {stats:?}"
    );
    let check = |db: &Db| {
        for k in 0..N {
            let want = (k % 3 != 0).then(|| value(3, k));
            assert_eq!(
                db.default_namespace().get(&key(k)).unwrap().as_deref(),
                want.as_deref(),
                "key {k}"
            );
        }
    };
    check(&db);
    // Writes after GC, then a reopen.
    db.default_namespace().put(&key(1), b"later").unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(
        db.default_namespace().get(&key(1)).unwrap().as_deref(),
        Some(&b"later"[..])
    );
    db.default_namespace().put(&key(1), &value(3, 1)).unwrap();
    check(&db);
}

#[test]
fn background_gc_collects_overwritten_segments() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    for round in 0..6u32 {
        for k in 0..N {
            db.default_namespace()
                .put(&key(k), &value(round, k))
                .unwrap();
        }
        db.flush().unwrap();
        db.compact_all().unwrap();
    }
    // Let the background GC catch up.
    for _ in 0..100 {
        if db.stats().gc_segments_deleted > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(db.stats().gc_segments_deleted > 0, "{:?}", db.stats());
    for k in 0..N {
        assert_eq!(
            db.default_namespace().get(&key(k)).unwrap().as_deref(),
            Some(&value(5, k)[..])
        );
    }
}

/// Waits (up to 10 s) for background GC to delete a segment.
fn wait_for_gc(db: &Db) -> bool {
    for _ in 0..200 {
        if db.stats().gc_segments_deleted > 0 {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn background_gc_after_a_restart_knows_the_dead_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // No background GC in this first run (one background thread no longer stops it).
    let mut quiet = options();
    quiet.vlog_gc_dead_ratio = 0.0;
    let db = Db::open(dir.path(), quiet.clone()).unwrap();
    for round in 0..4u32 {
        for k in 0..N {
            db.default_namespace()
                .put(&key(k), &value(round, k))
                .unwrap();
        }
        db.flush().unwrap();
        db.compact_all().unwrap();
    }
    assert_eq!(db.stats().gc_segments_deleted, 0);
    db.close().unwrap();
    drop(db);
    // Nothing is overwritten or compacted after the restart: only what the manifest kept
    // about the dropped versions can tell GC where the dead bytes are.
    let db = Db::open(dir.path(), options()).unwrap();
    assert!(wait_for_gc(&db), "{:?}", db.stats());
    for k in 0..N {
        assert_eq!(
            db.default_namespace().get(&key(k)).unwrap().as_deref(),
            Some(&value(3, k)[..])
        );
    }
}

#[test]
fn destroying_a_namespace_starts_background_gc() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let big = db.create_namespace("big").unwrap().id();
    let small = db.create_namespace("small").unwrap().id();
    for k in 0..N {
        db.namespace(big)
            .unwrap()
            .put(&key(k), &value(1, k))
            .unwrap();
        if k % 4 == 0 {
            db.namespace(small)
                .unwrap()
                .put(&key(k), &value(2, k))
                .unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let before = data_bytes(dir.path());
    db.destroy_namespace(big).unwrap();
    // No gc_value_log: the destroy's dead bytes alone must start the background GC.
    assert!(wait_for_gc(&db), "{:?}", db.stats());
    for _ in 0..200 {
        if data_bytes(dir.path()) * 2 < before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        data_bytes(dir.path()) * 2 < before,
        "{} of {before} bytes left",
        data_bytes(dir.path())
    );
    for k in (0..N).step_by(4) {
        assert_eq!(
            db.namespace(small)
                .unwrap()
                .get(&key(k))
                .unwrap()
                .as_deref(),
            Some(&value(2, k)[..])
        );
    }
    assert!(matches!(
        db.namespace(big).and_then(|n| n.get(&key(0))),
        Err(Error::UnknownNamespace(_))
    ));
}

/// A GC with no index in place used to delete a collected segment before its rewrites were
/// flushed; an index created then made the flush read the old versions there, the database
/// turned read-only and never opened again.
#[test]
fn gc_then_create_index_keeps_the_database_open() {
    use cerberus_engine::{Filter, FindOptions, IndexKind};
    let dir = tempfile::tempdir().unwrap();
    let json = |k: u32, version: u32| {
        let pad = "x".repeat(150);
        format!(r#"{{"k":{k},"g":{},"v":{version},"pad":"{pad}"}}"#, k % 7).into_bytes()
    };
    let mut expected = std::collections::BTreeMap::new();
    {
        let db = Db::open(dir.path(), common::small_options()).unwrap();
        let ns = db.create_namespace("a").unwrap();
        for k in 0..2_000 {
            ns.put(&key(k), &json(k, 0)).unwrap();
            expected.insert(key(k), json(k, 0));
        }
        db.flush().unwrap();
        for k in (0..2_000).step_by(2) {
            ns.put(&key(k), &json(k, 1)).unwrap();
            expected.insert(key(k), json(k, 1));
        }
        db.flush().unwrap();
        db.gc_value_log().unwrap();
        ns.create_index("g", IndexKind::Vas).unwrap();
        ns.put(&key(5_000), &json(5_000, 2)).unwrap();
        expected.insert(key(5_000), json(5_000, 2));
        let page = ns
            .find(
                &Filter::parse_str(r#"{"g": 3}"#).unwrap(),
                &FindOptions::default(),
            )
            .unwrap();
        let want = expected.keys().filter(|k| {
            let n: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
            n % 7 == 3
        });
        assert_eq!(page.value.len(), want.count());
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), common::small_options()).unwrap();
    let a = db
        .list_namespaces()
        .into_iter()
        .find(|n| n.name == "a")
        .unwrap();
    let ns = db.namespace(a.nsid).unwrap();
    for (k, v) in &expected {
        assert_eq!(ns.get(k).unwrap().as_deref(), Some(&v[..]));
    }
}

/// Garbage is counted per segment and forgotten with the segment: the versions GC's
/// rewrites supersede sit in the segments GC deleted, so the flush (or, after a crash, the
/// replay) that brings the rewrites into the tables must not count them as garbage again,
/// where no collection would ever take it back.
#[test]
fn garbage_of_collected_segments_is_gone_for_good() {
    use cerberus_engine::storage::{FaultStorage, StorageRef};
    let mut o = options();
    o.vlog_gc_dead_ratio = 0.0;
    for crash in [false, true] {
        let fs = FaultStorage::new();
        let storage: StorageRef = std::sync::Arc::new(fs.clone());
        let db = Db::builder(o.clone())
            .open_storage(storage.clone())
            .unwrap();
        let ns = db.create_namespace("g").unwrap();
        let id = ns.id();
        for round in 0..3u32 {
            for k in 0..200 {
                ns.put(&key(k), &value(round, k)).unwrap();
            }
        }
        db.flush().unwrap();
        assert!(ns.stats().unwrap().space.garbage_bytes > 0);
        let stats = db.gc_value_log().unwrap();
        assert!(stats.segments_deleted > 0, "{stats:?}");
        let db = match crash {
            // The rewrites reach the tables through the replay at the next open.
            true => {
                db.sync_log().unwrap();
                fs.crash();
                drop(ns);
                drop(db);
                fs.restart();
                Db::builder(o.clone()).open_storage(storage).unwrap()
            }
            false => db,
        };
        let ns = db.namespace(id).unwrap();
        // Whatever the first collection left (its own segments wait for the flush of its
        // rewrites; after the crash, for a collection of their own), the next one takes.
        db.flush().unwrap();
        db.gc_value_log().unwrap();
        db.flush().unwrap();
        let space = ns.stats().unwrap().space;
        assert_eq!(space.garbage_bytes, 0, "crash {crash}: {space:?}");
        for k in 0..200 {
            assert_eq!(ns.get(&key(k)).unwrap(), Some(value(2, k).into()));
        }
    }
}
