//! `extern "C"`: the `_async` calls. Each checks its handles, then queues the synchronous
//! call on the device handle's completion threads; there it runs, and the callback gets a
//! `kvs_postprocess_context` naming the call, the caller's pointers and the result. The
//! caller keeps the keys, values and lists it passed alive until its callback runs (the
//! kit's rule). A full queue is `KVS_ERR_SYS_IO` (retry), the callback not called.

use crate::completion::Refused;
use crate::edge::{guard, key_space, Handle};
use crate::ffi_iterator::kvs_iterate_next;
use crate::ffi_kvp::{
    kvs_delete_key_group, kvs_delete_kvp, kvs_exist_kv_pairs, kvs_retrieve_kvp, kvs_store_kvp,
};
use crate::ffi_types::{
    cmd, CEnum, IterHandle, KvsExistList, KvsIteratorList, KvsKey, KvsKeyGroupFilter,
    KvsOptionDelete, KvsOptionRetrieve, KvsOptionStore, KvsPostprocessContext, KvsResult, KvsValue,
    PostFn, ResultBuffer,
};
use crate::result::{KvsError, KvsOutcome};
use std::ffi::c_void;
use std::ptr::null_mut;

/// What the callback's context carries, gathered at the call.
struct Done {
    context: CEnum,
    ks_hd: Handle,
    key: *mut KvsKey,
    value: *mut KvsValue,
    option: *mut c_void,
    private1: *mut c_void,
    private2: *mut c_void,
    iter_hd: IterHandle,
    result_buffer: ResultBuffer,
    post_fn: PostFn,
}

// SAFETY: the pointers are the caller's, handed back to its callback untouched; the kit's
// contract is that they stay valid until then, on whichever thread it runs.
unsafe impl Send for Done {}

impl Done {
    fn new(
        context: CEnum,
        ks_hd: Handle,
        private: (*mut c_void, *mut c_void),
        post_fn: PostFn,
    ) -> Done {
        Done {
            context,
            ks_hd,
            key: null_mut(),
            value: null_mut(),
            option: null_mut(),
            private1: private.0,
            private2: private.1,
            iter_hd: 0,
            result_buffer: ResultBuffer { list: null_mut() },
            post_fn,
        }
    }

    /// Calls the callback with `result`.
    fn complete(self, result: KvsResult) {
        let mut ctx = KvsPostprocessContext {
            context: self.context,
            ks_hd: self.ks_hd,
            key: self.key,
            value: self.value,
            option: self.option,
            private1: self.private1,
            private2: self.private2,
            result,
            iter_hd: self.iter_hd,
            result_buffer: self.result_buffer,
        };
        if let Some(f) = self.post_fn {
            // SAFETY: a C function of the kvs_postprocess_function type, given the
            // context it expects, which lives until it returns.
            unsafe { f(&mut ctx) };
        }
    }
}

/// Queues `op` on `done.ks_hd`'s device; the callback gets what `op` returns.
fn enqueue(done: Done, op: impl FnOnce(&Done) -> KvsResult + Send + 'static) -> KvsOutcome<()> {
    let (_, ks) = key_space(done.ks_hd)?;
    let job = Box::new(move || {
        let done = done;
        let result = op(&done);
        done.complete(result);
    });
    ks.device.pool.submit(job).map_err(|r| match r {
        Refused::Full => KvsError::QueueFull,
        Refused::Closed => KvsError::NoDevice,
    })
}

/// `kvs_retrieve_kvp_async`.
///
/// # Safety
/// As `kvs_retrieve_kvp`, the pointers valid until the callback ran.
#[no_mangle]
pub unsafe extern "C" fn kvs_retrieve_kvp_async(
    ks_hd: Handle,
    key: *mut KvsKey,
    opt: *mut KvsOptionRetrieve,
    private1: *mut c_void,
    private2: *mut c_void,
    value: *mut KvsValue,
    post_fn: PostFn,
) -> KvsResult {
    guard(|| {
        let mut d = Done::new(cmd::RETRIEVE, ks_hd, (private1, private2), post_fn);
        (d.key, d.value, d.option) = (key, value, opt.cast());
        // SAFETY: the caller's contract, kept until the callback.
        enqueue(d, |d| unsafe {
            kvs_retrieve_kvp(d.ks_hd, d.key, d.option.cast(), d.value)
        })
    })
}

/// `kvs_store_kvp_async`.
///
/// # Safety
/// As `kvs_store_kvp`, the pointers valid until the callback ran.
#[no_mangle]
pub unsafe extern "C" fn kvs_store_kvp_async(
    ks_hd: Handle,
    key: *mut KvsKey,
    value: *mut KvsValue,
    opt: *mut KvsOptionStore,
    private1: *mut c_void,
    private2: *mut c_void,
    post_fn: PostFn,
) -> KvsResult {
    guard(|| {
        let mut d = Done::new(cmd::STORE, ks_hd, (private1, private2), post_fn);
        (d.key, d.value, d.option) = (key, value, opt.cast());
        // SAFETY: the caller's contract, kept until the callback.
        enqueue(d, |d| unsafe {
            kvs_store_kvp(d.ks_hd, d.key, d.value, d.option.cast())
        })
    })
}

/// `kvs_delete_kvp_async`.
///
/// # Safety
/// As `kvs_delete_kvp`, the pointers valid until the callback ran.
#[no_mangle]
pub unsafe extern "C" fn kvs_delete_kvp_async(
    ks_hd: Handle,
    key: *mut KvsKey,
    opt: *mut KvsOptionDelete,
    private1: *mut c_void,
    private2: *mut c_void,
    post_fn: PostFn,
) -> KvsResult {
    guard(|| {
        let mut d = Done::new(cmd::DELETE, ks_hd, (private1, private2), post_fn);
        (d.key, d.option) = (key, opt.cast());
        // SAFETY: the caller's contract, kept until the callback.
        enqueue(d, |d| unsafe {
            kvs_delete_kvp(d.ks_hd, d.key, d.option.cast())
        })
    })
}

/// `kvs_delete_key_group_async`.
///
/// # Safety
/// As `kvs_delete_key_group`, the filter valid until the callback ran.
#[no_mangle]
pub unsafe extern "C" fn kvs_delete_key_group_async(
    ks_hd: Handle,
    grp_fltr: *mut KvsKeyGroupFilter,
    private1: *mut c_void,
    private2: *mut c_void,
    post_fn: PostFn,
) -> KvsResult {
    guard(|| {
        let mut d = Done::new(cmd::DELETE_GROUP, ks_hd, (private1, private2), post_fn);
        d.option = grp_fltr.cast();
        // SAFETY: the caller's contract, kept until the callback.
        enqueue(d, |d| unsafe {
            kvs_delete_key_group(d.ks_hd, d.option.cast())
        })
    })
}

/// `kvs_exist_kv_pairs_async`: the context's `key` is `keys`, its list `list`.
///
/// # Safety
/// As `kvs_exist_kv_pairs`, the pointers valid until the callback ran.
#[no_mangle]
pub unsafe extern "C" fn kvs_exist_kv_pairs_async(
    ks_hd: Handle,
    key_cnt: u32,
    keys: *mut KvsKey,
    list: *mut KvsExistList,
    private1: *mut c_void,
    private2: *mut c_void,
    post_fn: PostFn,
) -> KvsResult {
    guard(|| {
        let mut d = Done::new(cmd::EXIST, ks_hd, (private1, private2), post_fn);
        d.key = keys;
        d.result_buffer = ResultBuffer { list };
        // SAFETY: the caller's contract, kept until the callback; `list` is the union
        // member this call set.
        enqueue(d, move |d| unsafe {
            kvs_exist_kv_pairs(d.ks_hd, key_cnt, d.key, d.result_buffer.list)
        })
    })
}

/// `kvs_iterate_next_async`: the context's list is `iter_list`.
///
/// # Safety
/// As `kvs_iterate_next`, the list valid until the callback ran.
#[no_mangle]
pub unsafe extern "C" fn kvs_iterate_next_async(
    ks_hd: Handle,
    iter_hd: IterHandle,
    iter_list: *mut KvsIteratorList,
    private1: *mut c_void,
    private2: *mut c_void,
    post_fn: PostFn,
) -> KvsResult {
    guard(|| {
        let mut d = Done::new(cmd::ITER_NEXT, ks_hd, (private1, private2), post_fn);
        d.iter_hd = iter_hd;
        d.result_buffer = ResultBuffer { iter_list };
        // SAFETY: the caller's contract, kept until the callback; `iter_list` is the union
        // member this call set.
        enqueue(d, |d| unsafe {
            kvs_iterate_next(d.ks_hd, d.iter_hd, d.result_buffer.iter_list)
        })
    })
}
