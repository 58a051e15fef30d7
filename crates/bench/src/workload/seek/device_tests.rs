//! seekrandom through a local device (`--device local`): the device cursor's counts against
//! the model, as the embedded engine's in `tests.rs`.

use super::tests::{check_seekrandom, fill_with, open_config, scan, Model};
use super::*;
use cerberus_bench_engines::{self as engine, Engine, OpenConfig};

/// A device started here; `prefetch_degree`: its iterators' value read-ahead (None: the
/// device's default).
fn device_config(path: &std::path::Path, prefetch_degree: Option<usize>) -> OpenConfig {
    OpenConfig {
        device: Some("local".into()),
        device_prefetch_degree: prefetch_degree,
        ..open_config(path)
    }
}

/// Every entry of a cursor from `start` on, with `scan_length` as its batch hint.
fn read_all(db: &dyn BenchDb, start: &[u8], scan_length: usize) -> Model {
    let opts = CursorOptions {
        scan_length,
        ..CursorOptions::default()
    };
    let mut cursor = db.cursor(&opts).unwrap();
    cursor.seek(start).unwrap();
    let mut all = Model::new();
    while let Some((k, v)) = cursor.next().unwrap() {
        assert!(all.insert(k.to_vec(), v.to_vec()).is_none(), "{k:?} twice");
    }
    all
}

#[test]
fn seekrandom_through_a_local_device_returns_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    // The device's iterators read 4 values ahead.
    let db = engine::open(Engine::Device, &device_config(dir.path(), Some(4))).unwrap();
    let model = fill_with(&*db, false);
    // Whole scans: batches of the default size (not knowing the scan length), of 7 entries
    // and then the default, and of one entry at a time after the first.
    for hint in [0, 7, 1] {
        let all = read_all(&*db, b"", hint);
        assert_eq!(all.len(), 2000);
        assert!(all == model, "scan length hint {hint}");
    }
    // From the middle, and from between keys.
    let keys = KeyFormat::new(16, 3000).unwrap();
    let tail: Model = model
        .range(keys.key(1500)..)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(read_all(&*db, &keys.key(1500), 100) == tail);

    // More seeks than a connection may hold open iterators (16): each seek closes the last.
    check_seekrandom(&*db, &model, 1, scan(300, 50, false, 0));
    check_seekrandom(&*db, &model, 3, scan(301, 7, false, 4));
    check_seekrandom(&*db, &model, 2, scan(200, 100, true, 0));
    check_seekrandom(&*db, &model, 1, scan(50, 1, false, 16));
    // Scans of more than one batch of bytes (1 MiB): 3000 entries of up to 300 bytes.
    check_seekrandom(&*db, &model, 1, scan(5, 3000, false, 0));
    db.close().unwrap();
}

#[test]
fn a_device_seek_past_the_last_key_returns_nothing_and_cursors_reseek() {
    let dir = tempfile::tempdir().unwrap();
    let db = engine::open(Engine::Device, &device_config(dir.path(), None)).unwrap();
    db.put(b"0000000000000001", b"v").unwrap();
    db.put(b"0000000000000003", b"w").unwrap();
    let mut cursor = db.cursor(&CursorOptions::default()).unwrap();
    // Unpositioned: from the first key.
    assert_eq!(
        cursor.next().unwrap(),
        Some((&b"0000000000000001"[..], &b"v"[..]))
    );
    cursor.seek(b"0000000000000004").unwrap();
    assert!(cursor.next().unwrap().is_none());
    assert!(cursor.next().unwrap().is_none());
    cursor.seek(b"0000000000000002").unwrap();
    assert_eq!(
        cursor.next().unwrap(),
        Some((&b"0000000000000003"[..], &b"w"[..]))
    );
    assert!(cursor.next().unwrap().is_none());
    // Many cursors made and dropped in turn on one thread (one connection) leave no
    // iterator open behind them: more than the device's 16 per connection.
    for _ in 0..40 {
        let mut c = db.cursor(&CursorOptions::default()).unwrap();
        c.seek(b"").unwrap();
        assert!(c.next().unwrap().is_some());
    }
    let keys_only = CursorOptions {
        keys_only: true,
        ..CursorOptions::default()
    };
    let mut c = db.cursor(&keys_only).unwrap();
    c.seek(b"").unwrap();
    assert_eq!(
        c.next().unwrap(),
        Some((&b"0000000000000001"[..], &b""[..]))
    );
    drop(c);
    drop(cursor);
    db.close().unwrap();
}
