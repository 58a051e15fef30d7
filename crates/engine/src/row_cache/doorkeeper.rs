//! Admission to the row cache on a key's second miss (TinyLFU's doorkeeper): the first miss
//! of a key only sets its bit here; a miss of a key whose bit is set is cached. A pass over
//! many keys, each read once (a scan by gets, a uniform load larger than the cache), then
//! costs a bit per miss instead of a copy, a shard's write lock and an eviction, and pushes
//! out nothing a hot key had earned; a key read twice within the window is cached.
//!
//! One bit per key hash in a set of atomic words, no lock: eight bits per entry the cache
//! holds, at most 1 MiB. The set is cleared whole once an eighth of its bits are set (a
//! window of about one cache's worth of first misses, a million at most), so a key never
//! seen passes as seen (a hash sharing its bit) at most one time in eight. Clearing races
//! with setting: a bit set during a clear may be lost (that key is cached a miss later) and
//! the count of bits set may drift by the racing few; both only move when a value is
//! cached, never what a get answers.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits per entry the cache can hold.
const BITS_PER_ENTRY: u64 = 8;
/// The fewest bits kept, so a small cache still remembers a few thousand misses.
const MIN_BITS: u64 = 1 << 12;
/// The most (1 MiB, what the device's default 256 MiB cache takes): a larger cache keeps a
/// window of a million first misses, not one of its own size. The set is allocated whole at
/// open and cleared whole inside a miss, so neither grows with the cache's budget.
const MAX_BITS: u64 = 1 << 23;

pub(super) struct Doorkeeper {
    words: Box<[AtomicU64]>,
    /// `words.len() * 64 - 1` (a power of two minus one).
    mask: u64,
    /// Bits set since the last clear.
    set: AtomicU64,
    /// Clear when `set` reaches this.
    limit: u64,
    /// First misses so far (a counter of its own: one derived from `set` would go down
    /// for a moment at each clear, and a Prometheus counter must never).
    deferred: AtomicU64,
}

impl Doorkeeper {
    /// A doorkeeper for a cache of about `entries` entries.
    pub(super) fn new(entries: u64) -> Doorkeeper {
        let bits = entries
            .max(1)
            .saturating_mul(BITS_PER_ENTRY)
            .clamp(MIN_BITS, MAX_BITS)
            .next_power_of_two();
        Doorkeeper {
            words: (0..bits / 64).map(|_| AtomicU64::new(0)).collect(),
            mask: bits - 1,
            set: AtomicU64::new(0),
            limit: bits / BITS_PER_ENTRY,
            deferred: AtomicU64::new(0),
        }
    }

    /// Whether `hash` missed before (since the last clear); marks it as having missed.
    pub(super) fn seen(&self, hash: u64) -> bool {
        // Bits 8 and up: the shard takes the high ones and the fences the lowest eight,
        // but a doorkeeper shared by all shards must spread over every hash.
        let bit = hash.rotate_right(8) & self.mask;
        let word = &self.words[(bit / 64) as usize];
        let mask = 1u64 << (bit % 64);
        // A plain load first: a key missed twice finds its bit without a write.
        if word.load(Ordering::Relaxed) & mask != 0 {
            return true;
        }
        if word.fetch_or(mask, Ordering::Relaxed) & mask != 0 {
            return true;
        }
        self.deferred.fetch_add(1, Ordering::Relaxed);
        if self.set.fetch_add(1, Ordering::Relaxed) + 1 >= self.limit {
            self.clear();
        }
        false
    }

    fn clear(&self) {
        self.set.store(0, Ordering::Relaxed);
        for w in self.words.iter() {
            w.store(0, Ordering::Relaxed);
        }
    }

    /// First misses so far: values read and not cached because their key had not missed
    /// since the last clear.
    pub(super) fn deferred(&self) -> u64 {
        self.deferred.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_hash_is_seen_the_second_time() {
        let d = Doorkeeper::new(1000);
        assert!(!d.seen(42));
        assert!(d.seen(42));
        assert!(d.seen(42));
        assert_eq!(d.deferred(), 1);
    }

    #[test]
    fn clears_after_a_cache_worth_of_first_misses_and_counts_them_all() {
        let d = Doorkeeper::new(1000);
        let limit = d.limit;
        assert!(limit >= 1000);
        // Distinct bits: multiples of 256 rotate to consecutive bits.
        let h = |i: u64| i << 8;
        for i in 0..limit - 1 {
            assert!(!d.seen(h(i)), "{i}");
        }
        assert!(d.seen(h(0)), "before the clear");
        assert!(!d.seen(h(limit - 1)), "the bit that reaches the limit");
        assert!(!d.seen(h(0)), "after the clear");
        assert_eq!(d.deferred(), limit + 1);
    }

    #[test]
    fn few_unseen_hashes_pass_as_seen() {
        let d = Doorkeeper::new(10_000);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Fill to just under the clear, then probe fresh hashes.
        for _ in 0..d.limit / 2 {
            d.seen(next());
        }
        // From 1 in 16 of the bits set to about 1 in 13 (8 bits an entry, the limit half
        // reached): some 140 of 2,000 expected.
        let false_seen = (0..2_000).filter(|_| d.seen(next())).count();
        assert!(false_seen < 250, "{false_seen}");
    }

    #[test]
    fn its_size_is_bounded_whatever_the_cache() {
        assert_eq!(Doorkeeper::new(0).words.len() as u64 * 64, MIN_BITS);
        assert_eq!(Doorkeeper::new(u64::MAX).words.len() as u64 * 64, MAX_BITS);
        assert_eq!(Doorkeeper::new(1 << 20).words.len() as u64 * 64, 1 << 23);
    }

    /// `deferred` backs a Prometheus counter: it never goes down while clears happen (the
    /// smallest doorkeeper clears every 512 first misses).
    #[test]
    fn deferred_never_goes_down() {
        let d = Doorkeeper::new(0);
        let stop = AtomicBool::new(false);
        let mut fell = None;
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    d.seen(i << 8);
                    i += 1;
                }
            });
            let mut last = 0;
            while d.deferred() < 5_000_000 {
                let now = d.deferred();
                if now < last {
                    fell = Some((last, now));
                    break;
                }
                last = now;
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(fell, None, "deferred went down (from, to)");
    }
}
