//! Splitting a value into chunks and naming each by a digest of its bytes.
//!
//! Fixed-size chunks with SHA-1 are the BTS paper's choice (128 B chunks). Fixed boundaries
//! miss a repeated run of bytes that sits at a different offset in two values (a JSON
//! document with a shared profile after a field of varying length), so content-defined
//! chunking is an option: a rolling gear hash cuts where the content says, whatever the
//! offset. XXH3-128 is the fast hash for either (not collision-resistant against an
//! adversary: a tenant who crafts collisions could only skew its own namespace's ratio, as
//! indexes are per namespace).

use serde::{Deserialize, Serialize};
use sha1::{Digest as _, Sha1};

/// A chunk's name: a SHA-1 digest, or an XXH3-128 digest in the first 16 bytes.
pub type Digest = [u8; 20];

/// Where chunk boundaries fall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Chunking {
    /// Every `chunk_bytes` bytes (the last chunk may be shorter).
    Fixed,
    /// Content-defined (gear hash): chunks of `chunk_bytes` on average, between a quarter and
    /// four times that.
    Cdc,
}

/// The digest that names a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkHash {
    /// SHA-1 (20 bytes; the paper's choice): collision-resistant enough, slower.
    Sha1,
    /// XXH3-128 (16 bytes): several times faster, not collision-resistant against an
    /// adversary.
    Xxh3,
}

/// How values are chunked and named. Stored with a persisted index: an index made with other
/// settings is rebuilt rather than trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunker {
    /// Where boundaries fall.
    pub chunking: Chunking,
    /// How each chunk is named.
    pub hash: ChunkHash,
    /// Chunk size, or the average for content-defined chunks, in bytes (0 counts as 1).
    pub chunk_bytes: u32,
}

impl Default for Chunker {
    /// The paper's: fixed 128-byte chunks named by SHA-1.
    fn default() -> Self {
        Chunker {
            chunking: Chunking::Fixed,
            hash: ChunkHash::Sha1,
            chunk_bytes: 128,
        }
    }
}

impl Chunker {
    /// Calls `f` with each chunk's digest and length, in order.
    pub fn chunks(&self, value: &[u8], mut f: impl FnMut(Digest, u32)) {
        let size = self.chunk_bytes.max(1) as usize;
        let mut emit = |c: &[u8]| f(self.digest(c), c.len() as u32);
        match self.chunking {
            Chunking::Fixed => value.chunks(size).for_each(&mut emit),
            Chunking::Cdc => {
                let mut rest = value;
                while !rest.is_empty() {
                    let n = cdc_cut(rest, size);
                    emit(&rest[..n]);
                    rest = &rest[n..];
                }
            }
        }
    }

    /// The name of `chunk` under this chunker's hash.
    pub(crate) fn digest(&self, chunk: &[u8]) -> Digest {
        let mut d = [0u8; 20];
        match self.hash {
            ChunkHash::Sha1 => d.copy_from_slice(&Sha1::digest(chunk)),
            ChunkHash::Xxh3 => {
                d[..16].copy_from_slice(&xxhash_rust::xxh3::xxh3_128(chunk).to_le_bytes())
            }
        }
        d
    }
}

/// The gear table: one pseudo-random word per byte value (splitmix64 from a fixed seed, so
/// boundaries are the same on every device and after every restart).
fn gear() -> &'static [u64; 256] {
    static GEAR: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    GEAR.get_or_init(|| {
        let mut state: u64 = 0x6365_7262_6572_7573; // "cerberus"
        let mut t = [0u64; 256];
        for w in t.iter_mut() {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            *w = z ^ (z >> 31);
        }
        t
    })
}

/// Length of the first content-defined chunk of `data` for an average of `avg` bytes: the
/// rolling hash is tested from `avg / 4` bytes on, with a cut where its top bits are zero (one
/// chance in about `avg` per byte), and forced at `4 * avg`.
fn cdc_cut(data: &[u8], avg: usize) -> usize {
    let (min, max) = ((avg / 4).max(1), avg.saturating_mul(4).max(2));
    if data.len() <= min {
        return data.len();
    }
    let bits = (avg.max(2) as f64).log2().round() as u32;
    // The high bits of a gear hash depend on the last 64 bytes only; test those.
    let mask = !(u64::MAX >> bits.min(63));
    let g = gear();
    let mut h = 0u64;
    for (i, &b) in data.iter().enumerate().take(max) {
        h = (h << 1).wrapping_add(g[b as usize]);
        if i + 1 >= min && h & mask == 0 {
            return i + 1;
        }
    }
    data.len().min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lens(c: &Chunker, v: &[u8]) -> Vec<u32> {
        let mut out = Vec::new();
        c.chunks(v, |_, n| out.push(n));
        out
    }

    #[test]
    fn fixed_chunks_cover_the_value() {
        let c = Chunker::default();
        assert_eq!(lens(&c, &[1u8; 300]), [128, 128, 44]);
        assert!(lens(&c, &[]).is_empty());
        // Equal chunks, equal digests; different bytes, different digests.
        let mut d = Vec::new();
        c.chunks(&[5u8; 256], |x, _| d.push(x));
        assert_eq!(d[0], d[1]);
        assert_ne!(c.digest(b"a"), c.digest(b"b"));
        // SHA-1 of "abc", the standard's test vector.
        assert_eq!(
            c.digest(b"abc")[..4],
            [0xa9, 0x99, 0x3e, 0x36],
            "SHA-1 test vector"
        );
    }

    #[test]
    fn cdc_finds_a_shifted_repeat_that_fixed_chunks_miss() {
        let mut rng = 0x1234_5678u64;
        let shared: Vec<u8> = (0..8192)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        let a = [b"prefix-one:".as_slice(), &shared].concat();
        let b = [b"another prefix, longer:".as_slice(), &shared].concat();
        let common = |c: &Chunker| {
            let mut da = std::collections::HashSet::new();
            c.chunks(&a, |d, _| {
                da.insert(d);
            });
            let mut n = 0;
            c.chunks(&b, |d, _| n += da.contains(&d) as usize);
            n
        };
        let fixed = Chunker::default();
        let cdc = Chunker {
            chunking: Chunking::Cdc,
            hash: ChunkHash::Xxh3,
            chunk_bytes: 128,
        };
        assert_eq!(common(&fixed), 0);
        let total = lens(&cdc, &b).len();
        assert!(
            common(&cdc) * 10 >= total * 8,
            "{} of {total}",
            common(&cdc)
        );
        // Sizes stay within their bounds.
        let l = lens(&cdc, &a);
        assert_eq!(l.iter().sum::<u32>() as usize, a.len());
        assert!(l[..l.len() - 1].iter().all(|&n| (32..=512).contains(&n)));
    }
}
