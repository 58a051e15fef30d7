//! The newest seqno of each key of one namespace in one memtable, by the hash of its pk: what
//! a query checking many index entries for newer versions of their records asks, once per
//! memtable state instead of probing the memtable (an ordered list, behind a filter sized for the
//! memtable's whole budget: a cache miss a probe) for each entry.

use crate::key::SeqNo;
use bytes::Bytes;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::ops::Range;

/// Filter bits per key: two set per key, so about 1.4 % of absent pks reach the map.
const BITS_PER_KEY: usize = 16;

/// The hash the maps are keyed by: of the pk (the user key less its namespace).
pub fn key_hash(pk: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(pk)
}

/// What the map knows of one hash: the newest seqno among the versions of the keys with it,
/// and the user key they are all of (`None` where keys' hashes collide).
pub type Newest = (SeqNo, Option<Bytes>);

/// A map of [`Newest`] by [`key_hash`], with a small filter of its hashes in front: most pks a
/// query checks have no version here, and the filter, a few KiB, says so from the cache.
#[derive(Default)]
pub struct KeyHashes {
    bits: Vec<u64>,
    map: HashMap<u64, Newest, BuildHasherDefault<HashIsKey>>,
}

impl KeyHashes {
    /// From each version's (user key, seqno), in any order; the pk is the user key past its
    /// first `skip` bytes (the namespace).
    pub fn build<'a>(versions: impl Iterator<Item = (&'a [u8], SeqNo)>, skip: usize) -> KeyHashes {
        // The keys are copied into one buffer, each a range of it, then handed out as slices
        // of it: one allocation for the map's keys, not one each.
        let mut keys = Vec::new();
        let mut ranges: HashMap<u64, (SeqNo, Option<Range<usize>>), BuildHasherDefault<HashIsKey>> =
            HashMap::default();
        for (user, seq) in versions {
            let (newest, of) = ranges
                .entry(key_hash(user.get(skip..).unwrap_or_default()))
                .or_insert_with(|| {
                    keys.extend_from_slice(user);
                    (seq, Some(keys.len() - user.len()..keys.len()))
                });
            *newest = (*newest).max(seq);
            if of.as_ref().is_some_and(|r| keys[r.clone()] != *user) {
                *of = None;
            }
        }
        let keys = Bytes::from(keys);
        let map: HashMap<u64, Newest, BuildHasherDefault<HashIsKey>> = ranges
            .into_iter()
            .map(|(h, (seq, of))| (h, (seq, of.map(|r| keys.slice(r)))))
            .collect();
        let words = match map.len() {
            0 => 0,
            n => (n * BITS_PER_KEY).next_power_of_two().div_ceil(64),
        };
        let mut out = KeyHashes {
            bits: vec![0; words],
            map,
        };
        let hashes: Vec<u64> = out.map.keys().copied().collect();
        for h in hashes {
            for bit in out.bits_of(h) {
                out.bits[bit / 64] |= 1 << (bit % 64);
            }
        }
        out
    }

    /// The two filter bits of hash `h` (two halves of it: the map's buckets use its top bits).
    fn bits_of(&self, h: u64) -> [usize; 2] {
        let mask = (self.bits.len() * 64 - 1) as u64;
        [(h & mask) as usize, ((h >> 32) & mask) as usize]
    }

    /// What the map holds under hash `h`, if anything.
    pub fn get(&self, h: u64) -> Option<&Newest> {
        if self.bits.is_empty() {
            return None;
        }
        let set = |bit: usize| self.bits[bit / 64] & (1 << (bit % 64)) != 0;
        let [a, b] = self.bits_of(h);
        if !(set(a) && set(b)) {
            return None;
        }
        self.map.get(&h)
    }
}

/// A `Hasher` for keys that are hashes already: the key itself.
#[derive(Default)]
pub struct HashIsKey(u64);

impl std::hash::Hasher for HashIsKey {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; any other input still hashes to something sound.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_found_with_its_newest_seqno_and_absent_ones_mostly_filtered() {
        let users: Vec<Bytes> = (0..2000u32)
            .map(|i| Bytes::from(format!("ns{i:06}")))
            .collect();
        let versions = users.iter().flat_map(|u| [(&u[..], 5), (&u[..], 9)]);
        let k = KeyHashes::build(versions, 2);
        for u in &users {
            let (seq, of) = k.get(key_hash(&u[2..])).expect("present");
            assert_eq!((*seq, of.as_ref()), (9, Some(u)));
        }
        let reached = (0..10_000u32)
            .filter(|i| k.get(key_hash(format!("x{i}").as_bytes())).is_some())
            .count();
        assert_eq!(reached, 0, "an absent key found in the map");
        assert!(KeyHashes::build(std::iter::empty(), 0).get(7).is_none());
    }

    #[test]
    fn keys_whose_hashes_collide_keep_the_newest_seqno_and_no_key() {
        // Two user keys with the same pk part hash alike: as a collision does.
        let (a, b): (&[u8], &[u8]) = (b"1-pk", b"2-pk");
        let k = KeyHashes::build([(a, 3), (b, 8)].into_iter(), 2);
        assert_eq!(k.get(key_hash(b"pk")), Some(&(8, None)));
    }
}
