//! What a reopen holds in memory while it replays the log's unflushed tail.

use crate::test_alloc::{live_bytes, peak_bytes, reset_peak};
use crate::{Db, Options, Readable};

fn options() -> Options {
    Options {
        // Small fixed parts (its filter and point index), so that what the replay reads
        // stands out; well under the log's segment size.
        memtable_bytes: 1 << 20,
        ..Options::default()
    }
}

#[test]
fn a_reopen_reads_and_holds_only_the_unflushed_tail_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let value = [7u8; 1024];
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let ns = db.namespace(crate::key::DEFAULT_NS).unwrap();
        // 16 MiB into the log's one segment, all of it flushed to tables...
        for i in 0..16_384u32 {
            ns.put(&i.to_be_bytes(), &value).unwrap();
        }
        db.flush().unwrap();
        // ...then a tail of 64 KiB that only the log holds when the database closes.
        for i in 0..64u32 {
            ns.put(format!("tail{i}").as_bytes(), &value).unwrap();
        }
    }
    reset_peak();
    let before = live_bytes();
    let db = Db::open(dir.path(), options()).unwrap();
    let most = peak_bytes() - before;
    // The segment whole would be over 16 MiB; the tail, its memtable and the table its
    // flush writes are a few MiB at most.
    assert!(most < 4 << 20, "the reopen held {most} bytes at its peak");
    let ns = db.namespace(crate::key::DEFAULT_NS).unwrap();
    for i in 0..64u32 {
        let got = ns.get(format!("tail{i}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(&value[..]), "tail{i}");
    }
    assert_eq!(
        ns.get(&7u32.to_be_bytes()).unwrap().as_deref(),
        Some(&value[..])
    );
}
