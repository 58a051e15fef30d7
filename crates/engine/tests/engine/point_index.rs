//! Tables' point indexes (`Options::point_index`): gets that find their value record
//! through one answer exactly as gets through the data blocks, at every snapshot, and when
//! the index lies or is damaged.

use crate::common;

use cerberus_engine::storage::IoPurpose;
use cerberus_engine::{Db, Options, Readable};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::{Arc, Barrier};

const N: u32 = 3_000;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

fn options(point_index: bool) -> Options {
    let mut o = common::small_options();
    // Every data block read is a read from storage: counted, and visible in the stats.
    o.cache_bytes = 0;
    o.point_index = point_index;
    o
}

/// Puts every key, overwrites a third, deletes a fifth, with flushes and compactions in
/// between, so that versions lie in several levels; returns the model.
fn fill(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let ns = db.default_namespace();
    let mut model = BTreeMap::new();
    for round in 0..3u32 {
        for k in 0..N {
            let write = match round {
                0 => true,
                1 => k % 3 == 0,
                _ => k % 7 == 1,
            };
            if write {
                let v = common::value_for(k, round as u64, 100);
                ns.put(&key(k), &v).unwrap();
                model.insert(key(k), v);
            }
            if round == 1 && k % 5 == 2 {
                ns.delete(&key(k)).unwrap();
                model.remove(&key(k));
            }
        }
        db.flush().unwrap();
        if round == 1 {
            db.compact_all().unwrap();
        }
    }
    model
}

/// Every key by `get`, and in batches of 64 by `get_many`, against the model.
fn check_all(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let ns = db.default_namespace();
    for k in 0..N + 100 {
        let got = ns.get(&key(k)).unwrap();
        assert_eq!(
            got.as_ref().map(|v| &v[..]),
            model.get(&key(k)).map(|v| &v[..]),
            "key {k}"
        );
    }
    let keys: Vec<Vec<u8>> = (0..N + 100).map(key).collect();
    for batch in keys.chunks(64) {
        let refs: Vec<&[u8]> = batch.iter().map(|k| &k[..]).collect();
        let got = ns.get_many(&refs).unwrap();
        for (k, v) in batch.iter().zip(got) {
            let name = String::from_utf8_lossy(k);
            assert_eq!(
                v.as_deref(),
                model.get(k).map(|v| &v[..]),
                "get_many {name}"
            );
        }
    }
}

fn data_reads(db: &Db) -> u64 {
    db.stats().reads[IoPurpose::Data as usize]
}

#[test]
fn gets_through_the_point_index_answer_as_the_data_blocks_do_and_skip_them() {
    let mut reads = Vec::new();
    for point in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(point)).unwrap();
        let model = fill(&db);
        db.close().unwrap();
        drop(db);
        // Reopened: the tables' readers load their point indexes from the files.
        let db = Db::open(dir.path(), options(point)).unwrap();
        let before = data_reads(&db);
        check_all(&db, &model);
        reads.push(data_reads(&db) - before);
        db.close().unwrap();
        drop(db);
    }
    // Without the index every found key reads a data block; with it, only the keys the index
    // sends the long way (deleted ones, whose tombstones it does not hold).
    let (with, without) = (reads[0], reads[1]);
    assert!(without >= u64::from(N) / 2, "{without}");
    assert!(with * 3 < without, "with {with}, without {without}");
}

#[test]
fn a_snapshot_older_than_a_table_reads_its_versions_the_long_way() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(true)).unwrap();
    let ns = db.default_namespace();
    for k in 0..N {
        ns.put(&key(k), &common::value_for(k, 0, 100)).unwrap();
    }
    db.flush().unwrap();
    let snap = ns.snapshot();
    for k in (0..N).step_by(2) {
        ns.put(&key(k), &common::value_for(k, 1, 100)).unwrap();
    }
    db.flush().unwrap();
    db.compact_all().unwrap();
    // The compacted tables hold both versions of the even keys; their newest entries are
    // newer than the snapshot.
    for k in 0..N {
        let old = snap.get(&key(k)).unwrap();
        assert_eq!(
            old.as_deref(),
            Some(&common::value_for(k, 0, 100)[..]),
            "key {k}"
        );
        let new = ns.get(&key(k)).unwrap();
        let round = u64::from(k % 2 == 0);
        assert_eq!(
            new.as_deref(),
            Some(&common::value_for(k, round, 100)[..]),
            "key {k}"
        );
    }
    drop(snap);
    db.close().unwrap();
    drop(db);
}

/// Table files of `dir`.
fn tables(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    v.sort();
    v
}

/// Where a table file's point index block lies (`docs/format.md`), if it has one.
fn point_block(data: &[u8]) -> Option<(usize, usize)> {
    let footer = &data[data.len() - 64..];
    let u32_at = |at: usize| u32::from_le_bytes(footer[at..at + 4].try_into().unwrap());
    let index_offset = u64::from_le_bytes(footer[12..20].try_into().unwrap()) as usize;
    let len = u32_at(48) as usize;
    (u32_at(44) >= 3 && len > 0).then(|| (index_offset - len - 4, len))
}

/// Rewrites every table's point index so that each slot holding an address holds the next
/// such slot's: every key's fingerprint then names another key's record, as a fingerprint
/// shared by two keys does.
fn rotate_addresses(dir: &Path) -> usize {
    let mut rotated = 0;
    for path in tables(dir) {
        let mut data = fs::read(&path).unwrap();
        let Some((at, len)) = point_block(&data) else {
            continue;
        };
        let block = &mut data[at..at + len];
        let slots: Vec<usize> = (16..len)
            .step_by(16)
            .filter(|s| block[s + 12..s + 16] != [0; 4])
            .collect();
        let addrs: Vec<Vec<u8>> = slots
            .iter()
            .map(|s| block[s + 4..s + 16].to_vec())
            .collect();
        for (i, s) in slots.iter().enumerate() {
            block[s + 4..s + 16].copy_from_slice(&addrs[(i + 1) % addrs.len()]);
        }
        let crc = crc32c::crc32c(&data[at..at + len]);
        data[at + len..at + len + 4].copy_from_slice(&crc.to_le_bytes());
        fs::write(&path, data).unwrap();
        rotated += slots.len();
    }
    rotated
}

#[test]
fn a_point_index_naming_other_keys_records_still_answers_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(true)).unwrap();
    let model = fill(&db);
    db.close().unwrap();
    drop(db);
    assert!(rotate_addresses(dir.path()) > N as usize / 2);
    let db = Db::open(dir.path(), options(true)).unwrap();
    check_all(&db, &model);
    db.close().unwrap();
    drop(db);
}

#[test]
fn a_damaged_point_index_leaves_gets_to_the_data_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(true)).unwrap();
    let model = fill(&db);
    db.close().unwrap();
    drop(db);
    let mut damaged = 0;
    for path in tables(dir.path()) {
        let mut data = fs::read(&path).unwrap();
        if let Some((at, len)) = point_block(&data) {
            // A slot's address, its checksum left as it was.
            data[at + len / 2] ^= 0x5a;
            fs::write(&path, data).unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0);
    let db = Db::open(dir.path(), options(true)).unwrap();
    let before = data_reads(&db);
    check_all(&db, &model);
    // Every found key went through its data block.
    assert!(data_reads(&db) - before >= model.len() as u64);
    // The damaged indexes' bytes went back to the budget.
    assert_eq!(db.stats().point_index_memory_bytes, 0);
    db.close().unwrap();
    drop(db);
}

/// With filter and index blocks in the block cache (the paper's device model) readers would
/// not keep a point index: tables are written without one, and gets read their data blocks.
#[test]
fn no_point_index_is_written_when_the_cache_holds_the_meta_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(true);
    opts.cache_filters_and_indexes = true;
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let model = fill(&db);
    db.close().unwrap();
    drop(db);
    for path in tables(dir.path()) {
        let data = fs::read(&path).unwrap();
        assert_eq!(point_block(&data), None, "{path:?}");
    }
    let db = Db::open(dir.path(), opts).unwrap();
    let before = data_reads(&db);
    check_all(&db, &model);
    assert!(data_reads(&db) - before >= model.len() as u64);
    db.close().unwrap();
    drop(db);
}

/// Reads of data blocks that checking every key takes, and the point-index bytes kept after.
fn reads_and_kept(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) -> (u64, u64) {
    let before = data_reads(db);
    check_all(db, model);
    (data_reads(db) - before, db.stats().point_index_memory_bytes)
}

#[test]
fn kept_point_indexes_stay_within_their_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(true)).unwrap();
    let model = fill(&db);
    db.close().unwrap();
    drop(db);
    let open = |budget: u64| {
        let mut o = options(true);
        o.point_index_memory_bytes = budget;
        Db::open(dir.path(), o).unwrap()
    };
    // Unbounded: every table keeps its index.
    let db = open(u64::MAX);
    let (all_reads, all_kept) = reads_and_kept(&db, &model);
    assert!(all_kept > 0);
    db.close().unwrap();
    drop(db);
    // None kept: every found key reads its data block, and the answers are the same.
    let db = open(0);
    let (none_reads, none_kept) = reads_and_kept(&db, &model);
    assert_eq!(none_kept, 0);
    assert!(none_reads > all_reads * 3, "{none_reads} {all_reads}");
    db.close().unwrap();
    drop(db);
    // Room for some: the kept bytes stay within it, and the tables that got theirs skip
    // their data blocks.
    let budget = all_kept / 2;
    let db = open(budget);
    let (some_reads, some_kept) = reads_and_kept(&db, &model);
    assert!(
        some_kept > 0 && some_kept <= budget,
        "{some_kept} of {budget}"
    );
    assert!(some_reads < none_reads, "{some_reads} {none_reads}");
    // Tables a compaction deletes give their bytes back: the new tables get indexes.
    db.compact_all().unwrap();
    let (after_reads, after_kept) = reads_and_kept(&db, &model);
    assert!(
        after_kept > 0 && after_kept <= budget,
        "{after_kept} of {budget}"
    );
    assert!(after_reads * 2 < none_reads, "{after_reads} {none_reads}");
    db.close().unwrap();
    drop(db);
    // One table open at a time: readers closed and opened again at every other get give
    // their bytes back each time (else the count would pass all the tables' together).
    let mut o = options(true);
    o.max_open_files = 1;
    let db = Db::open(dir.path(), o).unwrap();
    let (_, churned) = reads_and_kept(&db, &model);
    assert!(
        churned <= all_kept,
        "{churned} kept, {all_kept} in all the tables"
    );
    db.close().unwrap();
}

/// Every key of `ns` holds a value (the namespaces below are filled with all of `0..N`).
fn get_every_key(ns: &cerberus_engine::Namespace) {
    for k in 0..N {
        assert!(ns.get(&key(k)).unwrap().is_some(), "key {k}");
    }
}

fn budgeted(budget: u64) -> Options {
    let mut o = options(true);
    o.point_index_memory_bytes = budget;
    o
}

/// Namespaces `names`, each with every key, flushed and compacted; closed.
fn made_with(dir: &Path, names: &[&str]) {
    let db = Db::open(dir, budgeted(u64::MAX)).unwrap();
    for name in names {
        let ns = db.create_namespace(name).unwrap();
        for k in 0..N {
            ns.put(&key(k), &common::value_for(k, 0, 100)).unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_all().unwrap();
    db.close().unwrap();
}

#[test]
fn readers_racing_to_load_point_indexes_take_what_one_reader_takes() {
    let dir = tempfile::tempdir().unwrap();
    made_with(dir.path(), &["t"]);
    let one = {
        let db = Db::open(dir.path(), budgeted(u64::MAX)).unwrap();
        get_every_key(&db.namespace(db.namespace_id("t").unwrap()).unwrap());
        let kept = db.stats().point_index_memory_bytes;
        db.close().unwrap();
        kept
    };
    assert!(one > 0);
    for round in 0..6 {
        let budget = if round % 2 == 0 { u64::MAX } else { one / 2 };
        let db = Arc::new(Db::open(dir.path(), budgeted(budget)).unwrap());
        let start = Arc::new(Barrier::new(4));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (db, start) = (db.clone(), start.clone());
                std::thread::spawn(move || {
                    let ns = db.namespace(db.namespace_id("t").unwrap()).unwrap();
                    start.wait();
                    get_every_key(&ns);
                })
            })
            .collect();
        for r in readers {
            r.join().unwrap();
        }
        let kept = db.stats().point_index_memory_bytes;
        match budget {
            u64::MAX => assert_eq!(kept, one, "round {round}"),
            _ => assert!(
                kept > 0 && kept <= budget,
                "round {round}: {kept} of {budget}"
            ),
        }
        db.close().unwrap();
    }
}

#[test]
fn a_table_refused_for_want_of_room_gets_its_index_once_room_is_made() {
    let dir = tempfile::tempdir().unwrap();
    made_with(dir.path(), &["a", "b"]);
    let kept_a = {
        let db = Db::open(dir.path(), budgeted(u64::MAX)).unwrap();
        get_every_key(&db.namespace(db.namespace_id("a").unwrap()).unwrap());
        let kept = db.stats().point_index_memory_bytes;
        db.close().unwrap();
        kept
    };
    assert!(kept_a > 0);
    // Room for a's indexes only: b's readers are refused.
    let db = Db::open(dir.path(), budgeted(kept_a)).unwrap();
    let a_id = db.namespace_id("a").unwrap();
    let (a, b) = (
        db.namespace(a_id).unwrap(),
        db.namespace(db.namespace_id("b").unwrap()).unwrap(),
    );
    get_every_key(&a);
    let before = data_reads(&db);
    get_every_key(&b);
    let refused = data_reads(&db) - before;
    assert_eq!(db.stats().point_index_memory_bytes, kept_a);
    // a's tables go, and their bytes with them; b's same readers ask again.
    drop(a);
    db.destroy_namespace(a_id).unwrap();
    db.wait_for_compactions().unwrap();
    for _ in 0..200 {
        if db.stats().point_index_memory_bytes == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(db.stats().point_index_memory_bytes, 0);
    get_every_key(&b);
    let before = data_reads(&db);
    get_every_key(&b);
    let after = data_reads(&db) - before;
    assert!(db.stats().point_index_memory_bytes > 0);
    assert!(after * 3 < refused, "{after} data reads, {refused} refused");
    db.close().unwrap();
}

#[test]
fn a_budget_of_nothing_builds_no_point_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), budgeted(0)).unwrap();
    let model = fill(&db);
    db.close().unwrap();
    drop(db);
    let tables = tables(dir.path());
    assert!(!tables.is_empty());
    for path in tables {
        assert_eq!(point_block(&fs::read(&path).unwrap()), None, "{path:?}");
    }
    let db = Db::open(dir.path(), budgeted(0)).unwrap();
    check_all(&db, &model);
    db.close().unwrap();
}
