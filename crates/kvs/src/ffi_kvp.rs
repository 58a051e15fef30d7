//! `extern "C"`: the synchronous key-value calls.

use crate::edge::{bytes, bytes_mut, guard, key, key_space, out, Handle};
use crate::ffi_types::{
    KvsExistList, KvsKey, KvsKeyGroupFilter, KvsKvpInfo, KvsOptionDelete, KvsOptionRetrieve,
    KvsOptionStore, KvsResult, KvsValue,
};
use crate::key_group::KeyGroup;
use crate::ops::{copy_from, store_type, Retrieved, ALIGNMENT_UNIT};
use crate::result::{KvsError, KvsOutcome};

/// `kvs_get_kvp_info`: the key (copied to `info->key` if it is not NULL) and its value's
/// length.
///
/// # Safety
/// `k` NULL or a valid `kvs_key`; `info` NULL or writable, its `key` NULL or `k`'s length
/// of writable bytes.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_kvp_info(
    ks_hd: Handle,
    k: *mut KvsKey,
    info: *mut KvsKvpInfo,
) -> KvsResult {
    guard(|| {
        let (_, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let key = unsafe { key(k)? };
        // SAFETY: as above.
        let info = unsafe { out(info, "NULL kvs_kvp_info")? };
        info.value_len = ks.value_len(key)?;
        info.key_len = key.len() as u16;
        if !info.key.is_null() {
            // SAFETY: a buffer of the key's length, by the caller's contract.
            let to = unsafe { bytes_mut(info.key.cast(), key.len(), "NULL info key")? };
            to.copy_from_slice(key);
        }
        Ok(())
    })
}

/// `kvs_retrieve_kvp`: the value from `value->offset` into `value->value`; a buffer too
/// small gets what fits and `KVS_ERR_BUFFER_SMALL`, `actual_value_size` the whole size.
///
/// # Safety
/// `k` NULL or a valid `kvs_key`; `opt` NULL or valid; `value` NULL or a writable
/// `kvs_value` with `length` writable bytes at `value`.
#[no_mangle]
pub unsafe extern "C" fn kvs_retrieve_kvp(
    ks_hd: Handle,
    k: *mut KvsKey,
    opt: *mut KvsOptionRetrieve,
    value: *mut KvsValue,
) -> KvsResult {
    guard(|| {
        let (_, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let key = unsafe { key(k)? };
        // SAFETY: as above.
        let value = unsafe { out(value, "NULL kvs_value")? };
        // SAFETY: as above.
        let delete_after = unsafe { opt.as_ref() }.is_some_and(|o| o.kvs_retrieve_delete != 0);
        // SAFETY: `length` writable bytes at `value`, by the caller's contract.
        let buf = unsafe { bytes_mut(value.value, value.length as usize, "NULL value buffer")? };
        let got = ks.retrieve_into(key, buf, value.offset, delete_after)?;
        finish_retrieve(value, &got)
    })
}

/// Writes what a retrieve copied into the caller's `kvs_value`: `actual_value_size`, and
/// `length` unless the buffer was too small (`BufferSmall`).
pub fn finish_retrieve(value: &mut KvsValue, got: &Retrieved) -> KvsOutcome<()> {
    value.actual_value_size = got.actual;
    if !got.whole {
        return Err(KvsError::BufferSmall);
    }
    value.length = got.copied;
    Ok(())
}

/// Retrieves into `value` from `stored`, the value the device returned (`None`: no such
/// key), as `kvs_retrieve_kvp` does.
///
/// # Safety
/// `value` NULL or a writable `kvs_value` with `length` writable bytes at `value`.
pub unsafe fn retrieve_from(value: *mut KvsValue, stored: Option<&[u8]>) -> KvsOutcome<()> {
    // SAFETY: the caller's contract.
    let value = unsafe { out(value, "NULL kvs_value")? };
    // SAFETY: as above.
    let buf = unsafe { bytes_mut(value.value, value.length as usize, "NULL value buffer")? };
    // Checked before the key's presence, as `kvs_retrieve_kvp` does.
    if !value.offset.is_multiple_of(ALIGNMENT_UNIT) {
        return Err(KvsError::OffsetMisaligned);
    }
    let stored = stored.ok_or(KvsError::KeyNotExist)?;
    let got = copy_from(stored, buf, value.offset)?;
    finish_retrieve(value, &got)
}

/// The key and value bytes and the `kvs_store_type` a `kvs_store_kvp` call names.
///
/// # Safety
/// As `kvs_store_kvp`'s pointers.
pub unsafe fn store_args<'a>(
    k: *const KvsKey,
    value: *const KvsValue,
    opt: *const KvsOptionStore,
) -> KvsOutcome<(&'a [u8], &'a [u8], i32)> {
    // SAFETY: the caller's contract.
    let key = unsafe { key(k)? };
    // SAFETY: as above.
    let value = unsafe { value.as_ref() }.ok_or(KvsError::Param("NULL kvs_value"))?;
    // SAFETY: `length` bytes at `value`, by the caller's contract.
    let data = unsafe { bytes(value.value, value.length as usize, "NULL value bytes")? };
    // SAFETY: as above.
    let st = unsafe { opt.as_ref() }.map_or(store_type::POST, |o| o.st_type);
    Ok((key, data, st))
}

/// `kvs_store_kvp`.
///
/// # Safety
/// `k` NULL or a valid `kvs_key`; `value` NULL or a valid `kvs_value` with `length`
/// readable bytes; `opt` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn kvs_store_kvp(
    ks_hd: Handle,
    k: *mut KvsKey,
    value: *mut KvsValue,
    opt: *mut KvsOptionStore,
) -> KvsResult {
    guard(|| {
        let (_, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let (key, data, st) = unsafe { store_args(k, value, opt)? };
        ks.store(key, data, st)
    })
}

/// `kvs_delete_kvp`.
///
/// # Safety
/// `k` NULL or a valid `kvs_key`; `opt` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn kvs_delete_kvp(
    ks_hd: Handle,
    k: *mut KvsKey,
    opt: *mut KvsOptionDelete,
) -> KvsResult {
    guard(|| {
        let (_, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let key = unsafe { key(k)? };
        // SAFETY: as above.
        let must_exist = unsafe { opt.as_ref() }.is_some_and(|o| o.kvs_delete_error != 0);
        ks.delete(key, must_exist)
    })
}

/// `kvs_delete_key_group`.
///
/// # Safety
/// `grp_fltr` NULL or a valid filter.
#[no_mangle]
pub unsafe extern "C" fn kvs_delete_key_group(
    ks_hd: Handle,
    grp_fltr: *mut KvsKeyGroupFilter,
) -> KvsResult {
    guard(|| {
        let (_, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let f = unsafe { grp_fltr.as_ref() }.ok_or(KvsError::Param("NULL filter"))?;
        ks.delete_group(KeyGroup::new(f))
    })
}

/// `kvs_exist_kv_pairs`: one bit per key in `list->result_buffer`, the first key's the
/// least significant bit of byte 0; `KVS_ERR_BUFFER_SMALL` if `list->length` bytes hold
/// fewer than `key_cnt` bits.
///
/// # Safety
/// `keys` NULL or `key_cnt` valid `kvs_key`s; `list` NULL or a writable `kvs_exist_list`
/// with `length` writable bytes at `result_buffer`.
#[no_mangle]
pub unsafe extern "C" fn kvs_exist_kv_pairs(
    ks_hd: Handle,
    key_cnt: u32,
    keys: *mut KvsKey,
    list: *mut KvsExistList,
) -> KvsResult {
    guard(|| {
        let (_, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let list = unsafe { out(list, "NULL kvs_exist_list")? };
        if key_cnt == 0 || keys.is_null() {
            return Err(KvsError::Param("no keys"));
        }
        let need = (key_cnt as usize).div_ceil(8);
        if (list.length as usize) < need {
            return Err(KvsError::BufferSmall);
        }
        // SAFETY: `length` writable bytes, by the caller's contract.
        let bits = unsafe { bytes_mut(list.result_buffer.cast(), need, "NULL result buffer")? };
        // Grown as the keys are read, not reserved from the count: a wrong count aborts no
        // process on a failed allocation.
        let mut slices = Vec::with_capacity((key_cnt as usize).min(4096));
        for i in 0..key_cnt as usize {
            // SAFETY: `key_cnt` keys at `keys`, by the caller's contract.
            slices.push(unsafe { key(keys.add(i))? });
        }
        let found = ks.exist(&slices)?;
        bits.fill(0);
        for (i, yes) in found.iter().enumerate() {
            if *yes {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        list.num_keys = key_cnt;
        Ok(())
    })
}
