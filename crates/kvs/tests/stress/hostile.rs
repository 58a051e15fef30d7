//! The hostile calls a worker mixes into its stream, as a buggy or hostile C program makes
//! them: NULL for each pointer, empty keys, keys and values past the limits, unknown
//! options, forged and closed handles, async calls refused at once. Each must return its
//! documented code and change nothing: the key it named is checked against the model after.

use crate::asyncs::show;
use crate::ffi::{self, key_of, ptr, value_of, APPEND, H};
use crate::worker::{expect, Worker};
use cerberus_kvs::{
    code, kvs_create_iterator, kvs_delete_key_group, kvs_exist_kv_pairs, kvs_exist_kv_pairs_async,
    kvs_get_kvp_info, kvs_iterate_next, kvs_retrieve_kvp, kvs_store_kvp, kvs_store_kvp_async,
    KvsExistList, KvsIteratorList, KvsKey, KvsOptionIterator, KvsPostprocessContext, KvsValue,
};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};

/// A key space handle no one was given.
const FORGED: H = 0xdead_bee0;

/// Set if a refused async call's callback ever ran (a panic here would abort the process
/// without the seed and the thread's operations).
static NEVER_RAN: AtomicBool = AtomicBool::new(false);

unsafe extern "C" fn never(_: *mut KvsPostprocessContext) {
    NEVER_RAN.store(true, Ordering::SeqCst);
}

impl Worker {
    pub fn hostile(&mut self) -> Result<(), String> {
        let k = self.any_key();
        let v = self.value();
        let ks = self.ctx.ks;
        let which = self.rng.below(24);
        self.note(format!("hostile {which} on {}", show(&k)));
        let (mut key, mut val) = (key_of(&k), value_of(&v));
        let (got, want) = match which {
            // SAFETY (all arms): the pointers are NULL or valid, as each case says.
            0 => (
                unsafe { kvs_store_kvp(ptr(ks), null_mut(), &mut val, null_mut()) },
                code::PARAM_INVALID,
            ),
            1 => (
                unsafe { kvs_store_kvp(ptr(ks), &mut key, null_mut(), null_mut()) },
                code::PARAM_INVALID,
            ),
            2 => {
                let mut empty = KvsKey {
                    key: key.key,
                    length: 0,
                };
                (
                    unsafe { kvs_store_kvp(ptr(ks), &mut empty, &mut val, null_mut()) },
                    code::KEY_LENGTH_INVALID,
                )
            }
            3 => {
                let mut nokey = KvsKey {
                    key: null_mut(),
                    length: 9,
                };
                (
                    unsafe { kvs_store_kvp(ptr(ks), &mut nokey, &mut val, null_mut()) },
                    code::PARAM_INVALID,
                )
            }
            4 => {
                let mut noval = KvsValue {
                    value: null_mut(),
                    length: 10,
                    actual_value_size: 0,
                    offset: 0,
                };
                (
                    unsafe { kvs_store_kvp(ptr(ks), &mut key, &mut noval, null_mut()) },
                    code::PARAM_INVALID,
                )
            }
            5 => {
                let mut long = k.clone();
                let len = self
                    .rng
                    .range(self.ctx.max_key + 1, (self.ctx.max_key + 300).min(65535));
                long.resize(len, b'x');
                (ffi::store(ks, &long, &v, None), code::KEY_LENGTH_INVALID)
            }
            6 => {
                let big = vec![7u8; self.ctx.max_value + 1];
                (ffi::store(ks, &k, &big, None), code::VALUE_LENGTH_INVALID)
            }
            7 => (ffi::store(ks, &k, &v, Some(APPEND)), code::OPTION_INVALID),
            8 => (ffi::store(ks, &k, &v, Some(0x7777)), code::OPTION_INVALID),
            9 => (
                unsafe { kvs_retrieve_kvp(ptr(ks), &mut key, null_mut(), null_mut()) },
                code::PARAM_INVALID,
            ),
            10 => {
                let mut nobuf = KvsValue {
                    value: null_mut(),
                    length: 64,
                    actual_value_size: 0,
                    offset: 0,
                };
                (
                    unsafe { kvs_retrieve_kvp(ptr(ks), &mut key, null_mut(), &mut nobuf) },
                    code::PARAM_INVALID,
                )
            }
            11 => (ffi::delete(ks, &[], false), code::KEY_LENGTH_INVALID),
            12 => {
                let mut list = exist_list(&mut [0u8; 1]);
                (
                    unsafe { kvs_exist_kv_pairs(ptr(ks), 3, null_mut(), &mut list) },
                    code::PARAM_INVALID,
                )
            }
            13 => {
                let mut bits = [0u8; 1];
                let mut list = exist_list(&mut bits);
                let mut keys = [key_of(&k), key_of(&k)];
                list.length = 0;
                (
                    unsafe { kvs_exist_kv_pairs(ptr(ks), 2, keys.as_mut_ptr(), &mut list) },
                    code::BUFFER_SMALL,
                )
            }
            14 => {
                let mut keys = [key_of(&k)];
                (
                    unsafe { kvs_exist_kv_pairs(ptr(ks), 1, keys.as_mut_ptr(), null_mut()) },
                    code::PARAM_INVALID,
                )
            }
            15 => (
                unsafe { kvs_get_kvp_info(ptr(ks), &mut key, null_mut()) },
                code::PARAM_INVALID,
            ),
            16 => (ffi::store(FORGED, &k, &v, None), code::KS_NOT_OPEN),
            17 => (ffi::store(0, &k, &v, None), code::PARAM_INVALID),
            18 => (
                ffi::store(self.ctx.closed_ks, &k, &v, None),
                code::KS_NOT_OPEN,
            ),
            19 => {
                let dev = [FORGED, self.ctx.closed_dev, 0][self.rng.below(3)];
                let (c, _) = ffi::capacity(dev);
                let close = crate::device::close_device(self.ctx.closed_dev);
                expect("double close of a device", close, code::DEV_NOT_EXIST)?;
                (c, code::DEV_NOT_EXIST)
            }
            20 => return self.hostile_iterator(),
            21 => {
                // Refused at once: the callback must never run.
                let ks_hd = [FORGED, self.ctx.closed_ks][self.rng.below(2)];
                let r = unsafe {
                    kvs_store_kvp_async(
                        ptr(ks_hd),
                        &mut key,
                        &mut val,
                        null_mut(),
                        null_mut(),
                        null_mut(),
                        Some(never),
                    )
                };
                let r0 = unsafe {
                    kvs_store_kvp_async(
                        null_mut(),
                        &mut key,
                        &mut val,
                        null_mut(),
                        null_mut(),
                        null_mut(),
                        Some(never),
                    )
                };
                expect("async store on a NULL handle", r0, code::PARAM_INVALID)?;
                (r, code::KS_NOT_OPEN)
            }
            22 => (self.exist_without_callback(&k), code::SUCCESS),
            _ => (
                unsafe { kvs_delete_key_group(ptr(ks), null_mut()) },
                code::PARAM_INVALID,
            ),
        };
        expect(&format!("hostile call {which}"), got, want)?;
        if NEVER_RAN.load(Ordering::SeqCst) {
            return Err("the callback of a refused async call ran".into());
        }
        self.check_key(&k)
    }

    /// An exist with no callback (the library runs it and tells no one): its structures
    /// are leaked, since nothing says when it ran.
    fn exist_without_callback(&mut self, k: &[u8]) -> i32 {
        let keys: &'static mut [KvsKey] =
            Box::leak(Box::new([key_of(Box::leak(k.to_vec().into_boxed_slice()))]));
        let bits: &'static mut [u8] = Box::leak(Box::new([0u8; 1]));
        let list = Box::leak(Box::new(exist_list(bits)));
        // SAFETY: leaked, so valid whenever the call runs.
        unsafe {
            kvs_exist_kv_pairs_async(
                ptr(self.ctx.ks),
                1,
                keys.as_mut_ptr(),
                list,
                null_mut(),
                null_mut(),
                None,
            )
        }
    }

    /// Iterator calls with bad arguments: NULL pointers, an unknown type, unknown handles.
    fn hostile_iterator(&mut self) -> Result<(), String> {
        let ks = self.ctx.ks;
        let mut op = KvsOptionIterator { iter_type: 9 };
        let mut f = ffi::filter_of(&self.prefix);
        let mut it = 0u8;
        // SAFETY: valid or NULL pointers.
        let r = unsafe { kvs_create_iterator(ptr(ks), &mut op, &mut f, &mut it) };
        expect("iterator of an unknown type", r, code::OPTION_INVALID)?;
        op.iter_type = ffi::ITER_KEY;
        let r = unsafe { kvs_create_iterator(ptr(ks), &mut op, null_mut(), &mut it) };
        expect("iterator with a NULL filter", r, code::PARAM_INVALID)?;
        let r = unsafe { kvs_create_iterator(ptr(ks), &mut op, &mut f, null_mut()) };
        expect("iterator with a NULL handle out", r, code::PARAM_INVALID)?;
        let r = unsafe { kvs_create_iterator(ptr(self.ctx.closed_ks), &mut op, &mut f, &mut it) };
        expect("iterator of a closed key space", r, code::KS_NOT_OPEN)?;
        // 0 is never a handle; the others' live iterators are theirs to read (one key
        // space handle), so no other number is surely unknown.
        expect(
            "next of an unknown iterator",
            ffi::iterate_next(ks, 0, 64).code,
            code::ITERATOR_NOT_EXIST,
        )?;
        let r = unsafe { kvs_iterate_next(ptr(ks), 1, null_mut()) };
        expect("next into a NULL list", r, code::PARAM_INVALID)?;
        let mut list = KvsIteratorList {
            num_entries: 0,
            end: 0,
            size: 64,
            it_list: null_mut(),
        };
        let r = unsafe { kvs_iterate_next(ptr(ks), 1, &mut list) };
        expect("next into a NULL buffer", r, code::PARAM_INVALID)
    }
}

fn exist_list(bits: &mut [u8]) -> KvsExistList {
    KvsExistList {
        num_keys: 0,
        keys: null_mut(),
        length: bits.len() as u32,
        result_buffer: bits.as_mut_ptr(),
    }
}
