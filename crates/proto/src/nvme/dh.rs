//! The Diffie-Hellman exchange of DH-HMAC-CHAP (NVMe Base 2.x, "DH-HMAC-CHAP protocol"):
//! the finite-field groups of RFC 7919 (ffdhe2048 to ffdhe8192, DH group ids 01h to 05h),
//! whose parameters come from `rustls`. Each side sends g^x mod p in its message; both
//! derive Z = (g^y)^x mod p, and the challenges are augmented with it before the responses
//! are computed: Ca = HMAC(H(Z), C). So an eavesdropper who records a transaction and
//! later learns the secret still cannot replay or check a response (forward secrecy).

use super::auth::{failure, HashId};
use num_bigint::BigUint;
use rustls::ffdhe_groups::{self, FfdheGroup};

/// A finite-field DH group of RFC 7919.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DhGroup {
    /// ffdhe2048 (id 01h).
    Ffdhe2048 = 1,
    /// ffdhe3072 (id 02h).
    Ffdhe3072 = 2,
    /// ffdhe4096 (id 03h).
    Ffdhe4096 = 3,
    /// ffdhe6144 (id 04h).
    Ffdhe6144 = 4,
    /// ffdhe8192 (id 05h).
    Ffdhe8192 = 5,
}

/// Bytes of random input a private exponent is made of: 512 bits, past twice the security
/// strength of every group (RFC 7919, section 5.2).
pub const DH_PRIVATE_LEN: usize = 64;

impl DhGroup {
    /// Every group, weakest first.
    pub const ALL: [DhGroup; 5] = [
        DhGroup::Ffdhe2048,
        DhGroup::Ffdhe3072,
        DhGroup::Ffdhe4096,
        DhGroup::Ffdhe6144,
        DhGroup::Ffdhe8192,
    ];

    /// The group with DH group id `id` (the NULL group, 00h, is none).
    pub fn from_id(id: u8) -> Option<DhGroup> {
        DhGroup::ALL.into_iter().find(|g| *g as u8 == id)
    }

    fn params(self) -> FfdheGroup<'static> {
        match self {
            DhGroup::Ffdhe2048 => ffdhe_groups::FFDHE2048,
            DhGroup::Ffdhe3072 => ffdhe_groups::FFDHE3072,
            DhGroup::Ffdhe4096 => ffdhe_groups::FFDHE4096,
            DhGroup::Ffdhe6144 => ffdhe_groups::FFDHE6144,
            DhGroup::Ffdhe8192 => ffdhe_groups::FFDHE8192,
        }
    }

    /// Bytes of a DH value (and of Z): the prime's length.
    pub fn value_len(self) -> usize {
        self.params().p.len()
    }

    /// A key pair from `random` (at least [`DH_PRIVATE_LEN`] bytes from a secure source).
    pub fn key_pair(self, random: &[u8]) -> DhKey {
        let params = self.params();
        let p = BigUint::from_bytes_be(params.p);
        let g = BigUint::from_bytes_be(params.g);
        // At least 2: a private exponent of 0 or 1 gives away the public value.
        let private = BigUint::from_bytes_be(random) + 2u32;
        let public = pad(&g.modpow(&private, &p), self.value_len());
        DhKey {
            group: self,
            private,
            public,
        }
    }
}

/// One side's key pair for one transaction.
pub struct DhKey {
    group: DhGroup,
    private: BigUint,
    /// g^x mod p, big-endian, the prime's length: the DH value this side sends.
    pub public: Vec<u8>,
}

impl DhKey {
    /// Z from the other side's DH value, the prime's length; the failure explanation if that
    /// value is malformed (not the group's length, or outside 2..p-2, which would make Z
    /// predictable).
    pub fn shared(&self, peer: &[u8]) -> Result<Vec<u8>, u8> {
        let len = self.group.value_len();
        if peer.len() != len {
            return Err(failure::INCORRECT_PAYLOAD);
        }
        let p = BigUint::from_bytes_be(self.group.params().p);
        let y = BigUint::from_bytes_be(peer);
        if y < BigUint::from(2u32) || y > &p - 2u32 {
            return Err(failure::INCORRECT_PAYLOAD);
        }
        Ok(pad(&y.modpow(&self.private, &p), len))
    }
}

impl std::fmt::Debug for DhKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DhKey({:?})", self.group)
    }
}

/// `n` big-endian in exactly `len` bytes (left-padded with zeros).
fn pad(n: &BigUint, len: usize) -> Vec<u8> {
    let b = n.to_bytes_be();
    let mut out = vec![0u8; len.saturating_sub(b.len())];
    out.extend_from_slice(&b);
    out
}

/// The challenge a response is computed over: `challenge` as sent with the NULL group
/// (`shared` None), else HMAC(H(Z), challenge).
pub fn augmented(hash: HashId, shared: Option<&[u8]>, challenge: &[u8]) -> Vec<u8> {
    match shared {
        None => challenge.to_vec(),
        Some(z) => hash.hmac(&hash.digest(z), &[challenge]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_derive_the_same_secret() {
        let g = DhGroup::Ffdhe2048;
        let a = g.key_pair(&[7u8; DH_PRIVATE_LEN]);
        let b = g.key_pair(&[9u8; DH_PRIVATE_LEN]);
        assert_eq!(a.public.len(), 256);
        let z = a.shared(&b.public).unwrap();
        assert_eq!(z, b.shared(&a.public).unwrap());
        assert_eq!(z.len(), 256);
        assert_ne!(a.public, b.public);
        let ca = augmented(HashId::Sha256, Some(&z), &[1; 32]);
        assert_eq!(ca.len(), 32);
        assert_ne!(ca, vec![1; 32]);
        assert_eq!(augmented(HashId::Sha256, None, &[1; 32]), vec![1; 32]);
    }

    #[test]
    fn degenerate_or_misshapen_values_are_refused() {
        let g = DhGroup::Ffdhe2048;
        let a = g.key_pair(&[7u8; DH_PRIVATE_LEN]);
        let p = g.params().p.to_vec();
        let mut one = vec![0u8; 256];
        one[255] = 1;
        let mut p_minus_1 = p.clone();
        p_minus_1[255] -= 1;
        for bad in [vec![0u8; 256], one, p_minus_1, p, vec![5u8; 255], vec![]] {
            assert_eq!(a.shared(&bad), Err(failure::INCORRECT_PAYLOAD));
        }
    }

    #[test]
    fn group_ids_are_the_specifications() {
        assert_eq!(DhGroup::from_id(0), None);
        assert_eq!(DhGroup::from_id(1), Some(DhGroup::Ffdhe2048));
        assert_eq!(DhGroup::from_id(5), Some(DhGroup::Ffdhe8192));
        assert_eq!(DhGroup::from_id(6), None);
        assert_eq!(DhGroup::Ffdhe8192.value_len(), 1024);
    }
}
