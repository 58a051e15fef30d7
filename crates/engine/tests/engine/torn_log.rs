//! What a crash leaves at the value log's end (a torn last record, a page that never reached
//! the disk before a later one did) is cut off at open: the database recovers a prefix of its
//! writes and goes on, its background work included (issue 60, defects 1 and 2).

use crate::common;

use cerberus_engine::Readable;
use cerberus_engine::{Db, Options};
use std::fs;
use std::path::{Path, PathBuf};

const RECORDS: u32 = 200;

fn key(k: u32) -> Vec<u8> {
    format!("rec{k:05}").into_bytes()
}

fn record(k: u32, version: u32) -> Vec<u8> {
    format!(
        r#"{{"id": {k}, "version": {version}, "pad": "{}"}}"#,
        "x".repeat(200)
    )
    .into_bytes()
}

fn options() -> Options {
    let mut o = common::small_options();
    // The records stay in the memtable: recovery replays them from the log, as after a crash.
    o.memtable_bytes = 4 << 20;
    o.vlog_segment_bytes = 1 << 20;
    o.vlog_gc_dead_ratio = 0.0;
    o
}

/// Closes the database and lets go of its directory.
fn shut(db: Db) {
    db.close().unwrap();
    drop(db);
}

fn newest_segment(dir: &Path) -> PathBuf {
    let mut segs: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vlog"))
        .collect();
    segs.sort();
    segs.pop().expect("a segment")
}

fn load(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    for k in 0..RECORDS {
        db.default_namespace().put(&key(k), &record(k, 0)).unwrap();
    }
    shut(db);
}

/// The records a reopened database holds: a prefix `0..n` of the writes, each intact.
fn recovered_prefix(db: &Db) -> u32 {
    let ns = db.default_namespace();
    let n = (0..RECORDS)
        .take_while(|k| ns.get(&key(*k)).unwrap().is_some())
        .count() as u32;
    for k in 0..RECORDS {
        let got = ns.get(&key(k)).unwrap();
        if k < n {
            assert_eq!(got.as_deref(), Some(&record(k, 0)[..]), "record {k}");
        } else {
            assert_eq!(got, None, "record {k} survived past the damage at {n}");
        }
    }
    n
}

/// After recovery the database takes writes, a flush and value-log GC over every segment
/// (the one that was torn included), and opens again with everything.
fn still_works(dir: &Path, n: u32) {
    let db = Db::open(dir, options()).unwrap();
    for k in 0..RECORDS {
        db.default_namespace().put(&key(k), &record(k, 1)).unwrap();
    }
    db.flush().unwrap();
    let stats = db.gc_value_log().expect("GC after recovering a torn log");
    assert!(stats.segments_scanned > 0, "GC read no segment: {stats:?}");
    db.default_namespace().put(b"after-gc", b"1").unwrap();
    shut(db);
    let db = Db::open(dir, options()).unwrap();
    for k in 0..RECORDS {
        let got = db.default_namespace().get(&key(k)).unwrap();
        assert_eq!(
            got.as_deref(),
            Some(&record(k, 1)[..]),
            "record {k} (had {n})"
        );
    }
    assert!(db.default_namespace().get(b"after-gc").unwrap().is_some());
    shut(db);
}

/// The torn tail of a crash: the last 50 bytes of the newest segment never reached the disk.
#[test]
fn a_torn_tail_is_cut_off_and_the_database_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    load(dir.path());
    let seg = newest_segment(dir.path());
    let len = fs::metadata(&seg).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(len - 50).unwrap();
    drop(f);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(recovered_prefix(&db), RECORDS - 1);
    shut(db);
    still_works(dir.path(), RECORDS - 1);
}

/// A hole in the unsynced tail: one 4 KiB page zeroed while later pages reached the disk.
/// Recovery keeps the records before the hole and nothing after it.
#[test]
fn a_hole_in_the_unsynced_tail_recovers_the_records_before_it() {
    let dir = tempfile::tempdir().unwrap();
    load(dir.path());
    let seg = newest_segment(dir.path());
    let mut data = fs::read(&seg).unwrap();
    assert!(data.len() > 4 * 4096, "segment of {} bytes", data.len());
    let page = data.len() / 4096 / 2 * 4096;
    data[page..page + 4096].fill(0);
    fs::write(&seg, &data).unwrap();
    let db = Db::open(dir.path(), options()).expect("open with a hole in the log's tail");
    let n = recovered_prefix(&db);
    assert!(n > 0 && n < RECORDS - 10, "recovered {n} of {RECORDS}");
    shut(db);
    // The intact records past the hole are kept aside, not lost.
    let aside = fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".damaged")
        })
        .count();
    assert_eq!(aside, 1);
    still_works(dir.path(), n);
}
