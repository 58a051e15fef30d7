//! Where a key's bits go in a blocked Bloom filter: every bit of a key in one 64-byte block,
//! so that a probe reads one block (one cache line when the block is aligned) instead of a
//! line per bit anywhere in the filter. The memtable's key filter and the tables' filters
//! share it; each keeps its bits its own way.

/// Bits of a block.
pub const BLOCK_BITS: usize = 512;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = BLOCK_BITS / 8;

/// Mixes the hash for the bits in a block: an odd constant, so that every hash gives other bits.
const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
/// Bit positions taken from one mixed word (9 bits each) before it is mixed again.
const PER_WORD: u32 = 64 / 9;

/// The block of `blocks` a key of 64-bit hash `h` goes to (its high bits decide), and the
/// `k` bit positions in that block (below [`BLOCK_BITS`]) its other bits decide.
#[inline]
pub fn locate(h: u64, blocks: usize, k: u32) -> (usize, BitsInBlock) {
    let block = ((u128::from(h) * blocks as u128) >> 64) as usize;
    let state = h.wrapping_mul(MIX);
    let bits = BitsInBlock {
        state,
        word: state,
        left: k,
        in_word: PER_WORD,
    };
    (block, bits)
}

/// The bit positions of a key in its block, one by one.
pub struct BitsInBlock {
    /// The mixed hash the current word came from: the next word is mixed from all of it.
    state: u64,
    /// What is left of the current word (9 bits taken a position).
    word: u64,
    left: u32,
    in_word: u32,
}

impl Iterator for BitsInBlock {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        if self.in_word == 0 {
            // From the whole state, not from what the shifts left of the word (a bit or two).
            self.state = (self.state ^ (self.state >> 32)).wrapping_mul(MIX);
            self.word = self.state;
            self.in_word = PER_WORD;
        }
        let bit = (self.word % BLOCK_BITS as u64) as usize;
        self.word >>= 9;
        self.in_word -= 1;
        self.left -= 1;
        Some(bit)
    }
}

/// Asks for the cache lines `bytes` starts and ends on, ahead of their use (both: a block or
/// slot the allocator did not align to a line spans two). A hint that reads nothing the
/// program sees and cannot fault.
#[inline]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(first), Some(last)) = (bytes.first(), bytes.last()) {
        for at in [first, last] {
            // SAFETY: a prefetch is a hint; the address is a live reference anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    std::ptr::from_ref(at).cast(),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_spread_and_bits_stay_in_their_block() {
        let blocks = 1000;
        let mut seen = vec![0u32; blocks];
        for i in 0..100_000u64 {
            let h = xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes());
            let (b, bits) = locate(h, blocks, 20);
            seen[b] += 1;
            let bits: Vec<usize> = bits.collect();
            assert_eq!(bits.len(), 20);
            assert!(bits.iter().all(|&bit| bit < BLOCK_BITS));
        }
        // 100 a block on average: none far from it.
        assert!(seen.iter().all(|&n| (50..200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn bits_past_the_first_word_differ_between_keys() {
        // The 8th to 14th bits come from a word mixed again: as varied as the first 7.
        let patterns = |from: usize| {
            let mut seen = std::collections::HashSet::new();
            for i in 0..1000u64 {
                let h = xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes());
                let bits: Vec<usize> = locate(h, 1, 14).1.skip(from).take(7).collect();
                seen.insert(bits);
            }
            seen.len()
        };
        assert!(patterns(0) > 990);
        assert!(patterns(7) > 990, "{} patterns", patterns(7));
    }
}
