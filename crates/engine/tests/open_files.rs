//! Resources the engine holds: file descriptors and files left behind.

mod common;

use cerberus_engine::{Db, Options};
use std::path::Path;

fn count_with_suffix(dir: &Path, suffix: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .count()
}

/// Each open starts a new value-log segment; the one an earlier open started and nothing was
/// written to must not stay behind.
#[test]
fn reopening_leaves_no_empty_segments() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        auto_compaction: false,
        ..common::small_options()
    };
    {
        let db = Db::open(dir.path(), opts()).unwrap();
        db.default_namespace()
            .put(b"k", b"a value long enough to live in the log")
            .unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), opts()).unwrap();
    db.close().unwrap();
    drop(db);
    let after_two = count_with_suffix(dir.path(), ".vlog");
    for _ in 0..20 {
        let db = Db::open(dir.path(), opts()).unwrap();
        db.close().unwrap();
    }
    assert_eq!(count_with_suffix(dir.path(), ".vlog"), after_two);
    let db = Db::open(dir.path(), opts()).unwrap();
    assert_eq!(
        db.default_namespace().get(b"k").unwrap().as_deref(),
        Some(&b"a value long enough to live in the log"[..])
    );
}
