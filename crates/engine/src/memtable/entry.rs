//! A memtable entry: one allocation holding its link to the next entry in order, its
//! internal key (`nsid ++ user key ++ trailer`) and its value. Entries never move and never
//! leave until the whole list is dropped, so a reader holds one by a plain pointer
//! ([`NodeRef`]) and takes no count on anything.

use super::value::MemValue;
use crate::key::{self, SeqNo};
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering::*};

/// Bytes of a user key kept as big-endian words (zero-padded) where a search compares keys
/// (the search tree's slots, a probe): most keys differ in these words, and a comparison
/// then reads no key bytes.
pub(super) const HEAD_LEN: usize = 24;

/// An entry's fixed part; its value follows it, then its internal key's bytes.
#[repr(C)]
pub(super) struct Node {
    /// The next entry in memtable order (null at the end).
    pub(super) next: AtomicPtr<Node>,
    seq: SeqNo,
    ikey_len: u32,
}

// The value follows the fixed part at its size, with no padding to work out.
const _: () = assert!(std::mem::align_of::<MemValue>() <= std::mem::align_of::<Node>());
const _: () = assert!(size_of::<Node>().is_multiple_of(std::mem::align_of::<MemValue>()));

/// Bytes from an entry's start to its key.
const KEY_OFFSET: usize = size_of::<Node>() + size_of::<MemValue>();

/// Bytes an entry of a user key of `user_len` bytes takes: its allocation, rounded up to
/// the 16 bytes allocators hand out at least (they may round further). Its value's bytes are
/// not in it: they live in the buffer the write was encoded in.
pub(super) const fn footprint(user_len: usize) -> usize {
    (KEY_OFFSET + user_len + key::TRAILER_LEN).next_multiple_of(16)
}

/// The least an entry takes (an empty user key).
pub(super) const LEAST_FOOTPRINT: usize = footprint(0);

fn layout(ikey_len: usize) -> Layout {
    let size = KEY_OFFSET + ikey_len;
    match Layout::from_size_align(size, std::mem::align_of::<Node>()) {
        Ok(l) => l,
        // Keys are bounded far below this by the engine's own limits.
        Err(_) => panic!("a memtable entry of {size} bytes"),
    }
}

/// The big-endian words of the first [`HEAD_LEN`] bytes of `user`, zero-padded.
pub(super) fn head_words(user: &[u8]) -> [u64; 3] {
    let mut bytes = [0u8; HEAD_LEN];
    let n = user.len().min(HEAD_LEN);
    bytes[..n].copy_from_slice(&user[..n]);
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
        u64::from_be_bytes(w)
    };
    [word(0), word(1), word(2)]
}

/// A position to search for: a user key and a seqno, in memtable order (user key ascending,
/// seqno descending).
pub(super) struct Probe<'k> {
    pub(super) head: [u64; 3],
    pub(super) user: &'k [u8],
    pub(super) seq: SeqNo,
}

impl<'k> Probe<'k> {
    pub(super) fn new(user: &'k [u8], seq: SeqNo) -> Probe<'k> {
        Probe {
            head: head_words(user),
            user,
            seq,
        }
    }
}

/// Where entry `n`'s value sits.
///
/// # Safety
/// `n` is an entry from `new_node`.
unsafe fn value_ptr(n: *const Node) -> *mut MemValue {
    // SAFETY: the value follows the fixed part inside the entry's allocation (`layout`), at
    // a multiple of its alignment.
    unsafe {
        n.cast::<u8>()
            .add(size_of::<Node>())
            .cast::<MemValue>()
            .cast_mut()
    }
}

/// The internal key of entry `n`.
///
/// # Safety
/// `n` is a live entry.
unsafe fn ikey<'a>(n: *const Node) -> &'a [u8] {
    // SAFETY: the key's bytes follow the value inside the entry's allocation, written before
    // the entry was published and never after.
    unsafe {
        let at = n.cast::<u8>().add(KEY_OFFSET);
        std::slice::from_raw_parts(at, (*n).ikey_len as usize)
    }
}

/// The user key (`nsid ++ key`) of entry `n`.
///
/// # Safety
/// `n` is a live entry.
pub(super) unsafe fn user_of<'a>(n: *const Node) -> &'a [u8] {
    // SAFETY: as the caller promises; every entry's key ends with its trailer.
    let k = unsafe { ikey(n) };
    &k[..k.len() - key::TRAILER_LEN]
}

/// Allocates an entry for `(user, seq, value)`, linked to nothing.
pub(super) fn new_node(user: &[u8], seq: SeqNo, value: MemValue) -> NonNull<Node> {
    let ikey_len = user.len() + key::TRAILER_LEN;
    let Ok(ikey_len32) = u32::try_from(ikey_len) else {
        // Keys are bounded far below this by the engine's own limits.
        panic!("a memtable key of {ikey_len} bytes");
    };
    let layout = layout(ikey_len);
    // SAFETY: the layout is never zero-sized (the fixed part is not).
    let Some(entry) = NonNull::new(unsafe { alloc(layout) }.cast::<Node>()) else {
        handle_alloc_error(layout);
    };
    let n = entry.as_ptr();
    let trailer = key::trailer(seq, value.kind);
    // SAFETY: `n` is a fresh allocation of `layout`: the fixed part, the value and the key's
    // bytes, written here once each.
    unsafe {
        ptr::write(
            n,
            Node {
                next: AtomicPtr::default(),
                seq,
                ikey_len: ikey_len32,
            },
        );
        ptr::write(value_ptr(n), value);
        let at = n.cast::<u8>().add(KEY_OFFSET);
        ptr::copy_nonoverlapping(user.as_ptr(), at, user.len());
        ptr::copy_nonoverlapping(trailer.as_ptr(), at.add(user.len()), trailer.len());
    }
    entry
}

/// Drops entry `n`'s value and frees it.
///
/// # Safety
/// `n` came from `new_node` and nothing reads it any more.
pub(super) unsafe fn free_node(n: *mut Node) {
    // SAFETY: as the caller promises.
    unsafe {
        let layout = layout((*n).ikey_len as usize);
        ptr::drop_in_place(value_ptr(n));
        dealloc(n.cast::<u8>(), layout);
    }
}

/// An entry of the list, borrowed for as long as the list lives.
#[derive(Clone, Copy)]
pub(super) struct NodeRef<'a> {
    node: NonNull<Node>,
    list: PhantomData<&'a Node>,
}

// SAFETY: a shared view of an entry, which is `Sync`: after it is published only its link
// changes, and it is atomic.
unsafe impl Send for NodeRef<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for NodeRef<'_> {}

impl<'a> NodeRef<'a> {
    pub(super) fn at(n: *mut Node) -> Option<NodeRef<'a>> {
        NonNull::new(n).map(NodeRef::of)
    }

    pub(super) fn of(node: NonNull<Node>) -> NodeRef<'a> {
        NodeRef {
            node,
            list: PhantomData,
        }
    }

    /// The entry after this one in the list, whatever its key.
    fn step(self) -> Option<NodeRef<'a>> {
        // SAFETY: a live entry; its link is a live entry or null.
        NodeRef::at(unsafe { self.node.as_ref() }.next.load(Acquire))
    }

    /// The next entry walks see: past the earlier inserts of this entry's key and seqno,
    /// which follow it. A walk that reached such an earlier insert without passing the
    /// later one (linked before it meanwhile) yields the earlier: the walk ran before the
    /// later insert, as far as anyone can tell. Marking the earlier entry instead would let
    /// such a walk see neither.
    pub(super) fn next(self) -> Option<NodeRef<'a>> {
        let mut at = self.step()?;
        while at.seq() == self.seq() && at.user() == self.user() {
            at = at.step()?;
        }
        Some(at)
    }

    #[cfg(test)]
    pub(super) fn step_for_tests(self) -> Option<NodeRef<'a>> {
        self.step()
    }

    /// The entry as a plain pointer, for [`NodeRef::from_raw`].
    pub(super) fn raw(self) -> *mut () {
        self.node.as_ptr().cast()
    }

    /// The entry [`NodeRef::raw`] gave, if not null.
    ///
    /// # Safety
    /// `raw` came from an entry of a list that lives for as long as the caller holds the
    /// entry (or anything it returns).
    pub(super) unsafe fn from_raw<'b>(raw: *mut ()) -> Option<NodeRef<'b>> {
        NodeRef::at(raw.cast())
    }

    /// Gives the entry a lifetime of the caller's choice.
    ///
    /// # Safety
    /// The list lives for as long as the caller holds the entry (or anything it returns).
    pub(super) unsafe fn detach<'b>(self) -> NodeRef<'b> {
        NodeRef {
            node: self.node,
            list: PhantomData,
        }
    }

    /// `nsid ++ user key ++ trailer`.
    pub(super) fn ikey(self) -> &'a [u8] {
        // SAFETY: a live entry.
        unsafe { ikey(self.node.as_ptr()) }
    }

    /// `nsid ++ user key`.
    pub(super) fn user(self) -> &'a [u8] {
        // SAFETY: a live entry.
        unsafe { user_of(self.node.as_ptr()) }
    }

    pub(super) fn seq(self) -> SeqNo {
        // SAFETY: a live entry.
        unsafe { self.node.as_ref() }.seq
    }

    pub(super) fn value(self) -> &'a MemValue {
        // SAFETY: a live entry, its value written once before it was published.
        unsafe { &*value_ptr(self.node.as_ptr()) }
    }

    /// Asks the CPU for the next entry's first line and this entry's value bytes.
    pub(super) fn prefetch_ahead(self) {
        // SAFETY: a live entry.
        let next = unsafe { self.node.as_ref() }.next.load(Relaxed);
        prefetch(next.cast::<u8>());
        prefetch(self.value().value.as_ptr());
    }
}

/// Asks the CPU to bring the cache line at `p` in (no fault if it is not mapped).
#[inline(always)]
pub(super) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
