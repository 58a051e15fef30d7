//! What the memtable's budget counts for puts, against what the write path allocated for
//! them (the unit tests' allocator counts each thread's bytes).

use crate::test_alloc::live_bytes;
use crate::{Db, Options};

/// Bytes the memtable's budget counted for `n` puts and bytes this thread allocated for them
/// (a writer alone leads its own groups: every allocation of its puts is its own).
fn counted_and_allocated(n: u64, key_len: usize, value_len: usize) -> (usize, isize) {
    let dir = tempfile::tempdir().unwrap();
    // Room for every put: no freeze, no flush.
    let o = Options {
        memtable_bytes: 256 << 20,
        memtable_max_entries: 0,
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).unwrap();
    let ns = db.namespace(crate::key::DEFAULT_NS).unwrap();
    let value = vec![b'v'; value_len];
    // The first put's allocations that last (the thread's record chunk, counters).
    ns.put(b"-", &value).unwrap();
    let mem = || db.inner.versions.super_version().mem.approximate_bytes();
    let (counted, live) = (mem(), live_bytes());
    for i in 0..n {
        let key = format!("{:0key_len$}", i * 7_919 % n);
        ns.put(key.as_bytes(), &value).unwrap();
    }
    let allocated = live_bytes() - live;
    (mem() - counted, allocated)
}

#[test]
fn the_memtable_budget_counts_what_puts_take_in_memory() {
    // Empty and small values (where the entries' own bytes are most of it) to 1 KiB; keys
    // shorter and longer than the search tree's heads.
    for (key_len, value_len) in [(8, 0), (16, 32), (16, 100), (40, 1024)] {
        let (counted, allocated) = counted_and_allocated(40_000, key_len, value_len);
        let ratio = counted as f64 / allocated as f64;
        // Within what the allocator's rounding, the key samples and the unused rest of the
        // thread's record chunk leave out, and never far over.
        assert!(
            (0.95..1.25).contains(&ratio),
            "keys of {key_len} B, values of {value_len} B: {counted} bytes counted, \
             {allocated} allocated"
        );
    }
}
