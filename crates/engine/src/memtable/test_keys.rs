//! Keys for the memtable's order tests.

use crate::key::SeqNo;

/// A xorshift generator seeded with `s` (not zero).
pub(super) fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// 2,000 user keys of 0-39 bytes drawn from 0, 1 and 0xff (short and long keys, zero bytes,
/// prefixes of each other, on both sides of the 24 bytes a search compares as words), each
/// at seqno 1 and at another of 0-3, unsorted.
pub(super) fn awkward_keys() -> Vec<(Vec<u8>, SeqNo)> {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    let mut keys = Vec::new();
    for _ in 0..2_000 {
        let len = (next() % 40) as usize;
        let user: Vec<u8> = (0..len)
            .map(|_| [0u8, 1, 0xff][next() as usize % 3])
            .collect();
        for seq in [1, next() % 4] {
            keys.push((user.clone(), seq));
        }
    }
    keys
}

/// Memtable order: user key ascending, then seqno descending.
pub(super) fn order(a: &(Vec<u8>, SeqNo), b: &(Vec<u8>, SeqNo)) -> std::cmp::Ordering {
    a.0.cmp(&b.0).then(b.1.cmp(&a.1))
}
