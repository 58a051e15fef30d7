//! Bloom filter over the `nsid ++ user key` parts of a table's keys.
//! Layout: `bits (m/8 bytes) ++ k (u8)`; probes use double hashing of one xxh3 hash.

use xxhash_rust::xxh3::xxh3_64;

#[inline]
pub fn filter_hash(user: &[u8]) -> u64 {
    xxh3_64(user)
}

pub fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let bits = (hashes.len() * bits_per_key as usize).max(64);
    let bytes = bits.div_ceil(8);
    let bits = bytes * 8;
    let k = ((bits_per_key as f64 * 0.69) as u8).clamp(1, 30);
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

/// Whether the key with this hash may be in the set. Malformed filters say "maybe".
#[inline]
pub fn may_contain(filter: &[u8], hash: u64) -> bool {
    let Some((&k, bits)) = filter.split_last() else {
        return true;
    };
    if bits.is_empty() || k == 0 || k > 30 {
        return true;
    }
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

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let hashes: Vec<u64> = (0..10_000u32)
            .map(|i| filter_hash(&i.to_le_bytes()))
            .collect();
        let f = build(&hashes, 10);
        assert!(hashes.iter().all(|&h| may_contain(&f, h)));
        let fp = (10_000..110_000u32)
            .filter(|i| may_contain(&f, filter_hash(&i.to_le_bytes())))
            .count();
        assert!(fp < 2_000, "false positive rate too high: {fp}/100000");
    }
}
