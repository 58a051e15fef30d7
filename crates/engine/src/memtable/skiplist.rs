//! The memtable's ordered list of entries: a lock-free skiplist whose nodes never leave it
//! until the whole list is dropped. A node is one allocation holding its links, its internal
//! key (`nsid ++ user key ++ trailer`) and its value, so a walk reads a node, not a node and
//! two buffers, and takes no count on anything: with no removal, a node stays where it is for
//! as long as the list does. Inserts link a node bottom-up, one compare-and-swap per level.

use super::value::MemValue;
use crate::key::{self, SeqNo};
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cmp::Ordering;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};

/// Levels of the tallest node: one node in two reaches each next level, so 24 levels keep
/// searches logarithmic past 16 million entries (a memtable holds 262,144 by default).
pub(super) const MAX_HEIGHT: usize = 24;
const _: () = assert!(MAX_HEIGHT <= u8::MAX as usize);

/// Bytes of a user key copied into the node as big-endian words (zero-padded): an insert or
/// lookup compares a dozen or more nodes on its way down, most differ in these words, and
/// the comparison then reads no key bytes.
pub(super) const HEAD_LEN: usize = 24;

/// A node's fixed part: what a search reads, first, so that passing a node costs the line
/// it starts on. Its `height` links follow it, then its value, then its internal key's bytes.
#[repr(C)]
struct Node {
    head: [u64; 3],
    seq: SeqNo,
    ikey_len: u32,
    /// At most `MAX_HEIGHT`.
    height: u8,
}

type Link = AtomicPtr<Node>;

// The links and the value follow the fixed part at its size, with no padding to work out.
const _: () = assert!(size_of::<Node>().is_multiple_of(std::mem::align_of::<Link>()));
const _: () = assert!(std::mem::align_of::<MemValue>() <= std::mem::align_of::<Node>());
const _: () = assert!(size_of::<Link>().is_multiple_of(std::mem::align_of::<MemValue>()));
const _: () = assert!(std::mem::align_of::<Link>() <= std::mem::align_of::<Node>());

/// Bytes from a node's start to its value.
fn value_offset(height: usize) -> usize {
    size_of::<Node>() + height * size_of::<Link>()
}

/// Bytes from a node's start to its key.
fn key_offset(height: usize) -> usize {
    value_offset(height) + size_of::<MemValue>()
}

fn layout(height: usize, ikey_len: usize) -> Layout {
    let size = key_offset(height) + ikey_len;
    match Layout::from_size_align(size, std::mem::align_of::<Node>()) {
        Ok(l) => l,
        // Keys are bounded far below this by the engine's own limits.
        Err(_) => panic!("a memtable node of {size} bytes"),
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
    head: [u64; 3],
    user: &'k [u8],
    seq: SeqNo,
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

/// Memtable order of two keys given with their heads. Zero-padded heads that differ order the
/// keys as their bytes do (a difference in the padding means the shorter key is a prefix of
/// the longer); equal heads of keys that both fit are the same bytes up to the shorter
/// length, so the shorter key comes first; longer keys compare whole.
pub(super) fn cmp_keys(a: (&[u64; 3], &[u8], SeqNo), b: (&[u64; 3], &[u8], SeqNo)) -> Ordering {
    a.0.cmp(b.0)
        .then_with(|| {
            if a.1.len() <= HEAD_LEN && b.1.len() <= HEAD_LEN {
                a.1.len().cmp(&b.1.len())
            } else {
                a.1.cmp(b.1)
            }
        })
        .then_with(|| b.2.cmp(&a.2))
}

/// Where link `level` of node `n` sits.
///
/// # Safety
/// `n` is a node allocated with at least `level + 1` levels.
unsafe fn link_ptr(n: *const Node, level: usize) -> *mut Link {
    // SAFETY: the links follow the fixed part inside the node's allocation (`layout`), at a
    // multiple of a link's alignment.
    unsafe {
        n.cast::<u8>()
            .add(size_of::<Node>())
            .cast::<Link>()
            .add(level)
            .cast_mut()
    }
}

/// Link `level` of node `n`.
///
/// # Safety
/// `n` is a live node of at least `level + 1` levels.
unsafe fn link<'a>(n: *const Node, level: usize) -> &'a Link {
    // SAFETY: as the caller promises: written when the node was made.
    unsafe { &*link_ptr(n, level) }
}

/// Where node `n`'s value sits.
///
/// # Safety
/// `n` is a node from `new_node`.
unsafe fn value_ptr(n: *const Node) -> *mut MemValue {
    // SAFETY: the value follows the links inside the node's allocation (`layout`), at a
    // multiple of its alignment.
    unsafe {
        let height = usize::from((*n).height);
        n.cast::<u8>()
            .add(value_offset(height))
            .cast::<MemValue>()
            .cast_mut()
    }
}

/// The internal key of node `n`.
///
/// # Safety
/// `n` is a live node.
unsafe fn ikey<'a>(n: *const Node) -> &'a [u8] {
    // SAFETY: the key's bytes follow the value inside the node's allocation, written before
    // the node was published and never after.
    unsafe {
        let height = usize::from((*n).height);
        let at = n.cast::<u8>().add(key_offset(height));
        std::slice::from_raw_parts(at, (*n).ikey_len as usize)
    }
}

/// Memtable order of node `n` against `p`.
///
/// # Safety
/// `n` is a live node.
unsafe fn cmp_node(n: *const Node, p: &Probe<'_>) -> Ordering {
    // SAFETY: as the caller promises.
    let (head, seq, user) = unsafe { (&(*n).head, (*n).seq, user_of(n)) };
    cmp_keys((head, user, seq), (&p.head, p.user, p.seq))
}

/// The user key (`nsid ++ key`) of node `n`.
///
/// # Safety
/// `n` is a live node.
unsafe fn user_of<'a>(n: *const Node) -> &'a [u8] {
    // SAFETY: as the caller promises; every node's key ends with its trailer.
    let k = unsafe { ikey(n) };
    &k[..k.len() - key::TRAILER_LEN]
}

/// Allocates a node of `height` levels for `(user, seq, value)`, its links empty.
fn new_node(user: &[u8], seq: SeqNo, value: MemValue, height: usize) -> *mut Node {
    let ikey_len = user.len() + key::TRAILER_LEN;
    let Ok(ikey_len32) = u32::try_from(ikey_len) else {
        // Keys are bounded far below this by the engine's own limits.
        panic!("a memtable key of {ikey_len} bytes");
    };
    let layout = layout(height, ikey_len);
    // SAFETY: the layout is never zero-sized (the fixed part is not).
    let n = unsafe { alloc(layout) }.cast::<Node>();
    if n.is_null() {
        handle_alloc_error(layout);
    }
    let trailer = key::trailer(seq, value.kind);
    // SAFETY: `n` is a fresh allocation of `layout`: the fixed part, `height` links, the
    // value and the key's bytes, written here once each.
    unsafe {
        ptr::write(
            n,
            Node {
                head: head_words(user),
                seq,
                ikey_len: ikey_len32,
                // `random_height` and the head stay within `MAX_HEIGHT`.
                height: height as u8,
            },
        );
        for level in 0..height {
            ptr::write(link_ptr(n, level), Link::default());
        }
        ptr::write(value_ptr(n), value);
        let at = n.cast::<u8>().add(key_offset(height));
        ptr::copy_nonoverlapping(user.as_ptr(), at, user.len());
        ptr::copy_nonoverlapping(trailer.as_ptr(), at.add(user.len()), trailer.len());
    }
    n
}

/// Drops node `n`'s value and frees it.
///
/// # Safety
/// `n` came from `new_node` and nothing reads it any more.
unsafe fn free_node(n: *mut Node) {
    // SAFETY: as the caller promises.
    unsafe {
        let layout = layout(usize::from((*n).height), (*n).ikey_len as usize);
        ptr::drop_in_place(value_ptr(n));
        dealloc(n.cast::<u8>(), layout);
    }
}

/// A height drawn with one chance in two of each next level. One in four (LevelDB's choice)
/// visits as many nodes a search, but three a level on average where one in two visits one:
/// on the bottom levels, whose nodes are cold in a large memtable, that is more cache misses
/// (an insert's walk took a fifth less time with one in two, docs/benchmarks.md).
fn random_height() -> usize {
    thread_local! {
        static STATE: std::cell::Cell<u64> = std::cell::Cell::new({
            // Each thread's own sequence, seeded at random (never zero).
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new().build_hasher().finish() | 1
        });
    }
    let draw = |s: &std::cell::Cell<u64>| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    };
    // A thread whose locals are gone (an insert from a thread-local destructor) gets one
    // level: the list stays sound, that node is only slower to pass.
    let r = STATE.try_with(draw).unwrap_or(1);
    // A level more for each zero bit at the bottom.
    let height = 1 + r.trailing_zeros() as usize;
    height.min(MAX_HEIGHT)
}

/// The list. Its nodes are freed only when it drops.
pub(super) struct SkipList {
    /// A node of `MAX_HEIGHT` levels with an empty key, before every entry.
    head: NonNull<Node>,
    /// Levels in use (a search starts at the highest).
    height: AtomicUsize,
    len: AtomicUsize,
}

// SAFETY: nodes are written once before they are published (with release order) and read
// after (with acquire order); after that only their atomics change.
unsafe impl Send for SkipList {}
// SAFETY: as for `Send`.
unsafe impl Sync for SkipList {}

impl SkipList {
    pub(super) fn new() -> SkipList {
        let none = MemValue {
            kind: key::Kind::Delete,
            value: bytes::Bytes::new(),
            addr: key::ValueAddr::NONE,
        };
        let head = new_node(&[], 0, none, MAX_HEIGHT);
        SkipList {
            // SAFETY: `new_node` never returns null.
            head: unsafe { NonNull::new_unchecked(head) },
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// The last node before `p` at `level` from `from` on, and the node after it.
    ///
    /// # Safety
    /// `from` is a live node of this list ordered before `p`, of more than `level` levels.
    unsafe fn walk_level(
        &self,
        mut from: *const Node,
        level: usize,
        p: &Probe<'_>,
    ) -> (*const Node, *mut Node) {
        loop {
            // SAFETY: `from` is live with that many levels; its link is a live node or null.
            let next = unsafe { link(from, level) }.load(Acquire);
            // SAFETY: published nodes stay as long as the list.
            if !next.is_null() && unsafe { cmp_node(next, p) }.is_lt() {
                from = next;
            } else {
                return (from, next);
            }
        }
    }

    /// The first entry at or after `p` in memtable order.
    pub(super) fn seek(&self, p: &Probe<'_>) -> Option<NodeRef<'_>> {
        let mut at: *const Node = self.head.as_ptr();
        let mut level = self.height.load(Relaxed).max(1) - 1;
        loop {
            // SAFETY: `at` is the head or a node before `p` reached at `level`: it has it.
            let (before, next) = unsafe { self.walk_level(at, level, p) };
            if level == 0 {
                return NodeRef::at(next);
            }
            at = before;
            level -= 1;
        }
    }

    /// Inserts `(user, seq)` with `value`, and returns its entry. A second insert of the
    /// same user key and seqno sits before the first: seeks find it, and walks that reach
    /// it pass the first.
    pub(super) fn insert(&self, user: &[u8], seq: SeqNo, value: MemValue) -> NodeRef<'_> {
        let height = random_height();
        let node = new_node(user, seq, value, height);
        // Counted before it can be found, so whoever finds an entry finds the list not empty.
        self.len.fetch_add(1, Relaxed);
        let p = Probe::new(user, seq);
        let top = self.height.fetch_max(height, Relaxed).max(height);
        let head: *const Node = self.head.as_ptr();
        let mut splice = [(head, ptr::null_mut::<Node>()); MAX_HEIGHT];
        let mut at = head;
        for level in (0..top).rev() {
            // SAFETY: `at` is the head or a node before `p` found at this level.
            splice[level] = unsafe { self.walk_level(at, level, &p) };
            at = splice[level].0;
        }
        for (level, slot) in splice.iter_mut().enumerate().take(height) {
            loop {
                let (before, after) = *slot;
                // SAFETY: `node` has `height` levels; `before` is live with `level` levels.
                let linked = unsafe {
                    link(node, level).store(after, Relaxed);
                    link(before, level).compare_exchange(after, node, Release, Relaxed)
                };
                if linked.is_ok() {
                    break;
                }
                // Another insert got between: nothing leaves, so `before` is still before
                // `p` and the walk goes on from it.
                // SAFETY: as above.
                *slot = unsafe { self.walk_level(before, level, &p) };
            }
        }
        NodeRef {
            // SAFETY: `new_node` never returns null.
            node: unsafe { NonNull::new_unchecked(node) },
            list: PhantomData,
        }
    }

    /// The entries in order from the first at or after `p` (or the first of all).
    pub(super) fn walk(&self, p: Option<&Probe<'_>>) -> Walk<'_> {
        let first = match p {
            Some(p) => self.seek(p),
            // SAFETY: the head has every level.
            None => NodeRef::at(unsafe { link(self.head.as_ptr(), 0) }.load(Acquire)),
        };
        Walk { next: first }
    }
}

impl Drop for SkipList {
    fn drop(&mut self) {
        let head = self.head.as_ptr();
        // SAFETY: `&mut self`: no walk or insert is under way; every node is freed once.
        unsafe {
            let mut n = link(head, 0).load(Acquire);
            while !n.is_null() {
                let next = link(n, 0).load(Acquire);
                free_node(n);
                n = next;
            }
            free_node(head);
        }
    }
}

/// An entry of the list, borrowed for as long as the list lives.
#[derive(Clone, Copy)]
pub(super) struct NodeRef<'a> {
    node: NonNull<Node>,
    list: PhantomData<&'a SkipList>,
}

// SAFETY: a shared view of a node, which is `Sync`: after it is published only its links
// change, and they are atomic.
unsafe impl Send for NodeRef<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for NodeRef<'_> {}

impl<'a> NodeRef<'a> {
    fn at(n: *mut Node) -> Option<NodeRef<'a>> {
        NonNull::new(n).map(|node| NodeRef {
            node,
            list: PhantomData,
        })
    }

    /// The entry after this one in the list, whatever its key.
    fn step(self) -> Option<NodeRef<'a>> {
        // SAFETY: a live node; its first link is a live node or null.
        NodeRef::at(unsafe { link(self.node.as_ptr(), 0) }.load(Acquire))
    }

    /// The next entry walks see: past the earlier inserts of this entry's key and seqno,
    /// which follow it. A walk that reached such an earlier insert without passing the
    /// later one (linked before it meanwhile) yields the earlier: the walk ran before the
    /// later insert, as far as anyone can tell. Marking the earlier node instead would let
    /// such a walk see neither.
    pub(super) fn next(self) -> Option<NodeRef<'a>> {
        let mut at = self.step()?;
        while at.seq() == self.seq() && at.user() == self.user() {
            at = at.step()?;
        }
        Some(at)
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
        // SAFETY: a live node.
        unsafe { ikey(self.node.as_ptr()) }
    }

    /// `nsid ++ user key`.
    pub(super) fn user(self) -> &'a [u8] {
        // SAFETY: a live node.
        unsafe { user_of(self.node.as_ptr()) }
    }

    pub(super) fn seq(self) -> SeqNo {
        // SAFETY: a live node.
        unsafe { self.node.as_ref() }.seq
    }

    pub(super) fn value(self) -> &'a MemValue {
        // SAFETY: a live node, its value written once before it was published.
        unsafe { &*value_ptr(self.node.as_ptr()) }
    }

    /// Asks the CPU for the next node's first line and this entry's value bytes.
    pub(super) fn prefetch_ahead(self) {
        // SAFETY: a live node.
        let next = unsafe { link(self.node.as_ptr(), 0) }.load(Relaxed);
        prefetch(next.cast::<u8>());
        prefetch(self.value().value.as_ptr());
    }
}

/// Asks the CPU to bring the cache line at `p` in (no fault if it is not mapped).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The entries walks see, in order.
pub(super) struct Walk<'a> {
    next: Option<NodeRef<'a>>,
}

impl<'a> Iterator for Walk<'a> {
    type Item = NodeRef<'a>;

    fn next(&mut self) -> Option<NodeRef<'a>> {
        let at = self.next?;
        self.next = at.next();
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::Arc;

    /// A value whose drops are counted.
    struct Counted(Arc<AtomicUsize>);

    impl AsRef<[u8]> for Counted {
        fn as_ref(&self) -> &[u8] {
            b"v"
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Relaxed);
        }
    }

    fn counted(drops: &Arc<AtomicUsize>) -> MemValue {
        MemValue {
            kind: key::Kind::Put,
            value: Bytes::from_owner(Counted(drops.clone())),
            addr: key::ValueAddr::NONE,
        }
    }

    #[test]
    fn writers_at_once_leave_every_entry_once_in_order_and_a_drop_frees_each_value() {
        let drops = Arc::new(AtomicUsize::new(0));
        let list = Arc::new(SkipList::new());
        let (writers, each) = (4u64, 5_000u64);
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (list, drops) = (list.clone(), drops.clone());
                std::thread::spawn(move || {
                    for i in 0..each {
                        // Writers' keys interleave; every tenth key twice, at two seqnos.
                        let k = format!("k{:06}", (i * writers + w) * 7919 % (writers * each));
                        list.insert(k.as_bytes(), i + 1, counted(&drops));
                        if i % 10 == 0 {
                            list.insert(k.as_bytes(), i + 2, counted(&drops));
                        }
                    }
                })
            })
            .collect();
        // A walk beside them only ever sees order.
        let mut walks = 0;
        while handles.iter().any(|h| !h.is_finished()) || walks < 2 {
            let mut last: Option<(Vec<u8>, SeqNo)> = None;
            for e in list.walk(None) {
                if let Some((u, s)) = &last {
                    let ordered = u[..] < *e.user() || (u[..] == *e.user() && *s > e.seq());
                    assert!(ordered, "out of order");
                }
                last = Some((e.user().to_vec(), e.seq()));
            }
            walks += 1;
        }
        for h in handles {
            h.join().unwrap();
        }
        let inserted = (writers * each + writers * each / 10) as usize;
        assert_eq!(list.len(), inserted);
        assert_eq!(list.walk(None).count(), inserted);
        for i in 0..writers * each {
            let k = format!("k{i:06}");
            let e = list.seek(&Probe::new(k.as_bytes(), SeqNo::MAX)).unwrap();
            assert_eq!(e.user(), k.as_bytes());
            assert_eq!(&e.ikey()[..k.len()], k.as_bytes());
        }
        let list = Arc::into_inner(list).unwrap();
        assert_eq!(drops.load(Relaxed), 0);
        drop(list);
        assert_eq!(drops.load(Relaxed), inserted);
    }

    #[test]
    fn one_node_in_two_reaches_each_next_level() {
        let draws = 200_000;
        let mut at_least = [0usize; 4];
        for _ in 0..draws {
            let h = random_height();
            assert!((1..=MAX_HEIGHT).contains(&h));
            for (level, n) in at_least.iter_mut().enumerate() {
                *n += usize::from(h > level);
            }
        }
        // Each share within 0.01 of its expectation: over 20 standard deviations away.
        for (level, n) in at_least.iter().enumerate() {
            let share = *n as f64 / draws as f64;
            let expected = 0.5f64.powi(level as i32);
            assert!((share - expected).abs() < 0.01, "level {level}: {share}");
        }
    }

    #[test]
    fn the_same_key_and_seqno_again_hides_the_first_from_walks_and_seeks() {
        let drops = Arc::new(AtomicUsize::new(0));
        let list = SkipList::new();
        list.insert(b"a", 3, counted(&drops));
        list.insert(b"b", 3, counted(&drops));
        let mut tomb = counted(&drops);
        tomb.kind = key::Kind::Delete;
        list.insert(b"b", 3, tomb);
        list.insert(b"c", 3, counted(&drops));
        let seen: Vec<_> = list
            .walk(None)
            .map(|e| (e.user(), e.value().kind))
            .collect();
        assert_eq!(
            seen,
            [
                (&b"a"[..], key::Kind::Put),
                (b"b", key::Kind::Delete),
                (b"c", key::Kind::Put)
            ]
        );
        let b = list.seek(&Probe::new(b"b", 3)).unwrap();
        assert_eq!(b.value().kind, key::Kind::Delete);
        assert_eq!(
            b.ikey(),
            [&b"b"[..], &key::trailer(3, key::Kind::Delete)].concat()
        );
        drop(list);
        assert_eq!(drops.load(Relaxed), 4);
    }

    #[test]
    fn walks_and_seeks_beside_repeats_of_keys_see_each_key_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let list = Arc::new(SkipList::new());
        let keys: Vec<String> = (0..2_000).map(|i| format!("k{i:05}")).collect();
        for k in &keys {
            list.insert(k.as_bytes(), 1, counted(&drops));
        }
        let writer = {
            let (list, keys, drops) = (list.clone(), keys.clone(), drops.clone());
            std::thread::spawn(move || {
                // Each key again at its seqno, twice, from the last to the first.
                for round in 0..2 {
                    for k in keys.iter().rev() {
                        let mut v = counted(&drops);
                        v.kind = [key::Kind::Delete, key::Kind::Put][round];
                        list.insert(k.as_bytes(), 1, v);
                    }
                }
            })
        };
        let mut walks = 0;
        while !writer.is_finished() || walks < 2 {
            let seen: Vec<&[u8]> = list.walk(None).map(|e| e.user()).collect();
            assert_eq!(seen.len(), keys.len(), "a key missed or seen twice");
            assert!(seen.iter().zip(&keys).all(|(s, k)| *s == k.as_bytes()));
            for k in keys.iter().step_by(97) {
                let p = Probe::new(k.as_bytes(), 1);
                let e = list.walk(Some(&p)).next().expect("a seek found nothing");
                assert_eq!(e.user(), k.as_bytes(), "a seek passed its key");
            }
            walks += 1;
        }
        writer.join().unwrap();
        // The last insert of each holds.
        assert!(list
            .walk(None)
            .all(|e| e.value().kind == key::Kind::Put && e.seq() == 1));
        assert_eq!(list.len(), 3 * keys.len());
    }
}
