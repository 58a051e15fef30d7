//! A namespace's settings on the wire: its capacity and I/O shares, as NamespaceCreate (with
//! [`NS_CREATE_SETTINGS`](super::NS_CREATE_SETTINGS)) and NamespaceConfigure carry them.
//!
//! Layout (44 bytes, little-endian): `capacity u64 (0: none) ++ reservation_ops u64 ++
//! reservation_bytes u64 ++ weight u32 ++ limit_ops u64 ++ limit_bytes u64`. The field names
//! are the engine's (`NamespaceOptions`, `IoShares`); the device validates the values.
//!
//! NamespaceConfigure's flags add the read-only setting: [`NS_CONFIGURE_READ_ONLY`] or
//! [`NS_CONFIGURE_WRITABLE`] change it, and with [`NS_CONFIGURE_KEEP_SETTINGS`] the body is
//! empty and the settings stay as they are. Without flags it is the 44 bytes alone, as before.

use crate::error::ProtoError;
use crate::fields::end;
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// NamespaceConfigure flag: make the namespace read-only (every write refused with
/// `NamespaceReadOnly`, reads served).
pub const NS_CONFIGURE_READ_ONLY: u8 = 0x01;
/// NamespaceConfigure flag: make the namespace writable again.
pub const NS_CONFIGURE_WRITABLE: u8 = 0x02;
/// NamespaceConfigure flag: the body carries no settings; they stay as they are.
pub const NS_CONFIGURE_KEEP_SETTINGS: u8 = 0x04;

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

/// NamespaceConfigure's body (appended to `out`) and flags for `settings` (`None`: kept) and
/// `read_only` (`None`: unchanged).
pub(super) fn encode_configure(
    settings: &Option<NamespaceSettings>,
    read_only: Option<bool>,
    out: &mut BytesMut,
) -> Result<u8, ProtoError> {
    let mut flags = match read_only {
        None => 0,
        Some(true) => NS_CONFIGURE_READ_ONLY,
        Some(false) => NS_CONFIGURE_WRITABLE,
    };
    match settings {
        Some(s) => s.encode(out),
        None if read_only.is_none() => {
            return Err(ProtoError::InvalidField("nothing to configure"))
        }
        None => flags |= NS_CONFIGURE_KEEP_SETTINGS,
    }
    Ok(flags)
}

/// The settings (`None`: kept) and read-only switch (`None`: unchanged) of a
/// NamespaceConfigure of `flags` and `body`.
pub(super) fn decode_configure(
    flags: u8,
    mut body: Bytes,
) -> Result<(Option<NamespaceSettings>, Option<bool>), ProtoError> {
    let read_only = match flags & (NS_CONFIGURE_READ_ONLY | NS_CONFIGURE_WRITABLE) {
        0 => None,
        NS_CONFIGURE_READ_ONLY => Some(true),
        NS_CONFIGURE_WRITABLE => Some(false),
        _ => return Err(ProtoError::InvalidField("read-only and writable together")),
    };
    let settings = match flags & NS_CONFIGURE_KEEP_SETTINGS {
        0 => Some(NamespaceSettings::decode(&mut body)?),
        _ if read_only.is_none() => return Err(ProtoError::InvalidField("nothing to configure")),
        _ => None,
    };
    end(&body)?;
    Ok((settings, read_only))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configure_round_trips_and_refuses_nonsense() {
        for (settings, read_only, flags, len) in [
            (Some(NamespaceSettings::default()), None, 0, SETTINGS_LEN),
            (
                Some(NamespaceSettings::default()),
                Some(true),
                0x01,
                SETTINGS_LEN,
            ),
            (None, Some(false), 0x06, 0),
            (None, Some(true), 0x05, 0),
        ] {
            let mut out = BytesMut::new();
            assert_eq!(
                encode_configure(&settings, read_only, &mut out).unwrap(),
                flags
            );
            assert_eq!(out.len(), len);
            let back = decode_configure(flags, out.freeze()).unwrap();
            assert_eq!(back, (settings, read_only));
        }
        let mut out = BytesMut::new();
        assert!(encode_configure(&None, None, &mut out).is_err());
        let none = Bytes::new();
        assert!(decode_configure(0x03, none.clone()).is_err());
        assert!(decode_configure(0x04, none.clone()).is_err());
        // Settings with the keep flag, or none without it.
        assert!(decode_configure(0x05, Bytes::from(vec![0u8; SETTINGS_LEN])).is_err());
        assert!(decode_configure(0x01, none).is_err());
    }

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
