//! The FFI edge: every `extern "C"` entry runs its body through [`guard`] (a panic becomes
//! `KVS_ERR_SYS_IO`, never an unwind into C), and reads C's pointers only through these
//! helpers, which refuse NULL and impossible lengths.

use crate::device::Device;
use crate::ffi_types::{KvsKey, KvsKeySpaceName, KvsResult};
use crate::key_space::KeySpace;
use crate::live::{DEVICES, KEY_SPACES};
use crate::result::{code, code_of, KvsError, KvsOutcome};
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// `kvs_device_handle` / `kvs_key_space_handle`: opaque to C, a registry number here.
pub type Handle = *mut c_void;

/// Runs `body`, turning its outcome (or a panic) into a `kvs_result`.
pub fn guard(body: impl FnOnce() -> KvsOutcome<()>) -> KvsResult {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(outcome) => code_of(outcome),
        Err(_) => code::SYS_IO,
    }
}

/// The device behind `h`.
pub fn device(h: Handle) -> KvsOutcome<(usize, Arc<Device>)> {
    let id = h as usize;
    DEVICES.get(id).map(|d| (id, d)).ok_or(KvsError::NoDevice)
}

/// The key space behind `h`.
pub fn key_space(h: Handle) -> KvsOutcome<(usize, Arc<KeySpace>)> {
    if h.is_null() {
        return Err(KvsError::Param("NULL key space handle"));
    }
    let id = h as usize;
    KEY_SPACES
        .get(id)
        .map(|k| (id, k))
        .ok_or(KvsError::KeySpaceNotOpen)
}

/// `*p`, for writing; `Param` if NULL.
///
/// # Safety
/// `p` is NULL or points to a valid, writable `T` no one else touches meanwhile.
pub unsafe fn out<'a, T>(p: *mut T, what: &'static str) -> KvsOutcome<&'a mut T> {
    // SAFETY: the caller's contract; NULL is refused.
    unsafe { p.as_mut() }.ok_or(KvsError::Param(what))
}

/// `len` bytes at `p` (none for `len` 0, whatever `p`); `Param` for NULL with a length.
///
/// # Safety
/// Unless NULL or `len` is 0, `p` points to `len` readable bytes that outlive `'a`.
pub unsafe fn bytes<'a>(p: *const c_void, len: usize, what: &'static str) -> KvsOutcome<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(KvsError::Param(what));
    }
    // SAFETY: non-NULL, and the caller vouches for `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes at `p`, as [`bytes`].
///
/// # Safety
/// Unless NULL or `len` is 0, `p` points to `len` writable bytes no one else touches.
pub unsafe fn bytes_mut<'a>(
    p: *mut c_void,
    len: usize,
    what: &'static str,
) -> KvsOutcome<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(KvsError::Param(what));
    }
    // SAFETY: non-NULL, and the caller vouches for `len` writable bytes.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// The key `k` names: `Param` for a NULL `k` (or NULL bytes with a length), `KeyLength` for
/// an empty key.
///
/// # Safety
/// `k` is NULL or points to a valid `kvs_key` whose bytes outlive `'a`.
pub unsafe fn key<'a>(k: *const KvsKey) -> KvsOutcome<&'a [u8]> {
    // SAFETY: the caller's contract; NULL is refused.
    let k = unsafe { k.as_ref() }.ok_or(KvsError::Param("NULL key"))?;
    if k.length == 0 {
        return Err(KvsError::KeyLength);
    }
    // SAFETY: the kvs_key says `length` bytes are at `key`.
    unsafe { bytes(k.key, usize::from(k.length), "NULL key bytes") }
}

/// A NUL-terminated name, as UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub unsafe fn c_name(p: *const c_char) -> KvsOutcome<String> {
    if p.is_null() {
        return Err(KvsError::Param("NULL name"));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(str::to_string)
        .map_err(|_| KvsError::KeySpaceName)
}

/// The name a `kvs_key_space_name` holds: `name_len` bytes, or up to a NUL before them.
///
/// # Safety
/// `n` is NULL or points to a valid `kvs_key_space_name` with `name_len` readable bytes.
pub unsafe fn ks_name(n: *const KvsKeySpaceName) -> KvsOutcome<String> {
    // SAFETY: the caller's contract; NULL is refused.
    let n = unsafe { n.as_ref() }.ok_or(KvsError::Param("NULL key space name"))?;
    // SAFETY: `name_len` bytes at `name`, by the struct's contract.
    let raw = unsafe {
        bytes(
            n.name.cast(),
            n.name_len as usize,
            "NULL key space name bytes",
        )?
    };
    let raw = raw.split(|b| *b == 0).next().unwrap_or(&[]);
    std::str::from_utf8(raw)
        .map(str::to_string)
        .map_err(|_| KvsError::KeySpaceName)
}

/// Copies `name` into a caller's `kvs_key_space_name` (`name_len`: its buffer's size in,
/// the name's length out), NUL-terminated when there is room.
///
/// # Safety
/// `n` is NULL or points to a valid `kvs_key_space_name` with `name_len` writable bytes.
pub unsafe fn put_name(n: *mut KvsKeySpaceName, name: &str) -> KvsOutcome<()> {
    // SAFETY: the caller's contract; NULL is refused.
    let n = unsafe { out(n, "NULL key space name")? };
    if n.name.is_null() {
        return Err(KvsError::Param("NULL key space name buffer"));
    }
    let room = n.name_len as usize;
    if name.len() > room {
        return Err(KvsError::BufferSmall);
    }
    // SAFETY: `room` writable bytes at `name`, checked non-NULL.
    let buf = unsafe { bytes_mut(n.name.cast(), room, "NULL key space name buffer")? };
    buf[..name.len()].copy_from_slice(name.as_bytes());
    if name.len() < room {
        buf[name.len()] = 0;
    }
    n.name_len = name.len() as u32;
    Ok(())
}
