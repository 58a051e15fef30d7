//! `cerberus nvme-key`: a new DH-HMAC-CHAP secret for an NVMe/TCP host, so a first NVMe/TCP
//! configuration needs no other tool (`nvme gen-dhchap-key` makes the same form).

use cerberus_host::proto::nvme::{DhchapSecret, HashId};
use rand::RngCore;

/// 32 random bytes from the OS as `DHHC-1:01:<base64 of key and CRC-32>:` (transformed with
/// SHA-256 and the host's NQN when used, as the NVMe specification's `01` says).
pub fn new_secret() -> String {
    let mut key = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut key);
    DhchapSecret::encode(Some(HashId::Sha256), &key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_secret_parses_and_is_new_each_time() {
        let a = new_secret();
        let parsed = DhchapSecret::parse(&a).unwrap();
        assert_eq!(parsed.key.len(), 32);
        assert_eq!(parsed.transform, Some(HashId::Sha256));
        assert_ne!(a, new_secret());
    }
}
