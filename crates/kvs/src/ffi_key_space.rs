//! `extern "C"`: creating, deleting, listing, opening and closing key spaces.

use crate::edge::{c_name, device, guard, key_space, ks_name, out, put_name, Handle};
use crate::ffi_types::{KvsKeySpace, KvsKeySpaceName, KvsOptionKeySpace, KvsResult};
use crate::key_space::KeySpace;
use crate::live::{DEVICES, KEY_SPACES};
use crate::result::KvsError;
use std::ffi::c_char;
use std::sync::Arc;

/// `kvs_create_key_space`: a namespace of that name (admin credential), with a quota of
/// `size` bytes unless 0. Every key ordering is accepted: key spaces are always in order.
///
/// # Safety
/// `key_space_name` is NULL or a valid `kvs_key_space_name`.
#[no_mangle]
pub unsafe extern "C" fn kvs_create_key_space(
    dev_hd: Handle,
    key_space_name: *mut KvsKeySpaceName,
    size: u64,
    opt: KvsOptionKeySpace,
) -> KvsResult {
    guard(|| {
        let (_, dev) = device(dev_hd)?;
        if !(0..=2).contains(&opt.ordering) {
            return Err(KvsError::Option("unknown kvs_key_order"));
        }
        // SAFETY: the caller's contract.
        let name = unsafe { ks_name(key_space_name)? };
        dev.create_key_space(&name, size)
    })
}

/// `kvs_delete_key_space`.
///
/// # Safety
/// `key_space_name` is NULL or a valid `kvs_key_space_name`.
#[no_mangle]
pub unsafe extern "C" fn kvs_delete_key_space(
    dev_hd: Handle,
    key_space_name: *mut KvsKeySpaceName,
) -> KvsResult {
    guard(|| {
        let (id, dev) = device(dev_hd)?;
        // SAFETY: the caller's contract.
        let name = unsafe { ks_name(key_space_name)? };
        dev.delete_key_space(&name)?;
        // Its handles on this device are closed with it.
        for (ks_id, _) in KEY_SPACES.remove_where(|ks| ks.device_handle == id && ks.name == name) {
            dev.remove_iterators_of(ks_id);
        }
        Ok(())
    })
}

/// `kvs_list_key_spaces`: names from the `index`-th (counting from 1) on, as many as
/// `buffer_size` bytes of `kvs_key_space_name` hold.
///
/// # Safety
/// `names` is NULL or `buffer_size` bytes of valid `kvs_key_space_name`s; `ks_cnt` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_list_key_spaces(
    dev_hd: Handle,
    index: u32,
    buffer_size: u32,
    names: *mut KvsKeySpaceName,
    ks_cnt: *mut u32,
) -> KvsResult {
    guard(|| {
        let (_, dev) = device(dev_hd)?;
        // SAFETY: the caller's contract.
        let count = unsafe { out(ks_cnt, "NULL ks_cnt")? };
        *count = 0;
        if names.is_null() {
            return Err(KvsError::Param("NULL names"));
        }
        let room = buffer_size as usize / std::mem::size_of::<KvsKeySpaceName>();
        let all = dev.key_spaces()?;
        if index == 0 || (index as usize > all.len() && !all.is_empty()) {
            return Err(KvsError::KeySpaceIndex);
        }
        for (i, e) in all.iter().skip(index as usize - 1).take(room).enumerate() {
            // SAFETY: `i` < `room`, within the caller's `buffer_size` bytes.
            unsafe { put_name(names.add(i), &e.name)? };
            *count += 1;
        }
        Ok(())
    })
}

/// `kvs_open_key_space`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `ks_hd` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_open_key_space(
    dev_hd: Handle,
    name: *mut c_char,
    ks_hd: *mut Handle,
) -> KvsResult {
    guard(|| {
        let (id, dev) = device(dev_hd)?;
        // SAFETY: the caller's contract.
        let ks_hd = unsafe { out(ks_hd, "NULL key space handle out")? };
        // SAFETY: as above.
        let name = unsafe { c_name(name)? };
        let ks = KeySpace::open(&dev, id, &name)?;
        let h = KEY_SPACES.insert(Arc::new(ks));
        // The device closed meanwhile (its close unregisters it, then its key spaces):
        // this one came too late for that, so it closes here.
        if DEVICES.get(id).is_none() {
            KEY_SPACES.remove(h);
            dev.mark_closed(&name);
            return Err(KvsError::NoDevice);
        }
        *ks_hd = h as Handle;
        Ok(())
    })
}

/// `kvs_close_key_space`: closes its iterators too.
#[no_mangle]
pub extern "C" fn kvs_close_key_space(ks_hd: Handle) -> KvsResult {
    guard(|| {
        let (id, ks) = key_space(ks_hd)?;
        // Two threads closing one handle: only the one that unregisters it succeeds.
        KEY_SPACES.remove(id).ok_or(KvsError::KeySpaceNotOpen)?;
        ks.device.remove_iterators_of(id);
        ks.device.mark_closed(&ks.name);
        Ok(())
    })
}

/// `kvs_get_key_space_info`: its quota, what is left of it, its pair count and name.
///
/// # Safety
/// `ks` is NULL or a writable `kvs_key_space` whose `name` is NULL or a valid
/// `kvs_key_space_name` with a buffer.
#[no_mangle]
pub unsafe extern "C" fn kvs_get_key_space_info(ks_hd: Handle, ks: *mut KvsKeySpace) -> KvsResult {
    guard(|| {
        let (_, space) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let info = unsafe { out(ks, "NULL kvs_key_space")? };
        let s = space.space()?;
        info.opened = 1;
        info.capacity = s.capacity.unwrap_or(0);
        info.free_size = s.capacity.map_or(0, |c| c.saturating_sub(s.used));
        info.count = s.keys;
        if !info.name.is_null() {
            // SAFETY: a valid kvs_key_space_name by the caller's contract.
            unsafe { put_name(info.name, &space.name)? };
        }
        Ok(())
    })
}
