//! `extern "C"`: the kit's aligned buffers (`kvs_malloc`, `kvs_zalloc`, `kvs_free`). Plain
//! `posix_memalign` and `free`; a count of outstanding buffers for `kvs_memstat`.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicIsize, Ordering};

static OUTSTANDING: AtomicIsize = AtomicIsize::new(0);

/// `alignment` made valid for `posix_memalign`: a power of two, at least a pointer's size.
fn valid_alignment(alignment: usize) -> usize {
    alignment
        .max(std::mem::size_of::<*mut c_void>())
        .checked_next_power_of_two()
        .unwrap_or(4096)
}

/// `_kvs_malloc`: `size_bytes` bytes aligned to `alignment`, or NULL.
#[no_mangle]
pub extern "C" fn _kvs_malloc(
    size_bytes: usize,
    alignment: usize,
    _file: *const c_char,
) -> *mut c_void {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: `p` is a valid out pointer; the alignment is a power-of-two multiple of a
    // pointer's size; a size of 0 is asked as 1 so a non-NULL pointer means success.
    let rc = unsafe { libc::posix_memalign(&mut p, valid_alignment(alignment), size_bytes.max(1)) };
    if rc != 0 {
        return std::ptr::null_mut();
    }
    OUTSTANDING.fetch_add(1, Ordering::Relaxed);
    p
}

/// `_kvs_zalloc`: as `_kvs_malloc`, zeroed.
#[no_mangle]
pub extern "C" fn _kvs_zalloc(
    size_bytes: usize,
    alignment: usize,
    file: *const c_char,
) -> *mut c_void {
    let p = _kvs_malloc(size_bytes, alignment, file);
    if !p.is_null() {
        // SAFETY: `p` holds at least `size_bytes` writable bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, size_bytes) };
    }
    p
}

/// `_kvs_free`: frees a buffer of `_kvs_malloc` / `_kvs_zalloc` (NULL: nothing).
///
/// # Safety
/// `buf` is NULL or a live buffer those returned.
#[no_mangle]
pub unsafe extern "C" fn _kvs_free(buf: *mut c_void, _file: *const c_char) {
    if buf.is_null() {
        return;
    }
    OUTSTANDING.fetch_sub(1, Ordering::Relaxed);
    // SAFETY: a posix_memalign buffer, by the caller's contract.
    unsafe { libc::free(buf) };
}

/// `_kvs_report_memstat`: the outstanding buffers, on stderr.
#[no_mangle]
pub extern "C" fn _kvs_report_memstat() {
    eprintln!(
        "kvs: {} buffers of kvs_malloc outstanding",
        OUTSTANDING.load(Ordering::Relaxed)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_zeroed() {
        let p = _kvs_zalloc(100, 4096, std::ptr::null());
        assert!(!p.is_null());
        assert_eq!(p as usize % 4096, 0);
        // SAFETY: 100 bytes just allocated.
        let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), 100) };
        assert!(bytes.iter().all(|b| *b == 0));
        // SAFETY: ours.
        unsafe { _kvs_free(p, std::ptr::null()) };
        let q = _kvs_malloc(0, 3, std::ptr::null());
        assert!(!q.is_null());
        // SAFETY: ours.
        unsafe { _kvs_free(q, std::ptr::null()) };
        // SAFETY: NULL is allowed.
        unsafe { _kvs_free(std::ptr::null_mut(), std::ptr::null()) };
    }
}
