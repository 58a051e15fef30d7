//! The C structures of `include/kvs_struct.h`, field for field. Enums and `bool`s that C
//! hands in are read as integers: a C program may put any value there, and a Rust enum or
//! `bool` holding another value would be undefined behaviour.

use std::ffi::{c_char, c_void};

/// `kvs_result`: a C enum, an `int` on the ABIs we build for.
pub type KvsResult = i32;
/// `kvs_context`, `kvs_store_type`, `kvs_iterator_type`, `kvs_key_order`: C enums.
pub type CEnum = i32;
/// `kvs_iterator_handle`.
pub type IterHandle = u8;

/// `kvs_key`.
#[repr(C)]
pub struct KvsKey {
    pub key: *mut c_void,
    pub length: u16,
}

/// `kvs_value`.
#[repr(C)]
pub struct KvsValue {
    pub value: *mut c_void,
    pub length: u32,
    pub actual_value_size: u32,
    pub offset: u32,
}

/// `kvs_option_store`.
#[repr(C)]
pub struct KvsOptionStore {
    pub st_type: CEnum,
    pub assoc: *mut c_void,
}

/// `kvs_option_retrieve`.
#[repr(C)]
pub struct KvsOptionRetrieve {
    pub kvs_retrieve_delete: u8,
}

/// `kvs_option_delete`.
#[repr(C)]
pub struct KvsOptionDelete {
    pub kvs_delete_error: u8,
}

/// `kvs_option_iterator`.
#[repr(C)]
pub struct KvsOptionIterator {
    pub iter_type: CEnum,
}

/// `kvs_option_key_space` (passed by value).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KvsOptionKeySpace {
    pub ordering: CEnum,
}

/// `kvs_key_space_name`.
#[repr(C)]
pub struct KvsKeySpaceName {
    pub name_len: u32,
    pub name: *mut c_char,
}

/// `kvs_key_space`.
#[repr(C)]
pub struct KvsKeySpace {
    pub opened: u8,
    pub capacity: u64,
    pub free_size: u64,
    pub count: u64,
    pub name: *mut KvsKeySpaceName,
}

/// `kvs_device`.
#[repr(C)]
pub struct KvsDevice {
    pub capacity: u64,
    pub unalloc_capacity: u64,
    pub max_value_len: u32,
    pub max_key_len: u32,
    pub optimal_value_len: u32,
    pub optimal_value_granularity: u32,
    pub extended_info: *mut c_void,
}

/// `kvs_exist_list`.
#[repr(C)]
pub struct KvsExistList {
    pub num_keys: u32,
    pub keys: *mut KvsKey,
    pub length: u32,
    pub result_buffer: *mut u8,
}

/// `kvs_key_group_filter`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvsKeyGroupFilter {
    pub bitmask: [u8; 4],
    pub bit_pattern: [u8; 4],
}

/// `kvs_iterator_list`.
#[repr(C)]
pub struct KvsIteratorList {
    pub num_entries: u32,
    pub end: u8,
    pub size: u32,
    pub it_list: *mut u8,
}

/// `kvs_kvp_info`.
#[repr(C)]
pub struct KvsKvpInfo {
    pub key_len: u16,
    pub key: *mut u8,
    pub value_len: u32,
}

/// The union in `kvs_postprocess_context`: both members are pointers.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ResultBuffer {
    pub iter_list: *mut KvsIteratorList,
    pub list: *mut KvsExistList,
}

/// `kvs_postprocess_context`: what a completion callback receives.
#[repr(C)]
pub struct KvsPostprocessContext {
    pub context: CEnum,
    pub ks_hd: *mut c_void,
    pub key: *mut KvsKey,
    pub value: *mut KvsValue,
    pub option: *mut c_void,
    pub private1: *mut c_void,
    pub private2: *mut c_void,
    pub result: KvsResult,
    pub iter_hd: IterHandle,
    pub result_buffer: ResultBuffer,
}

/// `kvs_postprocess_function`: a nullable C function pointer.
pub type PostFn = Option<unsafe extern "C" fn(*mut KvsPostprocessContext)>;

/// `kvs_context` values.
pub mod cmd {
    use super::CEnum;
    pub const DELETE: CEnum = 0x01;
    pub const DELETE_GROUP: CEnum = 0x02;
    pub const EXIST: CEnum = 0x03;
    pub const ITER_NEXT: CEnum = 0x06;
    pub const RETRIEVE: CEnum = 0x07;
    pub const STORE: CEnum = 0x08;
}

/// The sizes and offsets C sees, checked against the x86-64/aarch64 Linux ABI.
#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_match_the_c_headers() {
        assert_eq!(size_of::<KvsKey>(), 16);
        assert_eq!(size_of::<KvsValue>(), 24);
        assert_eq!(size_of::<KvsKeySpaceName>(), 16);
        assert_eq!(size_of::<KvsKeySpace>(), 40);
        assert_eq!(size_of::<KvsDevice>(), 40);
        assert_eq!(size_of::<KvsExistList>(), 32);
        assert_eq!(size_of::<KvsIteratorList>(), 24);
        assert_eq!(offset_of!(KvsIteratorList, size), 8);
        assert_eq!(size_of::<KvsKvpInfo>(), 24);
        assert_eq!(offset_of!(KvsPostprocessContext, result), 56);
        assert_eq!(offset_of!(KvsPostprocessContext, iter_hd), 60);
        assert_eq!(size_of::<KvsPostprocessContext>(), 72);
    }
}
