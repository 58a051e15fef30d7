//! A namespace's settings on the wire: its capacity and I/O shares, as NamespaceCreate (with
//! [`NS_CREATE_SETTINGS`](super::NS_CREATE_SETTINGS)) and NamespaceConfigure carry them.
//!
//! Layout (44 bytes, little-endian): `capacity u64 (0: none) ++ reservation_ops u64 ++
//! reservation_bytes u64 ++ weight u32 ++ limit_ops u64 ++ limit_bytes u64`. The field names
//! are the engine's (`NamespaceOptions`, `IoShares`); the device validates the values.

use crate::error::ProtoError;
use bytes::{Buf, BufMut, BytesMut};

/// Bytes of an encoded [`NamespaceSettings`].
pub const SETTINGS_LEN: usize = 44;

/// A namespace's capacity and I/O shares (`0` for a reservation or limit: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamespaceSettings {
    /// Live bytes the namespace may hold (`None`: bounded by the device only).
    pub capacity: Option<u64>,
    /// Operations per second it is served even when others contend.
    pub reservation_ops: u64,
    /// Bytes per second it is served even when others contend.
    pub reservation_bytes: u64,
    /// Its share of what is left beyond the reservations (1 to 10,000).
    pub weight: u32,
    /// Operations per second it is never served beyond.
    pub limit_ops: u64,
    /// Bytes per second it is never served beyond.
    pub limit_bytes: u64,
}

impl Default for NamespaceSettings {
    /// The engine's defaults: no capacity, equal weights, no floor, no ceiling.
    fn default() -> Self {
        NamespaceSettings {
            capacity: None,
            reservation_ops: 0,
            reservation_bytes: 0,
            weight: 1,
            limit_ops: 0,
            limit_bytes: 0,
        }
    }
}

impl NamespaceSettings {
    /// Appends the 44-byte encoding.
    pub fn encode(&self, out: &mut BytesMut) {
        out.put_u64_le(self.capacity.unwrap_or(0));
        out.put_u64_le(self.reservation_ops);
        out.put_u64_le(self.reservation_bytes);
        out.put_u32_le(self.weight);
        out.put_u64_le(self.limit_ops);
        out.put_u64_le(self.limit_bytes);
    }

    /// Reads the 44-byte encoding off the front of `body`.
    pub fn decode(body: &mut impl Buf) -> Result<NamespaceSettings, ProtoError> {
        if body.remaining() < SETTINGS_LEN {
            return Err(ProtoError::Truncated("namespace settings (44 bytes)"));
        }
        Ok(NamespaceSettings {
            capacity: Some(body.get_u64_le()).filter(|&c| c > 0),
            reservation_ops: body.get_u64_le(),
            reservation_bytes: body.get_u64_le(),
            weight: body.get_u32_le(),
            limit_ops: body.get_u64_le(),
            limit_bytes: body.get_u64_le(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip() {
        let s = NamespaceSettings {
            capacity: Some(1 << 40),
            reservation_ops: 1,
            reservation_bytes: 2,
            weight: 3,
            limit_ops: 4,
            limit_bytes: 5,
        };
        let mut out = BytesMut::new();
        s.encode(&mut out);
        assert_eq!(out.len(), SETTINGS_LEN);
        assert_eq!(NamespaceSettings::decode(&mut out.freeze()).unwrap(), s);
        let mut none = BytesMut::new();
        NamespaceSettings::default().encode(&mut none);
        assert_eq!(
            NamespaceSettings::decode(&mut none.freeze()).unwrap(),
            NamespaceSettings::default()
        );
        assert!(NamespaceSettings::decode(&mut &[0u8; 43][..]).is_err());
    }
}
