//! `extern "C"`: the `_async` calls. Each checks its key space handle, then queues the call
//! on the device handle's completion threads (`async_batch` runs them there, stores and
//! retrieves in batches); the callback then gets a `kvs_postprocess_context` naming the
//! call, the caller's pointers and the result. The caller keeps the keys, values and lists
//! it passed alive until its callback runs (the kit's rule). A full queue is
//! `KVS_ERR_SYS_IO` (retry), the callback not called.

use crate::edge::{guard, key_space, Handle};
use crate::ffi_iterator::kvs_iterate_next;
use crate::ffi_kvp::{kvs_delete_key_group, kvs_delete_kvp, kvs_exist_kv_pairs};
use crate::ffi_types::{
    cmd, CEnum, IterHandle, KvsExistList, KvsIteratorList, KvsKey, KvsKeyGroupFilter,
    KvsOptionDelete, KvsOptionRetrieve, KvsOptionStore, KvsResult, KvsValue, PostFn, ResultBuffer,
};
use crate::job_queue::Refused;
use crate::pending::{Kind, Pending};
use crate::result::{KvsError, KvsOutcome};
use std::ffi::c_void;

/// Queues `call` on the device of its key space.
fn enqueue(call: Pending) -> KvsOutcome<()> {
    let (_, ks) = key_space(call.ks_hd)?;
    ks.device.pool.submit(call).map_err(|r| match r {
        Refused::Full => KvsError::QueueFull,
        Refused::Closed => KvsError::NoDevice,
    })
}

/// A call that runs on its own: `op` gives its result.
fn call(
    context: CEnum,
    ks_hd: Handle,
    private: (*mut c_void, *mut c_void),
    post_fn: PostFn,
    op: impl FnOnce(&Pending) -> KvsResult + Send + 'static,
) -> Pending {
    Pending::new(Kind::Call(Box::new(op)), context, ks_hd, private, post_fn)
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
        let p = (private1, private2);
        let mut p = Pending::new(Kind::Retrieve, cmd::RETRIEVE, ks_hd, p, post_fn);
        (p.key, p.value, p.option) = (key, value, opt.cast());
        enqueue(p)
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
        let p = (private1, private2);
        let mut p = Pending::new(Kind::Store, cmd::STORE, ks_hd, p, post_fn);
        (p.key, p.value, p.option) = (key, value, opt.cast());
        enqueue(p)
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
        // SAFETY: the caller's contract, kept until the callback.
        let op = |p: &Pending| unsafe { kvs_delete_kvp(p.ks_hd, p.key, p.option.cast()) };
        let mut p = call(cmd::DELETE, ks_hd, (private1, private2), post_fn, op);
        (p.key, p.option) = (key, opt.cast());
        enqueue(p)
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
        // SAFETY: the caller's contract, kept until the callback.
        let op = |p: &Pending| unsafe { kvs_delete_key_group(p.ks_hd, p.option.cast()) };
        let mut p = call(cmd::DELETE_GROUP, ks_hd, (private1, private2), post_fn, op);
        p.option = grp_fltr.cast();
        enqueue(p)
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
        // SAFETY: the caller's contract, kept until the callback; `list` is the union
        // member this call set.
        let op = move |p: &Pending| unsafe {
            kvs_exist_kv_pairs(p.ks_hd, key_cnt, p.key, p.result_buffer.list)
        };
        let mut p = call(cmd::EXIST, ks_hd, (private1, private2), post_fn, op);
        p.key = keys;
        p.result_buffer = ResultBuffer { list };
        enqueue(p)
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
        // SAFETY: the caller's contract, kept until the callback; `iter_list` is the union
        // member this call set.
        let op = |p: &Pending| unsafe {
            kvs_iterate_next(p.ks_hd, p.iter_hd, p.result_buffer.iter_list)
        };
        let mut p = call(cmd::ITER_NEXT, ks_hd, (private1, private2), post_fn, op);
        p.iter_hd = iter_hd;
        p.result_buffer = ResultBuffer { iter_list };
        enqueue(p)
    })
}
