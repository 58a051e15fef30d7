//! GC when space runs short: background GC waits for the value log's garbage to reach
//! `vlog_gc_dead_ratio` of it (`docs/format.md`), but a write refused for want of space
//! (the device-wide reserve reached, or the storage full) has it collect what is past the
//! ratio at once, and a destroyed namespace's garbage is collected without waiting. (On a
//! storage that cannot say its free space there is no reserve: once it is full, GC has no
//! room for its rewrites either.)

use crate::common;
use crate::sized_storage::Sized;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{Db, ErrorKind, Namespace, Options, Readable};
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

/// Another tenant of the disk leaves 64 KiB less free than the reserve (1 % of the 100 MiB
/// storage), once the database's files stopped changing (a settle returns before the
/// tables its compactions replaced are deleted); seen once the free space is asked again.
fn squeeze_below_the_reserve(sized: &Sized) {
    let mut files = sized.files_bytes();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = sized.files_bytes();
        if now == files {
            break;
        }
        files = now;
    }
    let reserve = (100 << 20) / 100;
    sized.use_elsewhere((100 << 20) - files - (reserve - (64 << 10)));
    std::thread::sleep(Duration::from_millis(60));
}

fn sized_db() -> (Arc<Sized>, Db) {
    let sized = Arc::new(Sized::new(100 << 20));
    let storage: StorageRef = sized.clone();
    let db = Db::builder(options()).open_storage(storage).unwrap();
    (sized, db)
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

/// A segment past the dead ratio is left while the log as a whole holds less garbage than
/// the ratio (it gets deader, and cheaper to collect, as it waits); once the log holds that
/// much, background GC collects, deadest first, and the newest values stay.
#[test]
fn background_gc_waits_for_the_logs_garbage_then_collects() {
    let db = Db::builder(options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    load_with_a_dead_segment(&db);
    // Everything again: the log now holds more than half garbage.
    let ns = db.default_namespace();
    for k in 0..N {
        ns.put(&key(k), &value(2, k)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let stats = db.stats();
    assert!(stats.gc_segments_deleted > 0, "{stats:?}");
    for k in 0..N {
        assert_eq!(ns.get(&key(k)).unwrap().as_deref(), Some(&value(2, k)[..]));
    }
}

/// The disk's free space goes below the reserve (another tenant of the disk took it):
/// writes are refused, and GC, told so, collects the dead segment; writes are taken again
/// once the space is back.
#[test]
fn a_write_refused_at_the_reserve_has_gc_collect() {
    let (sized, db) = sized_db();
    load_with_a_dead_segment(&db);
    squeeze_below_the_reserve(&sized);
    // Refused until GC gives the space back (or none, if a look of the background's came
    // first: the free space above the reserve is below the log's garbage).
    put_until_taken(&db, ErrorKind::CapacityExceeded);
    assert!(db.stats().gc_segments_deleted > 0, "{:?}", db.stats());
    check_values(&db);
}

/// A database on memory with two tenants, flushed: 3 of every 4 values of the first 2,000
/// writes are the first one's (`gone`), then 3,000 writes of the second alone (`stays`):
/// about 30 % of the log dies with the first.
fn two_tenants(o: Options) -> (Db, Namespace, Namespace) {
    let db = Db::builder(o)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let gone = db.create_namespace("gone").unwrap();
    let stays = db.create_namespace("stays").unwrap();
    for k in 0..2_000 {
        let ns = if k % 4 == 0 { &stays } else { &gone };
        ns.put(&key(k), &value(0, k)).unwrap();
    }
    for k in 2_000..5_000 {
        stays.put(&key(k), &value(0, k)).unwrap();
    }
    db.flush().unwrap();
    (db, gone, stays)
}

/// The tenant of [`two_tenants`] that stays keeps every value.
fn check_stays(stays: &Namespace) {
    for k in (0..2_000).step_by(4).chain(2_000..5_000) {
        let got = stays.get(&key(k)).unwrap();
        assert_eq!(got.as_deref(), Some(&value(0, k)[..]));
    }
}

/// A destroyed namespace's values share segments with another's: each of those segments is
/// past the ratio but under 90 % dead, and the log as a whole holds less than the ratio. Its
/// owner still expects the space back: GC collects them without waiting for the log.
#[test]
fn a_destroyed_namespaces_shared_segments_are_collected() {
    let (db, gone, stays) = two_tenants(options());
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().gc_segments_deleted, 0, "{:?}", db.stats());
    db.destroy_namespace(gone.id()).unwrap();
    db.wait_for_compactions().unwrap();
    let stats = db.stats();
    assert!(stats.gc_segments_deleted >= 2, "{stats:?}");
    check_stays(&stays);
}

/// Every segment under the ratio (a fifth of each key range overwritten twice over: 40 %
/// dead each), and writes refused at the reserve: GC takes the deadest segment anyway, as
/// room is worth more than the rewrites then.
#[test]
fn refused_writes_have_gc_take_segments_under_the_ratio() {
    let (sized, db) = sized_db();
    let ns = db.default_namespace();
    for k in 0..N {
        ns.put(&key(k), &value(0, k)).unwrap();
    }
    for k in (0..N).filter(|k| k % 5 < 2) {
        ns.put(&key(k), &value(1, k)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().gc_segments_deleted, 0, "{:?}", db.stats());
    squeeze_below_the_reserve(&sized);
    put_until_taken(&db, ErrorKind::CapacityExceeded);
    assert!(db.stats().gc_segments_deleted > 0, "{:?}", db.stats());
    for k in 0..N {
        let round = u32::from(k % 5 < 2);
        assert_eq!(
            ns.get(&key(k)).unwrap().as_deref(),
            Some(&value(round, k)[..])
        );
    }
}

/// A destroyed namespace whose values are still in L0 at the destroy: they are known dead
/// only once a compaction drops them, after the look the destroy made. GC reclaims them
/// then, without waiting for the log.
#[test]
fn a_destroyed_namespaces_values_in_l0_are_collected_once_compacted() {
    let mut o = options();
    // Every flush of the load stays in L0 (the memtable's budget counts its memory, so the
    // load makes more than 12 flushes).
    o.l0_compaction_trigger = 40;
    o.l0_slowdown_trigger = 50;
    o.l0_stop_trigger = 60;
    let (db, gone, stays) = two_tenants(o);
    assert!(db.stats().levels[0].tables > 1, "{:?}", db.stats().levels);
    db.destroy_namespace(gone.id()).unwrap();
    db.wait_for_compactions().unwrap();
    // The look after the compaction that dropped the values may still be running.
    let deadline = Instant::now() + Duration::from_secs(10);
    while db.stats().gc_segments_deleted < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = db.stats();
    assert!(stats.gc_segments_deleted >= 2, "{stats:?}");
    check_stays(&stays);
}
