//! What a namespace is given when it is created, and may be changed later: its space quota
//! (as an NVMe namespace has a capacity) and its I/O shares (mClock's reservation, weight and
//! limit). The engine keeps them in the manifest; it enforces the capacity, and the device's
//! command scheduler the shares.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Largest weight a namespace may be given: weights are relative, and a bound keeps the
/// scheduler's arithmetic far from overflow.
pub const MAX_WEIGHT: u32 = 10_000;

/// A namespace's I/O shares, in operations and bytes per second. `0` means "none": no floor
/// for a reservation, no ceiling for a limit. The defaults are equal weights, no floor and
/// no ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoShares {
    /// Operations per second the namespace is served even when others contend (0: none).
    pub reservation_ops: u64,
    /// Bytes per second the namespace is served even when others contend (0: none).
    pub reservation_bytes: u64,
    /// Share of what is left beyond the reservations, relative to other namespaces'
    /// weights (1 to [`MAX_WEIGHT`]).
    pub weight: u32,
    /// Operations per second the namespace is never served beyond (0: no ceiling).
    pub limit_ops: u64,
    /// Bytes per second the namespace is never served beyond (0: no ceiling).
    pub limit_bytes: u64,
}

impl Default for IoShares {
    fn default() -> Self {
        IoShares {
            reservation_ops: 0,
            reservation_bytes: 0,
            weight: 1,
            limit_ops: 0,
            limit_bytes: 0,
        }
    }
}

impl IoShares {
    /// Checks the shares make sense: a weight in range, a floor no higher than its ceiling.
    pub fn validate(&self) -> Result<()> {
        if self.weight == 0 || self.weight > MAX_WEIGHT {
            return Err(Error::InvalidArgument(format!(
                "weight {} is out of range (1 to {MAX_WEIGHT})",
                self.weight
            )));
        }
        let over = |floor: u64, ceiling: u64| ceiling != 0 && floor > ceiling;
        if over(self.reservation_ops, self.limit_ops) {
            return Err(Error::InvalidArgument(format!(
                "reservation of {} ops/s is above the limit of {} ops/s",
                self.reservation_ops, self.limit_ops
            )));
        }
        if over(self.reservation_bytes, self.limit_bytes) {
            return Err(Error::InvalidArgument(format!(
                "reservation of {} bytes/s is above the limit of {} bytes/s",
                self.reservation_bytes, self.limit_bytes
            )));
        }
        Ok(())
    }
}

/// A namespace's settings: its capacity and its I/O shares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NamespaceOptions {
    /// Live bytes (keys, values and index entries) the namespace may hold; `None`: bounded
    /// only by the device.
    pub capacity: Option<u64>,
    /// Its I/O shares.
    pub shares: IoShares,
}

impl NamespaceOptions {
    /// Checks every setting (see [`IoShares::validate`]); a capacity must be above 0.
    pub fn validate(&self) -> Result<()> {
        if self.capacity == Some(0) {
            return Err(Error::InvalidArgument(
                "a capacity must be at least 1 byte (leave it unset for none)".into(),
            ));
        }
        self.shares.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_settings_are_refused() {
        assert!(NamespaceOptions::default().validate().is_ok());
        let mut o = NamespaceOptions::default();
        o.shares.weight = 0;
        assert!(o.validate().is_err());
        o.shares.weight = MAX_WEIGHT + 1;
        assert!(o.validate().is_err());
        o.shares = IoShares {
            reservation_ops: 10,
            limit_ops: 5,
            ..IoShares::default()
        };
        assert!(o.validate().is_err());
        o.shares = IoShares::default();
        o.capacity = Some(0);
        assert!(o.validate().is_err());
    }
}
