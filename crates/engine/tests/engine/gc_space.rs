//! GC when space runs short: background GC waits for the value log's garbage to reach
//! `vlog_gc_dead_ratio` of it (`docs/format.md`), but a write refused for want of space
//! (the device-wide reserve reached, or the storage full) has it collect what is past the
//! ratio at once, and a destroyed namespace's garbage is collected without waiting. (On a
//! storage that cannot say its free space there is no reserve: once it is full, GC has no
//! room for its rewrites either.)

use crate::common;
use crate::sized_storage::Sized;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{Db, ErrorKind, Options, Readable};
use std::sync::Arc;
use std::time::{Duration, Instant};

const N: u32 = 3_000;

fn options() -> Options {
    let mut o = common::small_options();
    o.memtable_bytes = 256 << 10;
    o.vlog_segment_bytes = 512 << 10;
    o.inline_value_threshold = 0;
    o
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

fn value(round: u32, k: u32) -> Vec<u8> {
    common::value_for(k, u64::from(round), 1000)
}

/// Loads `N` keys, then overwrites the first 300 (most of the first segment dead, a tenth
/// of the log) and settles: the gate is closed, nothing was collected.
fn load_with_a_dead_segment(db: &Db) {
    let ns = db.default_namespace();
    for k in 0..N {
        ns.put(&key(k), &value(0, k)).unwrap();
    }
    for k in 0..300 {
        ns.put(&key(k), &value(1, k)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().gc_segments_deleted, 0, "{:?}", db.stats());
}

/// Puts a new key every 20 ms until one is taken (up to 10 s), each refusal of kind `want`.
fn put_until_taken(db: &Db, want: ErrorKind) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut refused = 0;
    for i in 0.. {
        match db.default_namespace().put(&key(N + i), &value(2, i)) {
            Ok(()) => return,
            Err(e) => {
                assert_eq!(e.kind(), want, "{e}");
                refused += 1;
                assert!(
                    Instant::now() < deadline,
                    "{refused} puts refused, {:?}",
                    db.stats()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    unreachable!()
}

fn check_values(db: &Db) {
    let ns = db.default_namespace();
    for k in 0..N {
        let round = u32::from(k < 300);
        assert_eq!(
            ns.get(&key(k)).unwrap().as_deref(),
            Some(&value(round, k)[..])
        );
    }
}

/// The disk's free space goes below the reserve (another tenant of the disk took it):
/// writes are refused, and GC, told so, collects the dead segment; writes are taken again
/// once the space is back.
#[test]
fn a_write_refused_at_the_reserve_has_gc_collect() {
    let sized = Arc::new(Sized::new(100 << 20));
    let storage: StorageRef = sized.clone();
    let db = Db::builder(options()).open_storage(storage).unwrap();
    load_with_a_dead_segment(&db);
    // Free space 64 KiB below the reserve (1 % of the storage).
    let reserve = (100 << 20) / 100;
    sized.use_elsewhere((100 << 20) - sized.files_bytes() - (reserve - (64 << 10)));
    std::thread::sleep(Duration::from_millis(60));
    // Refused until GC gives the space back (or none, if a look of the background's came
    // first: the free space above the reserve is below the log's garbage).
    put_until_taken(&db, ErrorKind::CapacityExceeded);
    assert!(db.stats().gc_segments_deleted > 0, "{:?}", db.stats());
    check_values(&db);
}

/// A destroyed namespace's values share segments with another's: each of those segments is
/// past the ratio but under 90 % dead, and the log as a whole holds less than the ratio. Its
/// owner still expects the space back: GC collects them without waiting for the log.
#[test]
fn a_destroyed_namespaces_shared_segments_are_collected() {
    let db = Db::builder(options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let gone = db.create_namespace("gone").unwrap();
    let stays = db.create_namespace("stays").unwrap();
    // 3 of every 4 values of the first 2,000 writes are the destroyed namespace's, then
    // 3,000 writes of the other alone: about 30 % of the log dies with the destroy.
    for k in 0..2_000 {
        let ns = if k % 4 == 0 { &stays } else { &gone };
        ns.put(&key(k), &value(0, k)).unwrap();
    }
    for k in 2_000..5_000 {
        stays.put(&key(k), &value(0, k)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().gc_segments_deleted, 0, "{:?}", db.stats());
    db.destroy_namespace(gone.id()).unwrap();
    db.wait_for_compactions().unwrap();
    let stats = db.stats();
    assert!(stats.gc_segments_deleted >= 2, "{stats:?}");
    for k in (0..2_000).step_by(4).chain(2_000..5_000) {
        assert_eq!(
            stays.get(&key(k)).unwrap().as_deref(),
            Some(&value(0, k)[..])
        );
    }
}
