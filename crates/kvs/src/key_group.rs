//! The key group filter: a key belongs when its first 4 bytes, masked, equal the pattern
//! masked (byte by byte; a shorter key reads as zero past its end). The leading bytes the
//! mask takes whole are a key prefix the device filters itself.

use crate::ffi_types::KvsKeyGroupFilter;

/// A key group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyGroup {
    mask: [u8; 4],
    pattern: [u8; 4],
}

impl KeyGroup {
    /// The group `f` names.
    pub fn new(f: &KvsKeyGroupFilter) -> KeyGroup {
        KeyGroup {
            mask: f.bitmask,
            pattern: f.bit_pattern,
        }
    }

    /// Whether `key` belongs.
    pub fn matches(&self, key: &[u8]) -> bool {
        (0..4).all(|i| {
            let b = key.get(i).copied().unwrap_or(0);
            b & self.mask[i] == self.pattern[i] & self.mask[i]
        })
    }

    /// The prefix every key of the group starts with: the pattern's bytes under the
    /// leading run of full mask bytes.
    pub fn prefix(&self) -> Vec<u8> {
        self.mask
            .iter()
            .zip(self.pattern)
            .take_while(|(m, _)| **m == 0xff)
            .map(|(_, p)| p)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(mask: [u8; 4], pattern: [u8; 4]) -> KeyGroup {
        KeyGroup::new(&KvsKeyGroupFilter {
            bitmask: mask,
            bit_pattern: pattern,
        })
    }

    #[test]
    fn masked_bytes_must_equal_the_pattern() {
        let g = group([0xff, 0xff, 0, 0], *b"0000");
        assert!(g.matches(b"00123"));
        assert!(g.matches(b"00"));
        assert!(!g.matches(b"01234"));
        assert!(!g.matches(b"0"));
        assert_eq!(g.prefix(), b"00");
    }

    #[test]
    fn partial_masks_compare_bits() {
        let g = group([0xf0, 0, 0, 0x01], [0x30, 0, 0, 0x01]);
        assert!(g.matches(&[0x3a, 9, 9, 0x03]));
        assert!(!g.matches(&[0x4a, 9, 9, 0x03]));
        assert!(!g.matches(&[0x3a, 9, 9, 0x02]));
        assert!(g.prefix().is_empty());
    }

    #[test]
    fn an_empty_mask_takes_every_key() {
        let g = group([0; 4], [0xaa; 4]);
        assert!(g.matches(b""));
        assert!(g.matches(b"anything"));
        assert!(group([0xff; 4], *b"abcd").matches(b"abcdef"));
        assert_eq!(group([0xff; 4], *b"abcd").prefix(), b"abcd");
    }
}
