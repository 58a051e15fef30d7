use crate::storage::MemStorage;
use crate::{Db, Options, Readable};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// With one background thread, value-log GC used to be left to `gc_value_log` (a GC
/// waiting for a flush would hold the only thread): it now runs by itself, its rewrites
/// flushing for themselves when the memtables are full.
#[test]
fn gc_runs_by_itself_with_one_background_thread() {
    let opts = Options {
        background_threads: 1,
        memtable_bytes: 16 << 10,
        max_immutable_memtables: 1,
        vlog_segment_bytes: 64 << 10,
        vlog_gc_dead_ratio: 0.5,
        ..Options::default()
    };
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    let value = |i: u32, round: u32| format!("{i}-{round}-").repeat(100);
    // Each round overwrites every other key: the older segments become mostly dead, and
    // the keys left alone after the first round give GC records to move.
    for round in 0..12 {
        for i in 0..80u32 {
            if round == 0 || i % 2 == 0 {
                ns.put(&i.to_be_bytes(), value(i, round).as_bytes())
                    .unwrap();
            }
        }
    }
    db.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.stats().gc_segments_deleted == 0 {
        assert!(Instant::now() < deadline, "no segment collected in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 0..80u32 {
        let round = if i % 2 == 0 { 11 } else { 0 };
        let got = ns.get(&i.to_be_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(value(i, round).as_bytes()));
    }
}
