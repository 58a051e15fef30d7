//! The `_async` calls: each call's structures live in a boxed [`Call`] until its callback
//! came; the callback checks the result and the data against what the model expected when
//! the call was made, and counts itself in its [`Group`], which the worker waits for. An
//! async iterator next or key group delete is made alone and waited for.

use crate::ffi::{self, bits_of, key_of, ptr, value_of, H};
use cerberus_kvs::{
    code, kvs_delete_key_group_async, kvs_delete_kvp_async, kvs_exist_kv_pairs_async,
    kvs_iterate_next_async, kvs_retrieve_kvp_async, kvs_store_kvp_async, KvsExistList, KvsKey,
    KvsOptionDelete, KvsOptionRetrieve, KvsOptionStore, KvsPostprocessContext, KvsValue, PostFn,
};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// `kvs_context` values.
const CMD_DELETE: i32 = 0x01;
const CMD_DELETE_GROUP: i32 = 0x02;
const CMD_EXIST: i32 = 0x03;
const CMD_ITER_NEXT: i32 = 0x06;
const CMD_RETRIEVE: i32 = 0x07;
const CMD_STORE: i32 = 0x08;

/// What a call expects its callback to report.
pub enum Expect {
    /// A store or delete: just the code.
    Code(i32),
    /// A retrieve: the code, and the stored value (`None`: absent).
    Value(i32, Option<Vec<u8>>),
    /// An exist: each key's bit.
    Bits(Vec<bool>),
}

/// One queued call and the structures the library reads and writes until its callback.
pub struct Call {
    pub what: String,
    context: i32,
    expect: Expect,
    _key_bytes: Vec<u8>,
    key: KvsKey,
    _value_bytes: Vec<u8>,
    buf: Vec<u8>,
    value: KvsValue,
    store_opt: KvsOptionStore,
    retrieve_opt: KvsOptionRetrieve,
    delete_opt: KvsOptionDelete,
    _exist_bytes: Vec<Vec<u8>>,
    exist_keys: Vec<KvsKey>,
    exist_bits: Vec<u8>,
    exist_list: KvsExistList,
    /// Set by the callback: `Some` once it came (with a failure, if any).
    outcome: Option<Result<(), String>>,
}

impl Call {
    fn new(what: String, context: i32, expect: Expect, key: Vec<u8>) -> Box<Call> {
        let k = key_of(&key);
        Box::new(Call {
            what,
            context,
            expect,
            key: k,
            _key_bytes: key,
            _value_bytes: Vec::new(),
            buf: Vec::new(),
            value: value_of(&[]),
            store_opt: KvsOptionStore {
                st_type: 0,
                assoc: null_mut(),
            },
            retrieve_opt: KvsOptionRetrieve {
                kvs_retrieve_delete: 0,
            },
            delete_opt: KvsOptionDelete {
                kvs_delete_error: 0,
            },
            _exist_bytes: Vec::new(),
            exist_keys: Vec::new(),
            exist_bits: Vec::new(),
            exist_list: KvsExistList {
                num_keys: 0,
                keys: null_mut(),
                length: 0,
                result_buffer: null_mut(),
            },
            outcome: None,
        })
    }

    pub fn store(key: Vec<u8>, value: Vec<u8>, st: i32, expect: i32) -> Box<Call> {
        let what = format!("async store {} ({} B, type {st})", show(&key), value.len());
        let mut c = Call::new(what, CMD_STORE, Expect::Code(expect), key);
        c.value = value_of(&value);
        c._value_bytes = value;
        c.store_opt.st_type = st;
        c
    }

    pub fn retrieve(
        key: Vec<u8>,
        (room, offset): (usize, u32),
        delete: bool,
        expect: Expect,
    ) -> Box<Call> {
        let what = format!(
            "async retrieve {} (room {room}, offset {offset}, delete {delete})",
            show(&key)
        );
        let mut c = Call::new(what, CMD_RETRIEVE, expect, key);
        c.buf = vec![0xee; room];
        c.value = KvsValue {
            value: c.buf.as_mut_ptr().cast(),
            length: room as u32,
            actual_value_size: u32::MAX,
            offset,
        };
        c.retrieve_opt.kvs_retrieve_delete = u8::from(delete);
        c
    }

    pub fn delete(key: Vec<u8>, must_exist: bool, expect: i32) -> Box<Call> {
        let what = format!("async delete {} (must exist {must_exist})", show(&key));
        let mut c = Call::new(what, CMD_DELETE, Expect::Code(expect), key);
        c.delete_opt.kvs_delete_error = u8::from(must_exist);
        c
    }

    pub fn exist(keys: Vec<Vec<u8>>, expect: Vec<bool>) -> Box<Call> {
        let what = format!("async exist of {} keys", keys.len());
        let mut c = Call::new(what, CMD_EXIST, Expect::Bits(expect), Vec::new());
        c.exist_keys = keys.iter().map(|k| key_of(k)).collect();
        c._exist_bytes = keys;
        c.exist_bits = vec![0xff; c.exist_keys.len().div_ceil(8)];
        c.exist_list.length = c.exist_bits.len() as u32;
        c.exist_list.result_buffer = c.exist_bits.as_mut_ptr();
        c
    }

    /// Makes the call on `ks` (its callback counts in `group`); the code it returned.
    ///
    /// # Safety
    /// `self` and `group` stay where they are until the callback came.
    pub unsafe fn submit(&mut self, ks: H, group: &Group, null_key: bool) -> i32 {
        let me = (self as *mut Call).cast::<c_void>();
        let g = (group as *const Group).cast_mut().cast::<c_void>();
        let key = if null_key { null_mut() } else { &mut self.key };
        let post = Some(on_done as unsafe extern "C" fn(*mut KvsPostprocessContext));
        // SAFETY: the structures live in `self` until the callback (the caller's contract).
        unsafe {
            match self.context {
                CMD_STORE => kvs_store_kvp_async(
                    ptr(ks),
                    key,
                    &mut self.value,
                    &mut self.store_opt,
                    me,
                    g,
                    post,
                ),
                CMD_RETRIEVE => kvs_retrieve_kvp_async(
                    ptr(ks),
                    key,
                    &mut self.retrieve_opt,
                    me,
                    g,
                    &mut self.value,
                    post,
                ),
                CMD_DELETE => kvs_delete_kvp_async(ptr(ks), key, &mut self.delete_opt, me, g, post),
                _ => kvs_exist_kv_pairs_async(
                    ptr(ks),
                    self.exist_keys.len() as u32,
                    self.exist_keys.as_mut_ptr(),
                    &mut self.exist_list,
                    me,
                    g,
                    post,
                ),
            }
        }
    }

    /// The check of the callback's context against what this call expects.
    fn check(&self, ctx: &KvsPostprocessContext) -> Result<(), String> {
        if ctx.context != self.context {
            return Err(format!("context {} for {}", ctx.context, self.context));
        }
        match &self.expect {
            Expect::Code(c) => same_code(ctx.result, *c),
            Expect::Bits(bits) => {
                same_code(ctx.result, code::SUCCESS)?;
                let got = bits_of(&self.exist_bits, bits.len());
                if &got != bits {
                    return Err(format!("exist bits {got:?}, the model {bits:?}"));
                }
                Ok(())
            }
            Expect::Value(c, stored) => {
                same_code(ctx.result, *c)?;
                if ctx.value != (&self.value as *const KvsValue).cast_mut() {
                    return Err("the context's value is not the caller's".into());
                }
                let Some(stored) = stored else { return Ok(()) };
                if *c != code::SUCCESS && *c != code::BUFFER_SMALL {
                    return Ok(());
                }
                check_value(
                    &self.value,
                    &self.buf,
                    stored,
                    self.value.offset as usize,
                    *c,
                )
            }
        }
    }
}

/// Checks what a retrieve from byte `offset` wrote (`v`, `buf`) against `stored` for
/// result `c`.
pub fn check_value(
    v: &KvsValue,
    buf: &[u8],
    stored: &[u8],
    offset: usize,
    c: i32,
) -> Result<(), String> {
    if v.actual_value_size as usize != stored.len() {
        return Err(format!(
            "actual_value_size {}, the model {}",
            v.actual_value_size,
            stored.len()
        ));
    }
    let (room, tail) = (buf.len(), &stored[offset..]);
    let want_len = if c == code::SUCCESS { tail.len() } else { room };
    if v.length as usize != want_len {
        return Err(format!("length {}, expected {want_len}", v.length));
    }
    let n = tail.len().min(room);
    if buf[..n] != tail[..n] {
        return Err(format!(
            "the {n} bytes from {offset} differ from the model's value"
        ));
    }
    Ok(())
}

fn same_code(got: i32, want: i32) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("result {got:#x}, the model says {want:#x}"))
    }
}

/// A key, short enough to print.
pub fn show(k: &[u8]) -> String {
    let head: String = k
        .iter()
        .take(12)
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (*b as char).to_string()
            } else {
                format!("\\x{b:02x}")
            }
        })
        .collect();
    if k.len() > 12 {
        format!("{head}..({} B)", k.len())
    } else {
        head
    }
}

/// The callbacks a worker waits for.
#[derive(Default)]
pub struct Group {
    done: Mutex<usize>,
    cv: Condvar,
}

impl Group {
    /// Waits until `n` callbacks came; `Err` after 60 s.
    pub fn wait(&self, n: usize) -> Result<(), String> {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        while *done < n {
            let (d, timeout) = self
                .cv
                .wait_timeout(done, Duration::from_secs(60))
                .unwrap_or_else(|p| p.into_inner());
            done = d;
            if timeout.timed_out() && *done < n {
                return Err(format!("{} of {n} callbacks after 60 s", *done));
            }
        }
        Ok(())
    }
}

/// The callback of every call: checks it, records the outcome, counts it.
unsafe extern "C" fn on_done(ctx: *mut KvsPostprocessContext) {
    // SAFETY: the library passes a valid context; private1 and private2 are the Call and
    // Group the worker keeps until it counted this callback.
    let ctx = unsafe { &*ctx };
    let call = unsafe { &mut *ctx.private1.cast::<Call>() };
    let group = unsafe { &*ctx.private2.cast::<Group>() };
    let mut outcome = call.check(ctx);
    if call.outcome.is_some() {
        outcome = Err("a second callback".into());
    }
    call.outcome = Some(outcome);
    let mut done = group.done.lock().unwrap_or_else(|p| p.into_inner());
    *done += 1;
    group.cv.notify_all();
}

/// The outcome the callback recorded (`Err` if none came).
pub fn outcome(call: &Call) -> Result<(), String> {
    match &call.outcome {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(format!("{}: {e}", call.what)),
        None => Err(format!("{}: no callback", call.what)),
    }
}

/// What the callback of a single async call saw: its result, context and iterator handle.
#[derive(Default)]
struct OneShot {
    group: Group,
    seen: Mutex<Option<(i32, i32, u8)>>,
}

unsafe extern "C" fn on_one(ctx: *mut KvsPostprocessContext) {
    // SAFETY: the library's context; private1 the OneShot its caller waits on.
    let ctx = unsafe { &*ctx };
    let one = unsafe { &*ctx.private1.cast::<OneShot>() };
    *one.seen.lock().unwrap_or_else(|p| p.into_inner()) =
        Some((ctx.result, ctx.context, ctx.iter_hd));
    *one.group.done.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    one.group.cv.notify_all();
}

/// Makes one async call with `submit(private1, callback)` and waits for its callback: the
/// result it got, checked to name `context` and `iter_hd`.
fn one_async(
    context: i32,
    iter_hd: u8,
    submit: impl FnOnce(*mut c_void, PostFn) -> i32,
) -> Result<i32, String> {
    let one = OneShot::default();
    let me = (&one as *const OneShot).cast_mut().cast::<c_void>();
    let r = submit(me, Some(on_one));
    if r != code::SUCCESS {
        return Err(format!("queued with {r:#x}"));
    }
    one.group.wait(1)?;
    let seen = *one.seen.lock().unwrap_or_else(|p| p.into_inner());
    match seen {
        Some((result, c, it)) if c == context && it == iter_hd => Ok(result),
        other => Err(format!(
            "callback context {other:?}, expected {context}, {iter_hd}"
        )),
    }
}

/// `kvs_iterate_next_async` into a buffer of `room` bytes, waited for.
pub fn iterate_next(ks: H, it: u8, room: usize) -> Result<ffi::Batch, String> {
    let mut buf = vec![0u8; room];
    let mut list = ffi::list_over(&mut buf);
    let code = one_async(CMD_ITER_NEXT, it, |me, post| {
        // SAFETY: the list and buffer live until the callback was waited for.
        unsafe { kvs_iterate_next_async(ptr(ks), it, &mut list, me, null_mut(), post) }
    })?;
    Ok(ffi::Batch::of(code, &list, buf))
}

/// `kvs_delete_key_group_async` of the keys starting with `prefix`, waited for.
pub fn delete_group(ks: H, prefix: &[u8; 4]) -> Result<i32, String> {
    let mut f = ffi::filter_of(prefix);
    one_async(CMD_DELETE_GROUP, 0, |me, post| {
        // SAFETY: the filter lives until the callback was waited for.
        unsafe { kvs_delete_key_group_async(ptr(ks), &mut f, me, null_mut(), post) }
    })
}
