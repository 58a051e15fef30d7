//! A sample of the memtable's keys, about one in [`SAMPLE_EVERY`], kept in order: where a walk
//! of an index in pieces may cut the memtable's entries, as a table's block ends cut its own
//! (`db/piece_bounds.rs`). Without them, a walk from the top of a range had to gather every
//! memtable entry of the range above the highest table bound before visiting one.
//!
//! A key is sampled by its hash under a seed drawn for each memtable, so which keys are taken
//! cannot be chosen by a writer (one spacing its keys to leave no sample in a range would make
//! a piece as large as the memtable), and every version of a key gives the same answer (a
//! rewritten key is sampled once, or never). The seed goes into the hash itself: keys that
//! collide under the unseeded xxh3 (easily made for keys past 240 bytes) were sampled all
//! together or not at all when the seed only mixed that hash (a review's finding: 40,000
//! such index entries in a range, none sampled, gathered whole by a top 5 charged 5 units).
//! Between two samples there are about `SAMPLE_EVERY` distinct keys, a few times that at
//! most over a whole memtable.

use bytes::Bytes;
use crossbeam_skiplist::SkipSet;
use std::ops::Bound;

use crate::key::{Nsid, NSID_LEN};

/// One distinct key in this many is sampled, on average.
const SAMPLE_EVERY: u64 = 64;

pub(super) struct KeySamples {
    keys: SkipSet<Bytes>,
    seed: u64,
}

impl KeySamples {
    pub(super) fn new() -> KeySamples {
        use std::hash::BuildHasher;
        KeySamples {
            keys: SkipSet::new(),
            seed: std::collections::hash_map::RandomState::new().hash_one(0u64),
        }
    }

    /// Keeps `user` (a memtable key: `nsid ++ key`) if it is sampled.
    pub(super) fn offer(&self, user: &[u8]) {
        let hash = xxhash_rust::xxh3::xxh3_64_with_seed(user, self.seed);
        if hash.is_multiple_of(SAMPLE_EVERY) {
            self.keys.insert(Bytes::copy_from_slice(user));
        }
    }

    /// The sampled keys of namespace `ns` (without it) in `[start, end)`, in order: the
    /// `n` nearest its end (`from_top`) or its start.
    pub(super) fn within(
        &self,
        ns: Nsid,
        start: &[u8],
        end: Option<&[u8]>,
        from_top: bool,
        n: usize,
    ) -> Vec<Vec<u8>> {
        let prefix = ns.to_be_bytes();
        let lo = [&prefix[..], start].concat();
        // The end of the range, or of the namespace: the next nsid.
        let hi = match end {
            Some(e) => [&prefix[..], e].concat(),
            None => match ns.checked_add(1) {
                Some(next) => next.to_be_bytes().to_vec(),
                None => Vec::new(),
            },
        };
        let hi_bound = match hi.is_empty() {
            true => Bound::Unbounded,
            false => Bound::Excluded(hi.as_slice()),
        };
        let range = self
            .keys
            .range::<[u8], _>((Bound::Included(lo.as_slice()), hi_bound));
        let key = |e: crossbeam_skiplist::set::Entry<'_, Bytes>| e.value()[NSID_LEN..].to_vec();
        match from_top {
            false => range.take(n).map(key).collect(),
            true => {
                let mut out: Vec<Vec<u8>> = range.rev().take(n).map(key).collect();
                out.reverse();
                out
            }
        }
    }

    /// Keys sampled.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: Nsid, i: u32) -> Bytes {
        let mut k = ns.to_be_bytes().to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        Bytes::from(k)
    }

    fn offer_all(s: &KeySamples, ns: Nsid, n: u32) {
        for i in 0..n {
            let k = key(ns, i);
            s.offer(&k);
        }
    }

    #[test]
    fn about_one_key_in_sample_every_is_kept_and_gaps_stay_small() {
        let s = KeySamples::new();
        offer_all(&s, 7, 100_000);
        let n = s.len() as u64;
        let expected = 100_000 / SAMPLE_EVERY;
        assert!(n > expected / 2 && n < expected * 2, "{n} of {expected}");
        let got = s.within(7, &[], None, false, usize::MAX);
        assert_eq!(got.len() as u64, n);
        let at = |k: &[u8]| u32::from_be_bytes(k.try_into().unwrap());
        let widest = got.windows(2).map(|w| at(&w[1]) - at(&w[0])).max().unwrap();
        // Geometric gaps: the widest of ~1,500 is about 64 x ln(1,500) = 470.
        assert!(widest < 64 * 20, "a gap of {widest} keys");
        // Versions of a key answer alike: offered again, nothing new is kept.
        offer_all(&s, 7, 100_000);
        assert_eq!(s.len() as u64, n);
    }

    #[test]
    fn within_keeps_to_its_namespace_range_and_end() {
        let s = KeySamples::new();
        for ns in [6, 7, 8] {
            offer_all(&s, ns, 20_000);
        }
        let all = s.within(7, &[], None, false, usize::MAX);
        assert!(all.len() > 100);
        let at = |k: &[u8]| u32::from_be_bytes(k.try_into().unwrap());
        let (start, end) = (5_000u32.to_be_bytes(), 9_000u32.to_be_bytes());
        let inside = s.within(7, &start, Some(&end), false, usize::MAX);
        assert!(inside.iter().all(|k| (5_000..9_000).contains(&at(k))));
        let expected: Vec<_> = all
            .iter()
            .filter(|k| (5_000..9_000).contains(&at(k)))
            .cloned()
            .collect();
        assert_eq!(inside, expected);
        let first = s.within(7, &start, Some(&end), false, 3);
        assert_eq!(first, expected[..3]);
        let last = s.within(7, &start, Some(&end), true, 3);
        assert_eq!(last, expected[expected.len() - 3..]);
        // The last namespace's range has no next nsid to end at.
        let s = KeySamples::new();
        offer_all(&s, Nsid::MAX, 5_000);
        assert!(!s.within(Nsid::MAX, &[], None, false, usize::MAX).is_empty());
    }

    #[test]
    fn two_memtables_sample_different_keys() {
        let (a, b) = (KeySamples::new(), KeySamples::new());
        offer_all(&a, 1, 10_000);
        offer_all(&b, 1, 10_000);
        assert_ne!(
            a.within(1, &[], None, false, usize::MAX),
            b.within(1, &[], None, false, usize::MAX)
        );
    }
}
