//! Resources the engine holds: file descriptors and files left behind.

mod common;

use cerberus_engine::Readable;
use cerberus_engine::{Db, Options, ReadOptions, WriteBatch};
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
    let opts = || {
        let mut o = common::small_options();
        o.auto_compaction = false;
        o
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

/// Sets this process's soft limit on open descriptors.
fn limit_open_files(n: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = n.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

/// Descriptors this process has open.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// A directory on tmpfs where there is one: ten thousand table syncs cost nothing there.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

const KEYS: u32 = 10_500;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// A full scan of a tree of more than 10,000 tables, under a limit of 512 descriptors, with
/// memory maps and without: tables are opened through a cache bounded by the limit, and a
/// table evicted meanwhile reads the same when opened again.
#[test]
fn a_scan_over_ten_thousand_tables_fits_in_512_descriptors() {
    limit_open_files(512);
    for mmap_reads in [false, true] {
        let dir = scratch_dir();
        let mut opts = Options::default();
        opts.auto_compaction = false;
        // One entry per table.
        opts.target_table_bytes = 1;
        opts.mmap_reads = mmap_reads;
        let db = Db::open(dir.path(), opts).unwrap();
        let ns = db.default_namespace();
        let mut batch = WriteBatch::new();
        for i in 0..KEYS {
            batch.put(key(i), format!("v{i}"));
        }
        ns.write(batch).unwrap();
        db.flush().unwrap();
        db.compact_all().unwrap();
        let tables: usize = db.stats().levels.iter().map(|l| l.tables).sum();
        assert!(tables > 10_000, "only {tables} tables");
        for pass in 0..2 {
            let mut n = 0;
            for item in ns.iter(ReadOptions::default()).unwrap() {
                let (k, v) = item.unwrap();
                assert_eq!(&k[..], key(n).as_slice(), "pass {pass}, mmap {mmap_reads}");
                assert_eq!(&v[..], format!("v{n}").as_bytes());
                n += 1;
            }
            assert_eq!(n, KEYS, "pass {pass}, mmap {mmap_reads}");
            assert!(open_descriptors() < 512);
        }
        // Gets through evicted tables.
        for i in (0..KEYS).step_by(997) {
            let v = ns.get(&key(i)).unwrap();
            assert_eq!(v.as_deref(), Some(format!("v{i}").as_bytes()));
        }
        db.close().unwrap();
    }
}
