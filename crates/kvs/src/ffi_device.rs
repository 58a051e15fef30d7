//! `extern "C"`: opening and closing a device, and what it reports of itself.

use crate::async_batch::run_batch;
use crate::credentials::process_env;
use crate::device::Device;
use crate::edge::{c_name, device, guard, out, Handle};
use crate::ffi_types::{KvsDevice, KvsResult};
use crate::key_spaces::capacity_and_utilization;
use crate::live::{DEVICES, KEY_SPACES};
use crate::result::KvsError;
use std::ffi::c_char;
use std::sync::Arc;

/// Smallest key the device takes.
const MIN_KEY_LEN: u32 = 1;
/// `KVS_OPTIMAL_VALUE_LENGTH`: the device has no preferred size; the kit's nominal one.
const OPTIMAL_VALUE_LEN: u32 = 4096;

/// `kvs_open_device`.
///
/// # Safety
/// `uri` is NULL or a NUL-terminated string; `dev_hd` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_open_device(uri: *mut c_char, dev_hd: *mut Handle) -> KvsResult {
    guard(|| {
        // SAFETY: the caller's contract, as documented above.
        let dev_hd = unsafe { out(dev_hd, "NULL device handle out")? };
        // SAFETY: as above.
        let uri = unsafe { c_name(uri)? };
        let dev = Device::open(&uri, &process_env, run_batch)?;
        *dev_hd = DEVICES.insert(Arc::new(dev)) as Handle;
        Ok(())
    })
}

/// `kvs_open_device` for Rust callers (the bench's `kvs` engine): the credentials and
/// settings from `env` rather than the process's environment.
pub fn kvs_open_device_with(
    uri: &str,
    env: &dyn Fn(&str) -> Option<String>,
    dev_hd: &mut Handle,
) -> KvsResult {
    guard(|| {
        let dev = Device::open(uri, env, run_batch)?;
        *dev_hd = DEVICES.insert(Arc::new(dev)) as Handle;
        Ok(())
    })
}

/// `kvs_close_device`: waits for the handle's queued async calls, closes its key spaces.
#[no_mangle]
pub extern "C" fn kvs_close_device(dev_hd: Handle) -> KvsResult {
    guard(|| {
        let (id, dev) = device(dev_hd)?;
        // Two threads closing one handle: only the one that unregisters it closes it (the
        // other must not return before the queued callbacks ran).
        DEVICES.remove(id).ok_or(KvsError::NoDevice)?;
        dev.pool.close();
        KEY_SPACES.remove_where(|ks| ks.device_handle == id);
        Ok(())
    })
}

/// `kvs_get_device_info`.
///
/// # Safety
/// `dev_info` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_device_info(
    dev_hd: Handle,
    dev_info: *mut KvsDevice,
) -> KvsResult {
    guard(|| {
        let (_, dev) = device(dev_hd)?;
        // SAFETY: the caller's contract.
        let info = unsafe { out(dev_info, "NULL kvs_device")? };
        let (capacity, _) = capacity_and_utilization(&dev.spaces()?);
        *info = KvsDevice {
            capacity,
            unalloc_capacity: 0,
            max_value_len: dev.limits.max_value,
            max_key_len: dev.limits.max_key,
            optimal_value_len: OPTIMAL_VALUE_LEN,
            optimal_value_granularity: 1,
            extended_info: std::ptr::null_mut(),
        };
        Ok(())
    })
}

/// `kvs_get_device_capacity`: the quotas of the key spaces the handle sees, summed.
///
/// # Safety
/// `dev_capacity` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_device_capacity(
    dev_hd: Handle,
    dev_capacity: *mut u64,
) -> KvsResult {
    guard(|| {
        let (_, dev) = device(dev_hd)?;
        // SAFETY: the caller's contract.
        let cap = unsafe { out(dev_capacity, "NULL capacity out")? };
        *cap = capacity_and_utilization(&dev.spaces()?).0;
        Ok(())
    })
}

/// `kvs_get_device_utilization`: used bytes against those quotas, 0 to 10000.
///
/// # Safety
/// `dev_utilization` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_device_utilization(
    dev_hd: Handle,
    dev_utilization: *mut u32,
) -> KvsResult {
    guard(|| {
        let (_, dev) = device(dev_hd)?;
        // SAFETY: the caller's contract.
        let util = unsafe { out(dev_utilization, "NULL utilization out")? };
        *util = capacity_and_utilization(&dev.spaces()?).1;
        Ok(())
    })
}

/// One `u32` the device reports.
///
/// # Safety
/// `to` is NULL or writable.
unsafe fn report(dev_hd: Handle, to: *mut u32, what: impl FnOnce(&Device) -> u32) -> KvsResult {
    guard(|| {
        let (_, dev) = device(dev_hd)?;
        // SAFETY: the caller's contract.
        *unsafe { out(to, "NULL length out")? } = what(&dev);
        Ok(())
    })
}

/// `kvs_get_min_key_length`.
///
/// # Safety
/// `min_key_length` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_min_key_length(
    dev_hd: Handle,
    min_key_length: *mut u32,
) -> KvsResult {
    // SAFETY: forwarded contract.
    unsafe { report(dev_hd, min_key_length, |_| MIN_KEY_LEN) }
}

/// `kvs_get_max_key_length`.
///
/// # Safety
/// `max_key_length` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_max_key_length(
    dev_hd: Handle,
    max_key_length: *mut u32,
) -> KvsResult {
    // SAFETY: forwarded contract.
    unsafe { report(dev_hd, max_key_length, |d| d.limits.max_key) }
}

/// `kvs_get_min_value_length`.
///
/// # Safety
/// `min_value_length` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_min_value_length(
    dev_hd: Handle,
    min_value_length: *mut u32,
) -> KvsResult {
    // SAFETY: forwarded contract.
    unsafe { report(dev_hd, min_value_length, |_| 0) }
}

/// `kvs_get_max_value_length`.
///
/// # Safety
/// `max_value_length` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_max_value_length(
    dev_hd: Handle,
    max_value_length: *mut u32,
) -> KvsResult {
    // SAFETY: forwarded contract.
    unsafe { report(dev_hd, max_value_length, |d| d.limits.max_value) }
}

/// `kvs_get_optimal_value_length`.
///
/// # Safety
/// `opt_value_length` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_optimal_value_length(
    dev_hd: Handle,
    opt_value_length: *mut u32,
) -> KvsResult {
    // SAFETY: forwarded contract.
    unsafe { report(dev_hd, opt_value_length, |_| OPTIMAL_VALUE_LEN) }
}
