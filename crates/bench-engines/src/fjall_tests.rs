//! The fjall adapter on its own: puts, gets, batches, scans and tenants, inline and with
//! key-value separation (the bench's workloads on it are in cerberus-bench's fjall tests).

use super::*;
use crate::profile::paper_profile;

fn config(path: &std::path::Path, layout: LayoutArg) -> OpenConfig {
    OpenConfig {
        cache_bytes: 1 << 20,
        ..OpenConfig::at(path, layout)
    }
}

/// Every entry from `from` on, as the cursor yields them.
fn scan(db: &FjallDb, from: &[u8], keys_only: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let opts = CursorOptions {
        keys_only,
        ..CursorOptions::default()
    };
    let mut cursor = db.cursor(&opts).unwrap();
    cursor.seek(from).unwrap();
    let mut out = Vec::new();
    while let Some((k, v)) = cursor.next().unwrap() {
        out.push((k.to_vec(), v.to_vec()));
    }
    out
}

#[test]
fn puts_batches_and_scans_are_found_inline_and_separated() {
    for blob_files in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path(), LayoutArg::PerNamespace);
        c.sync = blob_files;
        let db = FjallDb::open(&c, blob_files).unwrap();
        let big = vec![7u8; 1000];
        db.put(b"a", b"1").unwrap();
        db.put_many(&[(b"b", &big), (b"c", b"3")]).unwrap();
        assert!(db.get(b"a").unwrap());
        assert!(!db.get(b"z").unwrap());
        assert_eq!(db.get_many(&[b"b", b"c", b"d"]).unwrap(), 2);
        // Scans see the memtable, then the tables (and blob files) after a flush.
        let expect = |from: &[u8]| -> Vec<(Vec<u8>, Vec<u8>)> {
            let all = [
                (b"a", b"1".to_vec()),
                (b"b", big.clone()),
                (b"c", b"3".to_vec()),
            ];
            (all.into_iter())
                .filter(|(k, _)| &k[..] >= from)
                .map(|(k, v)| (k.to_vec(), v))
                .collect()
        };
        assert_eq!(scan(&db, b"", false), expect(b""));
        db.flush().unwrap();
        assert_eq!(scan(&db, b"b", false), expect(b"b"));
        assert_eq!(scan(&db, b"bb", false), expect(b"c"));
        let keys: Vec<Vec<u8>> = scan(&db, b"", true).into_iter().map(|e| e.0).collect();
        assert_eq!(keys, [b"a", b"b", b"c"]);
        assert!(scan(&db, b"d", false).is_empty());
        let stats = db.stats_json();
        assert_eq!(stats["kv_separation"], blob_files);
        let blobs = stats["main"]["blob_files"].as_u64().unwrap();
        assert_eq!(blobs > 0, blob_files, "{stats}");
        db.compact().unwrap();
        db.settle().unwrap();
        assert_eq!(scan(&db, b"", false), expect(b""));
        db.close().unwrap();
        drop(db);
        // What was put is there at the next open.
        let db = FjallDb::open(&c, blob_files).unwrap();
        assert_eq!(scan(&db, b"", false), expect(b""));
    }
}

#[test]
fn a_cursor_not_positioned_yields_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = FjallDb::open(&config(dir.path(), LayoutArg::PerNamespace), false).unwrap();
    db.put(b"a", b"1").unwrap();
    let mut cursor = db.cursor(&CursorOptions::default()).unwrap();
    assert!(cursor.next().unwrap().is_none());
}

#[test]
fn tenants_are_apart_in_every_layout() {
    for layout in [
        LayoutArg::PerNamespace,
        LayoutArg::Shared,
        LayoutArg::Baseline,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let c = OpenConfig {
            tenants: 2,
            profile: Some(paper_profile(2)),
            ..config(dir.path(), layout)
        };
        let db = FjallDb::open(&c, false).unwrap();
        assert!(db.create_tenants(3).is_err());
        let t = db.create_tenants(2).unwrap();
        db.put_tenant(&t[0], b"k", b"v").unwrap();
        db.put_many_tenant(&t[1], &[(b"m", b"1"), (b"n", b"2")])
            .unwrap();
        assert!(db.get_tenant(&t[0], b"k").unwrap());
        assert!(!db.get_tenant(&t[1], b"k").unwrap(), "{layout:?}");
        assert!(db.get_tenant(&t[1], b"n").unwrap());
        assert!(!db.get_tenant(&t[0], b"n").unwrap(), "{layout:?}");
        assert!(!db.get(b"k").unwrap(), "{layout:?}");
        // Where the shared key spaces put the tenant index.
        assert_eq!(db.get(b"\0\0\0\x01m").unwrap(), layout == LayoutArg::Shared);
        assert_eq!(
            db.get(b"m\0\0\0\x01").unwrap(),
            layout == LayoutArg::Baseline
        );
        let partitions = db.stats_json().get("partitions").is_some();
        assert_eq!(partitions, layout == LayoutArg::PerNamespace);
        db.close().unwrap();
    }
}

#[test]
fn a_failure_names_fjall_and_what_it_did() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let err = match FjallDb::open(&config(&file, LayoutArg::PerNamespace), false) {
        Ok(_) => panic!("opened a keyspace in a file"),
        Err(e) => e.to_string(),
    };
    assert!(err.starts_with("fjall: opening "), "{err}");
}
