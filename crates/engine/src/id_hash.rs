//! The hash of the engine's caches and maps whose keys are numbers the engine makes (table
//! and segment ids, block offsets, namespace ids), never a client's bytes: a multiply per
//! word and a final mix, in place of ahash (the caches' default), which brought zerocopy and
//! its derive macro into every build, and of SipHash.

use std::hash::{BuildHasherDefault, Hasher};

/// Builds [`IdHasher`]s.
pub type IdHash = BuildHasherDefault<IdHasher>;

#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(23) ^ n).wrapping_mul(K);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    /// Every bit of the words reaches every bit of the hash (murmur3's finaliser): the caches
    /// pick shards and slots from different bits, and offsets are multiples of 4 KiB.
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash(v: impl Hash) -> u64 {
        IdHash::default().hash_one(v)
    }

    #[test]
    fn block_offsets_spread_over_low_and_high_bits() {
        let hashes: Vec<u64> = (0..4096u64).map(|i| hash((7u64, i * 4096))).collect();
        for bits in [0u32, 20, 50] {
            let mut seen = std::collections::HashSet::new();
            for h in &hashes {
                seen.insert((h >> bits) & 0xff);
            }
            assert!(seen.len() > 240, "bits from {bits}: {} of 256", seen.len());
        }
        assert_ne!(hash((1u64, 2u64)), hash((2u64, 1u64)));
    }
}
