//! The library's synchronous calls, wrapped for the test: each takes Rust values, builds the
//! C structures, calls the `extern "C"` function and hands back its code and what it wrote.

use cerberus_kvs::{
    kvs_create_iterator, kvs_delete_iterator, kvs_delete_key_group, kvs_delete_kvp,
    kvs_exist_kv_pairs, kvs_get_device_capacity, kvs_get_device_utilization, kvs_get_kvp_info,
    kvs_iterate_next, kvs_retrieve_kvp, kvs_store_kvp, KvsExistList, KvsIteratorList, KvsKey,
    KvsKeyGroupFilter, KvsKvpInfo, KvsOptionDelete, KvsOptionIterator, KvsOptionRetrieve,
    KvsOptionStore, KvsValue,
};
use std::ffi::c_void;
use std::ptr::null_mut;

/// A `kvs_device_handle` or `kvs_key_space_handle`, as the number it is (it is `Send`).
pub type H = usize;

pub fn ptr(h: H) -> *mut c_void {
    h as *mut c_void
}

/// `kvs_store_type` values.
pub const POST: i32 = 0;
pub const UPDATE_ONLY: i32 = 1;
pub const NOOVERWRITE: i32 = 2;
pub const APPEND: i32 = 3;
/// `kvs_iterator_type` values.
pub const ITER_KEY: i32 = 0;
pub const ITER_KEY_VALUE: i32 = 1;

pub fn key_of(k: &[u8]) -> KvsKey {
    KvsKey {
        key: k.as_ptr().cast_mut().cast(),
        length: k.len() as u16,
    }
}

pub fn value_of(v: &[u8]) -> KvsValue {
    KvsValue {
        value: v.as_ptr().cast_mut().cast(),
        length: v.len() as u32,
        actual_value_size: 0,
        offset: 0,
    }
}

/// The filter of keys starting with `prefix` (4 bytes).
pub fn filter_of(prefix: &[u8; 4]) -> KvsKeyGroupFilter {
    KvsKeyGroupFilter {
        bitmask: [0xff; 4],
        bit_pattern: *prefix,
    }
}

pub fn store(ks: H, key: &[u8], value: &[u8], st: Option<i32>) -> i32 {
    let (mut k, mut v) = (key_of(key), value_of(value));
    let mut opt = KvsOptionStore {
        st_type: st.unwrap_or(POST),
        assoc: null_mut(),
    };
    let opt = if st.is_some() {
        &mut opt as *mut _
    } else {
        null_mut()
    };
    // SAFETY: valid structures over live buffers.
    unsafe { kvs_store_kvp(ptr(ks), &mut k, &mut v, opt) }
}

/// What a retrieve wrote.
pub struct Got {
    pub code: i32,
    pub buf: Vec<u8>,
    pub length: u32,
    pub actual: u32,
}

pub fn retrieve(ks: H, key: &[u8], room: usize, offset: u32, delete: bool) -> Got {
    let mut k = key_of(key);
    let mut buf = vec![0xeeu8; room];
    let mut v = KvsValue {
        value: buf.as_mut_ptr().cast(),
        length: room as u32,
        actual_value_size: u32::MAX,
        offset,
    };
    let mut opt = KvsOptionRetrieve {
        kvs_retrieve_delete: u8::from(delete),
    };
    // SAFETY: valid structures over live buffers.
    let code = unsafe { kvs_retrieve_kvp(ptr(ks), &mut k, &mut opt, &mut v) };
    Got {
        code,
        length: v.length,
        actual: v.actual_value_size,
        buf,
    }
}

pub fn delete(ks: H, key: &[u8], must_exist: bool) -> i32 {
    let mut k = key_of(key);
    let mut opt = KvsOptionDelete {
        kvs_delete_error: u8::from(must_exist),
    };
    // SAFETY: valid structures over live buffers.
    unsafe { kvs_delete_kvp(ptr(ks), &mut k, &mut opt) }
}

pub fn exist(ks: H, keys: &[Vec<u8>]) -> (i32, Vec<bool>) {
    let mut ks_keys: Vec<KvsKey> = keys.iter().map(|k| key_of(k)).collect();
    let mut bits = vec![0xffu8; keys.len().div_ceil(8)];
    let mut list = KvsExistList {
        num_keys: 0,
        keys: null_mut(),
        length: bits.len() as u32,
        result_buffer: bits.as_mut_ptr(),
    };
    // SAFETY: valid structures over live buffers.
    let code =
        unsafe { kvs_exist_kv_pairs(ptr(ks), keys.len() as u32, ks_keys.as_mut_ptr(), &mut list) };
    (code, bits_of(&bits, keys.len()))
}

/// The first `n` bits of `bits`, least significant first.
pub fn bits_of(bits: &[u8], n: usize) -> Vec<bool> {
    (0..n).map(|i| bits[i / 8] & (1 << (i % 8)) != 0).collect()
}

pub fn kvp_info(ks: H, key: &[u8]) -> (i32, u32, Vec<u8>) {
    let mut k = key_of(key);
    let mut copy = vec![0u8; key.len()];
    let mut info = KvsKvpInfo {
        key_len: 0,
        key: copy.as_mut_ptr(),
        value_len: u32::MAX,
    };
    // SAFETY: valid structures over live buffers.
    let code = unsafe { kvs_get_kvp_info(ptr(ks), &mut k, &mut info) };
    (code, info.value_len, copy)
}

pub fn delete_group(ks: H, prefix: &[u8; 4]) -> i32 {
    let mut f = filter_of(prefix);
    // SAFETY: a valid filter.
    unsafe { kvs_delete_key_group(ptr(ks), &mut f) }
}

pub fn capacity(dev: H) -> (i32, u64) {
    let mut c = u64::MAX;
    // SAFETY: a writable u64.
    let code = unsafe { kvs_get_device_capacity(ptr(dev), &mut c) };
    (code, c)
}

pub fn utilization(dev: H) -> (i32, u32) {
    let mut u = u32::MAX;
    // SAFETY: a writable u32.
    let code = unsafe { kvs_get_device_utilization(ptr(dev), &mut u) };
    (code, u)
}

pub fn create_iterator(ks: H, prefix: &[u8; 4], with_values: bool) -> (i32, u8) {
    let mut op = KvsOptionIterator {
        iter_type: if with_values {
            ITER_KEY_VALUE
        } else {
            ITER_KEY
        },
    };
    let mut f = filter_of(prefix);
    let mut it = 0u8;
    // SAFETY: valid structures.
    let code = unsafe { kvs_create_iterator(ptr(ks), &mut op, &mut f, &mut it) };
    (code, it)
}

pub fn delete_iterator(ks: H, it: u8) -> i32 {
    kvs_delete_iterator(ptr(ks), it)
}

/// What one `kvs_iterate_next` filled.
pub struct Batch {
    pub code: i32,
    pub entries: u32,
    pub end: bool,
    pub bytes: Vec<u8>,
}

impl Batch {
    /// What `list` (over `buf`) says a next call that returned `code` filled.
    pub fn of(code: i32, list: &KvsIteratorList, mut buf: Vec<u8>) -> Batch {
        buf.truncate((list.size as usize).min(buf.len()));
        Batch {
            code,
            entries: list.num_entries,
            end: list.end != 0,
            bytes: buf,
        }
    }
}

/// A list for a next call to fill, over all of `buf`.
pub fn list_over(buf: &mut [u8]) -> KvsIteratorList {
    KvsIteratorList {
        num_entries: u32::MAX,
        end: 0,
        size: buf.len() as u32,
        it_list: buf.as_mut_ptr(),
    }
}

pub fn iterate_next(ks: H, it: u8, room: usize) -> Batch {
    let mut buf = vec![0u8; room];
    let mut list = list_over(&mut buf);
    // SAFETY: a writable list over a live buffer.
    let code = unsafe { kvs_iterate_next(ptr(ks), it, &mut list) };
    Batch::of(code, &list, buf)
}

/// An iterator entry: its key and (key-value iterators) its value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// A key (and its value, for key-value iterators) per entry of `bytes`; `Err` if the
/// entries do not parse as the docs lay them out.
pub fn parse_entries(bytes: &[u8], with_values: bool) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    let take = |at: &mut usize| -> Result<Vec<u8>, String> {
        let len_bytes = bytes
            .get(*at..*at + 4)
            .ok_or_else(|| format!("entry length cut at {at}"))?;
        let len = u32::from_le_bytes(len_bytes.try_into().map_err(|_| "len")?) as usize;
        let data = bytes
            .get(*at + 4..*at + 4 + len)
            .ok_or_else(|| format!("entry of {len} bytes cut at {at}"))?;
        *at += 4 + len;
        Ok(data.to_vec())
    };
    while at < bytes.len() {
        let k = take(&mut at)?;
        let v = if with_values {
            take(&mut at)?
        } else {
            Vec::new()
        };
        out.push((k, v));
    }
    Ok(out)
}
