//! What the completion threads do with the `_async` calls they took from the queue: stores
//! beside each other in the queue (same key space, plain stores) go to the device as one
//! pipelined batch, retrieves likewise, every other call on its own; each call's callback
//! then gets its own result. A batch the device fails is run again call by call, so each
//! callback still gets its own call's answer.

use crate::edge::{guard, key_space};
use crate::ffi_kvp::{kvs_retrieve_kvp, kvs_store_kvp, retrieve_from, store_args};
use crate::ffi_types::{KvsOptionRetrieve, KvsResult};
use crate::key_space::KeySpace;
use crate::ops::store_type;
use crate::pending::{Kind, Pending};
use crate::result::code;
use bytes::Bytes;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `calls` in their order, batching neighbours (the runner of the completion pool).
pub fn run_batch(calls: Vec<Pending>) {
    let mut calls = calls.into_iter().peekable();
    while let Some(first) = calls.next() {
        let stores = match first.kind {
            Kind::Call(_) => {
                run_call(first);
                continue;
            }
            Kind::Store => true,
            Kind::Retrieve => false,
        };
        let ks = first.ks_hd;
        let same = |n: &Pending| match n.kind {
            Kind::Store => stores && n.ks_hd == ks,
            Kind::Retrieve => !stores && n.ks_hd == ks,
            Kind::Call(_) => false,
        };
        let mut group = vec![first];
        while let Some(next) = calls.next_if(same) {
            group.push(next);
        }
        if stores {
            run_stores(group);
        } else {
            run_retrieves(group);
        }
    }
}

/// Runs a call of its own kind, and its callback.
fn run_call(mut p: Pending) {
    // The closure is taken out to be called with the rest of `p`.
    let Kind::Call(op) = std::mem::replace(&mut p.kind, Kind::Store) else {
        return;
    };
    let result = catch_unwind(AssertUnwindSafe(|| op(&p))).unwrap_or(code::SYS_IO);
    p.complete(result);
}

/// `p` run as the synchronous call it is.
fn alone(p: &Pending, stores: bool) -> KvsResult {
    // SAFETY: the caller's pointers, valid until its callback (the kit's contract).
    unsafe {
        if stores {
            kvs_store_kvp(p.ks_hd, p.key, p.value, p.option.cast())
        } else {
            kvs_retrieve_kvp(p.ks_hd, p.key, p.option.cast(), p.value)
        }
    }
}

/// Runs each of `group` alone.
fn each_alone(group: &[Pending], stores: bool) {
    for p in group {
        p.complete(alone(p, stores));
    }
}

fn run_stores(group: Vec<Pending>) {
    let Ok((_, ks)) = key_space(group[0].ks_hd) else {
        return each_alone(&group, true);
    };
    let (mut batch, mut pairs) = (Vec::new(), Vec::new());
    for p in group {
        // SAFETY: the caller's pointers, valid until its callback.
        match unsafe { store_args(p.key, p.value, p.option.cast()) } {
            Ok((k, v, store_type::POST)) if ks.check_pair(k, v.len()).is_ok() => {
                pairs.push((Bytes::copy_from_slice(k), Bytes::copy_from_slice(v)));
                batch.push(p);
            }
            // Conditional stores and bad arguments: alone, for their own answers.
            _ => p.complete(alone(&p, true)),
        }
    }
    if batch.is_empty() {
        return;
    }
    match catch_unwind(AssertUnwindSafe(|| ks.store_many(pairs))) {
        Ok(Ok(())) => batch.iter().for_each(|p| p.complete(code::SUCCESS)),
        _ => each_alone(&batch, true),
    }
}

fn run_retrieves(group: Vec<Pending>) {
    let Ok((_, ks)) = key_space(group[0].ks_hd) else {
        return each_alone(&group, false);
    };
    let (mut batch, mut keys) = (Vec::new(), Vec::new());
    for p in group {
        match plain_retrieve(&ks, &p) {
            Some(k) => {
                keys.push(k);
                batch.push(p);
            }
            None => p.complete(alone(&p, false)),
        }
    }
    if batch.is_empty() {
        return;
    }
    match catch_unwind(AssertUnwindSafe(|| ks.get_many(keys))) {
        Ok(Ok(values)) => {
            for (p, v) in batch.iter().zip(values) {
                // SAFETY: the caller's kvs_value, valid until its callback.
                let result = guard(|| unsafe { retrieve_from(p.value, v.as_deref()) });
                p.complete(result);
            }
        }
        _ => each_alone(&batch, false),
    }
}

/// The key of `p` if it is a retrieve the batch can answer: a valid key, no delete after.
fn plain_retrieve(ks: &KeySpace, p: &Pending) -> Option<Bytes> {
    // SAFETY: the caller's pointers, valid until its callback.
    let key = unsafe { crate::edge::key(p.key) }.ok()?;
    ks.check_key(key).ok()?;
    // SAFETY: as above.
    let opt = unsafe { p.option.cast::<KvsOptionRetrieve>().as_ref() };
    if opt.is_some_and(|o| o.kvs_retrieve_delete != 0) {
        return None;
    }
    Some(Bytes::copy_from_slice(key))
}
