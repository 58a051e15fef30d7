//! `extern "C"`: iterators over a key group.

use crate::edge::{bytes_mut, guard, key_space, out, Handle};
use crate::ffi_types::{
    IterHandle, KvsIteratorList, KvsKeyGroupFilter, KvsOptionIterator, KvsResult,
};
use crate::iterator::KvsIterator;
use crate::key_group::KeyGroup;
use crate::live::KEY_SPACES;
use crate::locks::lock;
use crate::result::KvsError;

/// `kvs_iterator_type` values.
const ITERATOR_KEY: i32 = 0;
const ITERATOR_KEY_VALUE: i32 = 1;

/// `kvs_create_iterator`.
///
/// # Safety
/// `iter_op` and `iter_fltr` NULL or valid; `iter_hd` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kvs_create_iterator(
    ks_hd: Handle,
    iter_op: *mut KvsOptionIterator,
    iter_fltr: *mut KvsKeyGroupFilter,
    iter_hd: *mut IterHandle,
) -> KvsResult {
    guard(|| {
        let (id, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let handle = unsafe { out(iter_hd, "NULL iterator handle out")? };
        // SAFETY: as above.
        let op = unsafe { iter_op.as_ref() }.ok_or(KvsError::Param("NULL iterator option"))?;
        // SAFETY: as above.
        let f = unsafe { iter_fltr.as_ref() }.ok_or(KvsError::Param("NULL filter"))?;
        let with_values = match op.iter_type {
            ITERATOR_KEY => false,
            ITERATOR_KEY_VALUE => true,
            _ => return Err(KvsError::Option("unknown kvs_iterator_type")),
        };
        let it = KvsIterator::open(ks.ns(), id, KeyGroup::new(f), with_values)?;
        let h = ks.device.add_iterator(it)?;
        // The key space closed meanwhile (its close unregisters it, then closes its
        // iterators): this one came too late for that, so it goes here, or it would hold
        // a slot for good.
        if KEY_SPACES.get(id).is_none() {
            let _ = ks.device.remove_iterator(id, h);
            return Err(KvsError::KeySpaceNotOpen);
        }
        *handle = h;
        Ok(())
    })
}

/// `kvs_delete_iterator`.
#[no_mangle]
pub extern "C" fn kvs_delete_iterator(ks_hd: Handle, iter_hd: IterHandle) -> KvsResult {
    guard(|| {
        let (id, ks) = key_space(ks_hd)?;
        ks.device.remove_iterator(id, iter_hd)
    })
}

/// `kvs_iterate_next`: whole entries into `iter_list->it_list` (`size` bytes in, bytes
/// filled out), `end` once nothing remains.
///
/// # Safety
/// `iter_list` NULL or a writable `kvs_iterator_list` with `size` writable bytes at
/// `it_list`.
#[no_mangle]
pub unsafe extern "C" fn kvs_iterate_next(
    ks_hd: Handle,
    iter_hd: IterHandle,
    iter_list: *mut KvsIteratorList,
) -> KvsResult {
    guard(|| {
        let (id, ks) = key_space(ks_hd)?;
        // SAFETY: the caller's contract.
        let list = unsafe { out(iter_list, "NULL kvs_iterator_list")? };
        // SAFETY: `size` writable bytes at `it_list`, by the caller's contract.
        let buf = unsafe { bytes_mut(list.it_list.cast(), list.size as usize, "NULL it_list")? };
        list.num_entries = 0;
        let it = ks.device.iterator(id, iter_hd)?;
        let filled = lock(&it).fill(buf);
        let filled = filled.inspect_err(|_| list.size = 0)?;
        list.num_entries = filled.entries;
        list.size = filled.bytes;
        list.end = u8::from(filled.end);
        Ok(())
    })
}
