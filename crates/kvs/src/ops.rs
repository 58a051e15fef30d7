//! The key-value calls on an open key space, in Rust terms: the FFI layer reads the C
//! structures into slices and writes the answers back.

use crate::key_group::KeyGroup;
use crate::key_space::KeySpace;
use crate::result::KvsError;
use bytes::Bytes;
use cerberus_host::{ScanOptions, StoreMode, WriteBatch};

/// `KVS_ALIGNMENT_UNIT`: retrieve offsets are multiples of it.
pub const ALIGNMENT_UNIT: u32 = 512;
/// Deletes per batch when deleting a key group.
const GROUP_DELETE_BATCH: usize = 512;

/// `kvs_store_type` values.
pub mod store_type {
    pub const POST: i32 = 0;
    pub const UPDATE_ONLY: i32 = 1;
    pub const NOOVERWRITE: i32 = 2;
    pub const APPEND: i32 = 3;
}

/// Copies `value` from byte `offset` on into `out` (what fits).
pub fn copy_from(value: &[u8], out: &mut [u8], offset: u32) -> Result<Retrieved, KvsError> {
    if !offset.is_multiple_of(ALIGNMENT_UNIT) {
        return Err(KvsError::OffsetMisaligned);
    }
    let tail = value
        .get(offset as usize..)
        .ok_or(KvsError::OffsetInvalid)?;
    let n = tail.len().min(out.len());
    out[..n].copy_from_slice(&tail[..n]);
    Ok(Retrieved {
        copied: n as u32,
        actual: value.len() as u32,
        whole: n == tail.len(),
    })
}

/// What a retrieve copied.
#[derive(Debug, PartialEq, Eq)]
pub struct Retrieved {
    /// Bytes copied into the buffer.
    pub copied: u32,
    /// The stored value's whole size.
    pub actual: u32,
    /// The buffer held the value (from the offset) whole.
    pub whole: bool,
}

impl KeySpace {
    /// `Ok` if `key`'s length is within the device's range.
    pub fn check_key(&self, key: &[u8]) -> Result<(), KvsError> {
        if key.is_empty() || key.len() > self.device.limits.max_key as usize {
            return Err(KvsError::KeyLength);
        }
        Ok(())
    }

    /// Stores `value` under `key` as `st_type` (a `kvs_store_type`) asks.
    pub fn store(&self, key: &[u8], value: &[u8], st_type: i32) -> Result<(), KvsError> {
        self.check_pair(key, value.len())?;
        let mode = match st_type {
            store_type::POST => StoreMode::Always,
            store_type::UPDATE_ONLY => StoreMode::OnlyIfPresent,
            store_type::NOOVERWRITE => StoreMode::OnlyIfAbsent,
            // The device has no append; read-modify-write here would lose concurrent writes.
            store_type::APPEND => return Err(KvsError::Option("KVS_STORE_APPEND")),
            _ => return Err(KvsError::Option("unknown kvs_store_type")),
        };
        let (key, value) = (Bytes::copy_from_slice(key), Bytes::copy_from_slice(value));
        let stored = match mode {
            StoreMode::Always => self.ns().put(key, value),
            mode => self.ns().store(key, value, mode),
        };
        stored.map_err(|e| match e {
            cerberus_host::Error::KeyExists => KvsError::UpdateNotAllowed,
            e => e.into(),
        })
    }

    /// Copies `key`'s value from byte `offset` on into `out` (what fits); with
    /// `delete_after`, deletes the pair once it was read whole.
    pub fn retrieve_into(
        &self,
        key: &[u8],
        out: &mut [u8],
        offset: u32,
        delete_after: bool,
    ) -> Result<Retrieved, KvsError> {
        self.check_key(key)?;
        if !offset.is_multiple_of(ALIGNMENT_UNIT) {
            return Err(KvsError::OffsetMisaligned);
        }
        let value = self
            .ns()
            .get(Bytes::copy_from_slice(key))?
            .ok_or(KvsError::KeyNotExist)?;
        let got = copy_from(&value, out, offset)?;
        if got.whole && delete_after {
            self.ns().delete(Bytes::copy_from_slice(key))?;
        }
        Ok(got)
    }

    /// `Ok` if `key` and a value of `value_len` bytes can be stored.
    pub fn check_pair(&self, key: &[u8], value_len: usize) -> Result<(), KvsError> {
        self.check_key(key)?;
        if value_len > self.device.limits.max_value as usize {
            return Err(KvsError::ValueLength);
        }
        Ok(())
    }

    /// Stores `pairs` (each checked with [`KeySpace::check_pair`]), sent together.
    pub fn store_many(&self, mut pairs: Vec<(Bytes, Bytes)>) -> Result<(), KvsError> {
        match pairs.len() {
            0 => Ok(()),
            1 => {
                let (k, v) = pairs.remove(0);
                Ok(self.ns().put(k, v)?)
            }
            _ => Ok(self.ns().put_many(pairs)?),
        }
    }

    /// The values of `keys` (each checked), asked together.
    pub fn get_many(&self, keys: Vec<Bytes>) -> Result<Vec<Option<Bytes>>, KvsError> {
        Ok(self.ns().get_many(keys)?)
    }

    /// The size of `key`'s value.
    pub fn value_len(&self, key: &[u8]) -> Result<u32, KvsError> {
        self.check_key(key)?;
        let value = self
            .ns()
            .get(Bytes::copy_from_slice(key))?
            .ok_or(KvsError::KeyNotExist)?;
        Ok(value.len() as u32)
    }

    /// Deletes `key`; with `must_exist`, an absent key is `KeyNotExist`.
    pub fn delete(&self, key: &[u8], must_exist: bool) -> Result<(), KvsError> {
        self.check_key(key)?;
        let existed = self.ns().delete(Bytes::copy_from_slice(key))?;
        if must_exist && !existed {
            return Err(KvsError::KeyNotExist);
        }
        Ok(())
    }

    /// Whether each of `keys` exists.
    pub fn exist(&self, keys: &[&[u8]]) -> Result<Vec<bool>, KvsError> {
        for k in keys {
            self.check_key(k)?;
        }
        keys.iter()
            .map(|k| Ok(self.ns().contains(Bytes::copy_from_slice(k))?))
            .collect()
    }

    /// Deletes every pair of `group`.
    pub fn delete_group(&self, group: KeyGroup) -> Result<(), KvsError> {
        let prefix = group.prefix();
        let opts = ScanOptions {
            prefix: (!prefix.is_empty()).then(|| Bytes::from(prefix)),
            keys_only: true,
            ..ScanOptions::default()
        };
        // Keys first, deletes after: the scan reads one snapshot either way.
        let mut doomed = Vec::new();
        for entry in self.ns().scan(opts)? {
            let (key, _) = entry?;
            if group.matches(&key) {
                doomed.push(key);
            }
        }
        for chunk in doomed.chunks(GROUP_DELETE_BATCH) {
            let mut batch = WriteBatch::new();
            for k in chunk {
                batch.delete(k.clone());
            }
            self.ns().write(batch)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_what_fits_from_the_offset() {
        let value: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let mut out = [0u8; 2000];
        let got = copy_from(&value, &mut out, 0).unwrap();
        assert_eq!((got.copied, got.actual, got.whole), (1000, 1000, true));
        let mut small = [0u8; 10];
        let got = copy_from(&value, &mut small, 512).unwrap();
        assert_eq!((got.copied, got.actual, got.whole), (10, 1000, false));
        assert_eq!(small[0], value[512]);
        let got = copy_from(&value, &mut [], 0).unwrap();
        assert!(!got.whole);
        assert!(copy_from(&[], &mut [], 0).unwrap().whole);
        assert!(matches!(
            copy_from(&value, &mut out, 3),
            Err(KvsError::OffsetMisaligned)
        ));
        assert!(matches!(
            copy_from(&value, &mut out, 1024),
            Err(KvsError::OffsetInvalid)
        ));
    }
}
