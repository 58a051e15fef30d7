//! The memtable's key filter: a blocked Bloom filter over the user keys it holds. Once the
//! data outgrows the memtable most gets look for keys it does not hold, and the list's
//! search to find that out is several cache misses; the filter answers with one.

use crate::bloom::{self, BitsInBlock};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bytes of memtable budget per filter bit at most (the filter is then 1/64 of the budget):
/// an entry is charged at least `entry::LEAST_FOOTPRINT` bytes, so a full memtable has more
/// than 8 bits per key (under 5 % false positives, tested).
const BUDGET_BYTES_PER_BIT: usize = 8;
/// The least filter, in budget bytes per bit (1/1024 of the budget).
const BUDGET_BYTES_PER_BIT_LEAST: usize = 128;
/// Bits per key of a filter sized for the entries a memtable is expected to hold.
const BITS_PER_EXPECTED_KEY: usize = 12;
/// Bits set per key, all in one 64-byte block (one cache line read per probe).
const PROBES: u32 = 6;

#[repr(align(64))]
struct FilterBlock([AtomicU64; 8]);

pub(super) struct KeyFilter {
    blocks: Box<[FilterBlock]>,
}

impl KeyFilter {
    /// A filter for a memtable of `budget` bytes expected to hold `expected` entries when
    /// full, or any number up to the budget's worst case when that is not known.
    ///
    /// Sized for the worst case (the smallest entries) a 64 MiB memtable's filter is 1 MiB;
    /// with 1 KiB values that is over 130 bits a key, and a probe into it misses every
    /// cache a get's other reads leave room for (a sixth of a get's time in readrandom).
    /// Sized for the entries foreseen it stays small enough to be found in the cache. If the
    /// entries turn out smaller, the filter answers wrongly "maybe" more often (a search of
    /// the list each), never wrongly "no".
    pub(super) fn new(budget: usize, expected: Option<usize>) -> KeyFilter {
        let most = budget / BUDGET_BYTES_PER_BIT;
        let bits = match expected {
            Some(n) => n
                .saturating_mul(BITS_PER_EXPECTED_KEY)
                .clamp(budget / BUDGET_BYTES_PER_BIT_LEAST, most),
            None => most,
        };
        let n = (bits / bloom::BLOCK_BITS).max(1);
        KeyFilter {
            blocks: (0..n).map(|_| FilterBlock(Default::default())).collect(),
        }
    }

    /// The block of a key of xxh3 `h`, and the bits of it the key sets.
    fn locate(&self, h: u64) -> (&FilterBlock, BitsInBlock) {
        let (block, bits) = bloom::locate(h, self.blocks.len(), PROBES);
        (&self.blocks[block], bits)
    }

    /// Adds the key whose xxh3 is `hash` (the memtable hashes it once for this and its
    /// samples).
    pub(super) fn insert(&self, hash: u64) {
        let (b, bits) = self.locate(hash);
        for bit in bits {
            b.0[bit / 64].fetch_or(1 << (bit % 64), Relaxed);
        }
    }

    /// Whether the key whose xxh3 is `hash` may be here.
    pub(super) fn may_contain(&self, hash: u64) -> bool {
        let (b, mut bits) = self.locate(hash);
        bits.all(|bit| b.0[bit / 64].load(Relaxed) & (1 << (bit % 64)) != 0)
    }

    /// Its size in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<FilterBlock>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inserts keys `0..n`; how many of 100,000 others it says it may hold (none of `0..n`
    /// may be missed).
    fn lies_after(f: &KeyFilter, n: u64) -> usize {
        for i in 0..n {
            f.insert(xxhash_rust::xxh3::xxh3_64(&i.to_be_bytes()));
        }
        let may = |i: u64| f.may_contain(xxhash_rust::xxh3::xxh3_64(&i.to_be_bytes()));
        assert!((0..n).all(may));
        (n..n + 100_000).filter(|&i| may(i)).count()
    }

    #[test]
    fn key_filter_never_misses_and_rarely_lies() {
        // At the budget's worst case (empty values and keys, each entry charged the least
        // an entry takes): 12 bits per key.
        let keys = (1 << 20) / super::super::entry::LEAST_FOOTPRINT;
        let lies = lies_after(&KeyFilter::new(1 << 20, None), keys as u64);
        assert!(lies < 5_000, "{lies} false positives in 100,000");
    }

    #[test]
    fn a_filter_sized_for_the_entries_foreseen_is_small_and_rarely_lies() {
        // A 64 MiB memtable of 1 KiB values: about 60,000 entries.
        let (budget, keys) = (64 << 20, 60_000);
        let f = KeyFilter::new(budget, Some(keys));
        let worst = KeyFilter::new(budget, None);
        assert!(
            f.bytes() * 8 < worst.bytes(),
            "{} of {}",
            f.bytes(),
            worst.bytes()
        );
        let lies = lies_after(&f, keys as u64);
        assert!(lies < 2_000, "{lies} false positives in 100,000");
        // Never under the least size, never over the worst case's.
        assert_eq!(KeyFilter::new(budget, Some(1)).bytes(), budget / 1024);
        assert_eq!(
            KeyFilter::new(budget, Some(usize::MAX)).bytes(),
            worst.bytes()
        );
    }

    #[test]
    fn a_filter_given_more_entries_than_foreseen_still_never_misses() {
        let f = KeyFilter::new(64 << 20, Some(10_000));
        lies_after(&f, 200_000);
    }
}
