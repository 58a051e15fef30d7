//! Bloom filter over the `nsid ++ user key` parts of a table's keys, one xxh3 hash a key.
//!
//! Two layouts, told apart by the last byte (`docs/format.md`, Filter):
//! - blocked, written now: `blocks (64 bytes each) ++ (BLOCKED | k)`. A key's `k` bits all lie
//!   in one block (`crate::bloom`), so a probe reads one block, not `k` lines anywhere in the
//!   filter: a get that passes L0's tables and a level's probes one line per table.
//! - classic, in tables written before: `bits ++ k` (k at most 30), its bits anywhere.
//!
//! Malformed filters say "maybe", and so does a reader that predates the blocked layout: its
//! last byte is above 30, so old binaries read new tables right, only without the filter.

use crate::bloom::{self, BLOCK_BYTES};
use xxhash_rust::xxh3::xxh3_64;

/// The last byte of a blocked filter is this plus its `k`.
const BLOCKED: u8 = 0x40;
/// Most bits a key sets.
const MAX_K: u8 = 30;

#[inline]
pub fn filter_hash(user: &[u8]) -> u64 {
    xxh3_64(user)
}

/// A blocked filter of about `bits_per_key` bits for each hash (at least one block).
pub fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let bits = hashes.len().saturating_mul(bits_per_key as usize);
    let blocks = bits.div_ceil(bloom::BLOCK_BITS).max(1);
    let k = probes(bits_per_key);
    let mut out = vec![0u8; blocks * BLOCK_BYTES + 1];
    for &h in hashes {
        let (block, bits) = bloom::locate(h, blocks, u32::from(k));
        let block = &mut out[block * BLOCK_BYTES..][..BLOCK_BYTES];
        for bit in bits {
            block[bit / 8] |= 1 << (bit % 8);
        }
    }
    out[blocks * BLOCK_BYTES] = BLOCKED | k;
    out
}

/// Bits a key sets for `bits_per_key` bits a key (`ln 2` of them, rounded down).
fn probes(bits_per_key: u32) -> u8 {
    ((bits_per_key as f64 * 0.69) as u8).clamp(1, MAX_K)
}

/// A filter's bytes, read by their last byte.
enum Layout<'a> {
    /// Whole 64-byte blocks (at least one) and the bits a key sets.
    Blocked(&'a [u8], u8),
    /// Bits anywhere (at least one byte) and the bits a key sets.
    Classic(&'a [u8], u8),
    /// Anything else: the filter says "maybe".
    Malformed,
}

fn layout(filter: &[u8]) -> Layout<'_> {
    let Some((&tag, body)) = filter.split_last() else {
        return Layout::Malformed;
    };
    match tag {
        t if t > BLOCKED && t <= BLOCKED + MAX_K => {
            match !body.is_empty() && body.len().is_multiple_of(BLOCK_BYTES) {
                true => Layout::Blocked(body, t - BLOCKED),
                false => Layout::Malformed,
            }
        }
        1..=MAX_K if !body.is_empty() => Layout::Classic(body, tag),
        _ => Layout::Malformed,
    }
}

/// The block of a blocked filter's `body` the key of `hash` lies in, and its bits there
/// (always found: `locate` picks a block below the count).
fn block_of(body: &[u8], k: u8, hash: u64) -> Option<(&[u8; BLOCK_BYTES], bloom::BitsInBlock)> {
    let (block, bits) = bloom::locate(hash, body.len() / BLOCK_BYTES, u32::from(k));
    Some((body.get(block * BLOCK_BYTES..)?.first_chunk()?, bits))
}

/// Whether the key with this hash may be in the set. Malformed filters say "maybe".
#[inline]
pub fn may_contain(filter: &[u8], hash: u64) -> bool {
    match layout(filter) {
        Layout::Blocked(body, k) => match block_of(body, k, hash) {
            Some((block, mut bits)) => bits.all(|bit| block[bit / 8] & (1 << (bit % 8)) != 0),
            None => true,
        },
        Layout::Classic(bits, k) => classic_may_contain(bits, k, hash),
        Layout::Malformed => true,
    }
}

/// Asks for the block of a blocked filter the key of `hash` would be in, ahead of
/// [`may_contain`]: a get asks it of every table it may probe before the first probe, so that
/// their cache misses overlap instead of coming one after another. Classic filters are not
/// asked for (their bits are anywhere).
#[inline]
pub fn prefetch(filter: &[u8], hash: u64) {
    if let Layout::Blocked(body, k) = layout(filter) {
        if let Some((block, _)) = block_of(body, k, hash) {
            bloom::prefetch(block);
        }
    }
}

/// The layout of tables written before the blocked one: `k` bits by double hashing over the
/// whole filter.
fn classic_may_contain(bits: &[u8], k: u8, hash: u64) -> bool {
    let nbits = bits.len() * 8;
    let (mut h1, h2) = (hash as u32, (hash >> 32) as u32 | 1);
    for _ in 0..k {
        let bit = h1 as usize % nbits;
        if bits[bit / 8] & (1 << (bit % 8)) == 0 {
            return false;
        }
        h1 = h1.wrapping_add(h2);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(range: std::ops::Range<u32>) -> Vec<u64> {
        range.map(|i| filter_hash(&i.to_le_bytes())).collect()
    }

    /// False positives of `f` (over keys `0..n`) among 100,000 other keys.
    fn lies(f: &[u8], n: u32) -> usize {
        assert!(hashes(0..n).iter().all(|&h| may_contain(f, h)));
        hashes(n..n + 100_000)
            .iter()
            .filter(|&&h| may_contain(f, h))
            .count()
    }

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        for n in [1, 100, 10_000, 200_000] {
            let f = build(&hashes(0..n), 10);
            assert_eq!(f.len() % BLOCK_BYTES, 1);
            let fp = lies(&f, n);
            // About 1 % at 10 bits a key (a classic filter's 0.8 %, its bits anywhere).
            assert!(fp < 2_000, "{n} keys: {fp}/100000 false positives");
        }
        // More bits a key, fewer lies; fewer bits, more, still bounded.
        let n = 10_000;
        assert!(lies(&build(&hashes(0..n), 16), n) < 150);
        assert!(lies(&build(&hashes(0..n), 20), n) < 50);
        assert!(lies(&build(&hashes(0..n), 4), n) < 20_000);
    }

    /// The classic layout, as tables written before the blocked one hold it.
    fn build_classic(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
        let bytes = (hashes.len() * bits_per_key as usize).max(64).div_ceil(8);
        let bits = bytes * 8;
        let k = probes(bits_per_key);
        let mut out = vec![0u8; bytes + 1];
        for &h in hashes {
            let (mut h1, h2) = (h as u32, (h >> 32) as u32 | 1);
            for _ in 0..k {
                let bit = h1 as usize % bits;
                out[bit / 8] |= 1 << (bit % 8);
                h1 = h1.wrapping_add(h2);
            }
        }
        out[bytes] = k;
        out
    }

    #[test]
    fn classic_filters_of_older_tables_still_answer() {
        let n = 10_000;
        let fp = lies(&build_classic(&hashes(0..n), 10), n);
        assert!(fp < 2_000, "{fp}/100000 false positives");
    }

    #[test]
    fn malformed_filters_say_maybe() {
        let h = filter_hash(b"k");
        assert!(may_contain(&[], h));
        assert!(may_contain(&[0], h));
        assert!(may_contain(&[0xff; 65], h));
        // A blocked tag over a body that is not whole blocks, or no block at all.
        assert!(may_contain(&[0u8; 64 + 3], h));
        assert!(may_contain(&[BLOCKED | 6], h));
        let mut ragged = vec![0u8; 70];
        ragged.push(BLOCKED | 6);
        assert!(may_contain(&ragged, h));
        // k past 30 in either layout.
        let mut wide = vec![0u8; 64];
        wide.push(BLOCKED | 31);
        assert!(may_contain(&wide, h));
        assert!(may_contain(&[0, 0, 0, 31], h));
        // An empty blocked filter (no key set) says no.
        let mut empty = vec![0u8; 64];
        empty.push(BLOCKED | 6);
        assert!(!may_contain(&empty, h));
    }
}
