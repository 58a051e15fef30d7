//! An `_async` call waiting in the queue: what it is, the caller's pointers, and the
//! callback that gets the `kvs_postprocess_context` once it ran.

use crate::ffi_types::{
    CEnum, IterHandle, KvsKey, KvsPostprocessContext, KvsResult, KvsValue, PostFn, ResultBuffer,
};
use std::ffi::c_void;
use std::ptr::null_mut;

/// How a queued call runs.
pub enum Kind {
    /// A store: `key`, `value`, `option` as `kvs_store_kvp` takes them; sent with the stores
    /// beside it in the queue.
    Store,
    /// A retrieve: `key`, `option`, `value` as `kvs_retrieve_kvp` takes them; sent with the
    /// retrieves beside it.
    Retrieve,
    /// Any other call, run on its own.
    Call(Box<dyn FnOnce(&Pending) -> KvsResult + Send>),
}

/// A queued call.
pub struct Pending {
    pub kind: Kind,
    pub context: CEnum,
    /// The `kvs_key_space_handle` it names.
    pub ks_hd: *mut c_void,
    pub key: *mut KvsKey,
    pub value: *mut KvsValue,
    pub option: *mut c_void,
    pub private1: *mut c_void,
    pub private2: *mut c_void,
    pub iter_hd: IterHandle,
    pub result_buffer: ResultBuffer,
    pub post_fn: PostFn,
}

// SAFETY: the pointers are the caller's, used as the call they came with says and handed
// back to its callback; the kit's contract is that they stay valid until then, on whichever
// thread it runs.
unsafe impl Send for Pending {}

impl Pending {
    /// A call of `kind` (`context` names it to the callback) on key space `ks_hd`, with the
    /// caller's private pointers; the other pointers NULL until set.
    pub fn new(
        kind: Kind,
        context: CEnum,
        ks_hd: *mut c_void,
        private: (*mut c_void, *mut c_void),
        post_fn: PostFn,
    ) -> Pending {
        Pending {
            kind,
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
    pub fn complete(&self, result: KvsResult) {
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
            // SAFETY: a C function of the kvs_postprocess_function type, given the context
            // it expects, which lives until it returns.
            unsafe { f(&mut ctx) };
        }
    }
}
