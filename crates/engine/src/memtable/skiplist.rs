//! The memtable's ordered map: a skiplist that one writer at a time extends while any number
//! of readers walk it, its nodes carved out of an arena.
//!
//! Why not a general concurrent skiplist: every insert the engine makes already holds the
//! writer lock, and nothing is removed until the whole memtable goes. So an insert links its
//! node with plain release stores (no compare-and-swap), a node is never unlinked or freed
//! while readers may hold it, and a full memtable is freed chunk by chunk instead of node by
//! node. Each node keeps its forward pointers right before its key (as RocksDB's inline
//! skiplist does): a step of a search reads one or two cache lines of a node, not the three
//! a node with its tower after key and value spans. An insert takes an internal lock too, so
//! the structure stays sound whatever its callers hold.
//!
//! A key inserted twice (same user key and seqno) is linked in front of the older node: a
//! lookup finds the newer, and iteration skips a node equal to the one it just yielded.

use super::mem_value::MemValue;
use crate::key::SeqNo;
use bytes::Bytes;
use parking_lot::Mutex;
use std::cmp::Ordering;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr;
use std::sync::atomic::{
    AtomicPtr, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

/// Levels at most; a level holds about a quarter of the nodes of the one below, so 12
/// levels serve some 16 million entries, far past a memtable's.
const MAX_HEIGHT: usize = 12;
/// Bytes of a user key copied into the node as big-endian words (zero-padded): most
/// comparisons on the way down end in them, without reading the key's own allocation.
const HEAD_LEN: usize = 24;
/// The arena's first chunk, and its largest: small memtables take little, large ones
/// allocate rarely.
const FIRST_CHUNK: usize = 4 << 10;
const MAX_CHUNK: usize = 1 << 20;

/// A node: its forward pointers sit before it in the arena (`next(node, i)`).
#[repr(C)]
struct Node {
    head: [u64; 3],
    seq: SeqNo,
    user: Bytes,
    value: MemValue,
}

const _: () = assert!(align_of::<Node>() <= 8 && size_of::<Node>().is_multiple_of(8));

type Link = AtomicPtr<Node>;

/// The key a search looks for, borrowed.
struct Probe<'a> {
    head: [u64; 3],
    user: &'a [u8],
    seq: SeqNo,
}

fn head_of(user: &[u8]) -> [u64; 3] {
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

impl<'a> Probe<'a> {
    fn new(user: &'a [u8], seq: SeqNo) -> Probe<'a> {
        Probe {
            head: head_of(user),
            user,
            seq,
        }
    }

    /// The order of `node`'s key against this one: user keys ascending, seqnos descending.
    /// Zero-padded heads that differ order the keys as their bytes do (a difference in the
    /// padding means the shorter key is a prefix of the longer); equal heads of keys that
    /// both fit are the same bytes up to the shorter length, so the shorter comes first;
    /// longer keys compare whole.
    fn order_of(&self, node: &Node) -> Ordering {
        node.head
            .cmp(&self.head)
            .then_with(|| {
                let (a, b) = (&node.user[..], self.user);
                if a.len() <= HEAD_LEN && b.len() <= HEAD_LEN {
                    a.len().cmp(&b.len())
                } else {
                    a.cmp(b)
                }
            })
            .then_with(|| self.seq.cmp(&node.seq))
    }
}

/// Pointer `i` of `node`'s tower.
///
/// # Safety
/// `node` is a node of this list (or its head) whose tower has more than `i` pointers.
unsafe fn next<'a>(node: *const Node, i: usize) -> &'a Link {
    // SAFETY: the caller's promise; the tower sits right before the node, pointer 0 last.
    unsafe { &*(node as *const Link).sub(i + 1) }
}

/// Memory nodes are carved from; freed whole with the list.
struct Arena {
    /// Chunks taken out of their boxes (so pointers into them stay valid as the list of
    /// chunks grows), freed by `drop`.
    chunks: Vec<*mut [MaybeUninit<u64>]>,
    at: *mut u8,
    left: usize,
    next_chunk: usize,
}

impl Arena {
    /// `bytes` (a multiple of 8) of fresh memory, 8-aligned.
    fn alloc(&mut self, bytes: usize) -> *mut u8 {
        if bytes > self.left {
            let size = self.next_chunk.max(bytes);
            self.next_chunk = (self.next_chunk * 2).min(MAX_CHUNK);
            let chunk = Box::into_raw(Box::<[u64]>::new_uninit_slice(size / 8));
            self.at = chunk as *mut u8;
            self.left = size;
            self.chunks.push(chunk);
        }
        let p = self.at;
        // SAFETY: `bytes <= left`, so the result stays inside the current chunk.
        self.at = unsafe { self.at.add(bytes) };
        self.left -= bytes;
        p
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for &chunk in &self.chunks {
            // SAFETY: made by `Box::into_raw` in `alloc`, freed once; the nodes in it were
            // dropped by the list (`MaybeUninit` drops nothing).
            drop(unsafe { Box::from_raw(chunk) });
        }
    }
}

struct Writer {
    arena: Arena,
    rng: u64,
}

impl Writer {
    /// 1 with probability 3/4, then each level a quarter as likely.
    fn random_height(&mut self) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let mut r = self.rng;
        let mut h = 1;
        while h < MAX_HEIGHT && r & 3 == 0 {
            h += 1;
            r >>= 2;
        }
        h
    }

    /// A node holding `key` with a tower of `height`, all pointers null.
    fn node(&mut self, height: usize, node: Node) -> *mut Node {
        let base = self.arena.alloc(height * 8 + size_of::<Node>());
        // SAFETY: the allocation holds `height` links and then a node, all 8-aligned.
        unsafe {
            for i in 0..height {
                (base as *mut Link)
                    .add(i)
                    .write(AtomicPtr::new(ptr::null_mut()));
            }
            let n = base.add(height * 8) as *mut Node;
            n.write(node);
            n
        }
    }
}

/// See the module's comment.
pub(super) struct SkipList {
    /// A node that holds no entry, with a full tower.
    head: *mut Node,
    /// Levels in use (at least 1).
    height: AtomicUsize,
    len: AtomicUsize,
    writer: Mutex<Writer>,
}

// SAFETY: nodes are written before they are published (release stores) and never changed
// after; their contents (`Bytes`, `MemValue`) are `Send + Sync`; the arena is only touched
// under `writer` or by `drop`, which has the list to itself.
unsafe impl Send for SkipList {}
unsafe impl Sync for SkipList {}

/// An entry, borrowed from the list.
pub(super) struct Entry<'a> {
    pub(super) user: &'a Bytes,
    pub(super) seq: SeqNo,
    pub(super) value: &'a MemValue,
}

impl SkipList {
    pub(super) fn new() -> SkipList {
        let mut writer = Writer {
            arena: Arena {
                chunks: Vec::new(),
                at: ptr::null_mut(),
                left: 0,
                next_chunk: FIRST_CHUNK,
            },
            rng: 0x9e37_79b9_7f4a_7c15,
        };
        let empty = Node {
            head: [0; 3],
            seq: 0,
            user: Bytes::new(),
            value: MemValue {
                kind: crate::key::Kind::Delete,
                value: Bytes::new(),
                addr: crate::key::ValueAddr::NONE,
            },
        };
        let head = writer.node(MAX_HEIGHT, empty);
        SkipList {
            head,
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            writer: Mutex::new(writer),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `(user, seq)` with `value`; a key already there is shadowed (see the module).
    pub(super) fn insert(&self, user: Bytes, seq: SeqNo, value: MemValue) {
        let mut w = self.writer.lock();
        let probe = Probe::new(&user, seq);
        let top = self.height.load(Relaxed);
        let mut preds = [self.head as *const Node; MAX_HEIGHT];
        let mut x = self.head as *const Node;
        for level in (0..top).rev() {
            loop {
                // SAFETY: `x` is the head or a node reached at `level`, so its tower is
                // taller than `level`.
                let n = unsafe { next(x, level) }.load(Acquire);
                // SAFETY: a non-null link points at a published node.
                if !n.is_null() && probe.order_of(unsafe { &*n }) == Ordering::Less {
                    x = n;
                } else {
                    break;
                }
            }
            preds[level] = x;
        }
        let height = w.random_height();
        let node = w.node(
            height,
            Node {
                head: probe.head,
                seq,
                user: user.clone(),
                value,
            },
        );
        for (level, &pred) in preds.iter().enumerate().take(height) {
            // SAFETY: `pred` is the head or a node reached at `level`; `node` was made with
            // `height` links and is not yet visible to anyone.
            unsafe {
                next(node, level).store(next(pred, level).load(Relaxed), Relaxed);
                // Published bottom up: a reader that finds it at a level finds it below.
                next(pred, level).store(node, Release);
            }
        }
        if height > top {
            self.height.store(height, Release);
        }
        self.len.fetch_add(1, Relaxed);
    }

    /// The entries from the first at or after `(user, seq)` (after it if not `inclusive`).
    pub(super) fn seek(&self, user: &[u8], seq: SeqNo, inclusive: bool) -> Iter<'_> {
        let probe = Probe::new(user, seq);
        let mut x = self.head as *const Node;
        let mut level = self.height.load(Acquire) - 1;
        // The last node found not before the probe: not compared again one level down.
        let mut stop: *const Node = ptr::null();
        let first = loop {
            // SAFETY: `x` is the head or a node reached at `level` or above.
            let n = unsafe { next(x, level) }.load(Acquire) as *const Node;
            let go = !n.is_null()
                && n != stop
                // SAFETY: a non-null link points at a published node.
                && match probe.order_of(unsafe { &*n }) {
                    Ordering::Less => true,
                    Ordering::Equal => !inclusive,
                    Ordering::Greater => false,
                };
            if go {
                x = n;
            } else if level == 0 {
                break n;
            } else {
                stop = n;
                level -= 1;
            }
        };
        Iter {
            at: first,
            last: ptr::null(),
            _list: std::marker::PhantomData,
        }
    }

    /// Every entry, in order.
    pub(super) fn iter(&self) -> Iter<'_> {
        Iter {
            // SAFETY: the head's tower is full.
            at: unsafe { next(self.head, 0) }.load(Acquire),
            last: ptr::null(),
            _list: std::marker::PhantomData,
        }
    }
}

impl Drop for SkipList {
    fn drop(&mut self) {
        let mut n = self.head;
        while !n.is_null() {
            // SAFETY: no reader is left (`&mut self`); each node is dropped once, after
            // its successor was read, and its memory goes with the arena.
            unsafe {
                let after = next(n, 0).load(Relaxed);
                ptr::drop_in_place(n);
                n = after;
            }
        }
    }
}

/// A walk along the bottom level.
pub(super) struct Iter<'a> {
    at: *const Node,
    /// The node yielded last: an equal node after it is an older insert of its key.
    last: *const Node,
    _list: std::marker::PhantomData<&'a SkipList>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        loop {
            if self.at.is_null() {
                return None;
            }
            // SAFETY: `at` is a published node of a list borrowed for `'a`.
            let n: &'a Node = unsafe { &*self.at };
            // SAFETY: every node has at least one link.
            self.at = unsafe { next(n, 0) }.load(Acquire);
            if !self.last.is_null() {
                // SAFETY: as above.
                let last = unsafe { &*self.last };
                if last.seq == n.seq && last.head == n.head && last.user == n.user {
                    continue;
                }
            }
            self.last = n;
            return Some(Entry {
                user: &n.user,
                seq: n.seq,
                value: &n.value,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{Kind, ValueAddr};
    use crate::memtable::MemKey;
    use std::collections::BTreeMap;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    fn value(v: Bytes) -> MemValue {
        MemValue {
            kind: Kind::Put,
            value: v,
            addr: ValueAddr::NONE,
        }
    }

    /// Keys short and long, of few distinct bytes, so prefixes and ties across the head's
    /// end are common.
    fn random_key(next: &mut impl FnMut() -> u64) -> MemKey {
        let len = (next() % 40) as usize;
        let user: Vec<u8> = (0..len)
            .map(|_| [0u8, 1, 0xff][next() as usize % 3])
            .collect();
        MemKey {
            user: Bytes::from(user),
            seq: next() % 4,
        }
    }

    #[test]
    fn a_probe_orders_nodes_as_mem_keys_order() {
        let mut next = rng(0x2545_f491_4f6c_dd1d);
        let list = SkipList::new();
        let mut w = list.writer.lock();
        for _ in 0..5_000 {
            let (a, b) = (random_key(&mut next), random_key(&mut next));
            let node = w.node(
                1,
                Node {
                    head: head_of(&a.user),
                    seq: a.seq,
                    user: a.user.clone(),
                    value: value(Bytes::new()),
                },
            );
            // SAFETY: just made, never linked, dropped here once.
            unsafe {
                let order = Probe::new(&b.user, b.seq).order_of(&*node);
                assert_eq!(order, a.cmp(&b), "{a:?} {b:?}");
                ptr::drop_in_place(node);
            }
        }
    }

    #[test]
    fn seeks_find_what_a_sorted_map_finds() {
        let mut next = rng(7);
        let list = SkipList::new();
        let mut model = BTreeMap::new();
        for i in 0..3_000u64 {
            let k = random_key(&mut next);
            let v = Bytes::from(i.to_le_bytes().to_vec());
            list.insert(k.user.clone(), k.seq, value(v.clone()));
            // A key inserted again replaces the older insert.
            model.insert(k, v);
        }
        assert_eq!(list.len(), 3_000);
        let all: Vec<_> = list
            .iter()
            .map(|e| (e.user.clone(), e.seq, e.value.value.clone()))
            .collect();
        let want: Vec<_> = model
            .iter()
            .map(|(k, v)| (k.user.clone(), k.seq, v.clone()))
            .collect();
        assert_eq!(all, want);
        for _ in 0..3_000 {
            let p = random_key(&mut next);
            for inclusive in [true, false] {
                let got = list
                    .seek(&p.user, p.seq, inclusive)
                    .next()
                    .map(|e| (e.user.clone(), e.seq, e.value.value.clone()));
                let lo = match inclusive {
                    true => std::ops::Bound::Included(&p),
                    false => std::ops::Bound::Excluded(&p),
                };
                let want = model
                    .range((lo, std::ops::Bound::Unbounded))
                    .next()
                    .map(|(k, v)| (k.user.clone(), k.seq, v.clone()));
                assert_eq!(got, want, "{p:?} inclusive {inclusive}");
            }
        }
    }

    #[test]
    fn readers_walking_during_inserts_see_order_and_every_published_key() {
        let list = Arc::new(SkipList::new());
        let n = 20_000u64;
        let key = move |i: u64| Bytes::from(format!("k{:08}", (i * 7_919) % n).into_bytes());
        let published = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (list, published, done) = (list.clone(), published.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut next = rng(11 + r);
                    let mut walks = 0;
                    while !done.load(Acquire) {
                        let seen = published.load(Acquire) as u64;
                        // Every key inserted before `seen` was published is found.
                        if seen > 0 {
                            let i = next() % seen;
                            let k = key(i);
                            let e = list.seek(&k, SeqNo::MAX, true).next().expect("published");
                            assert_eq!(*e.user, k);
                            assert_eq!(e.seq, i + 1);
                        }
                        if walks % 64 == 0 {
                            let mut count = 0;
                            let mut prev: Option<Bytes> = None;
                            for e in list.iter() {
                                assert!(prev.as_ref().is_none_or(|p| p < e.user), "out of order");
                                prev = Some(e.user.clone());
                                count += 1;
                            }
                            assert!(count >= seen);
                        }
                        walks += 1;
                    }
                })
            })
            .collect();
        for i in 0..n {
            list.insert(key(i), i + 1, value(Bytes::new()));
            published.store(i as usize + 1, Release);
        }
        done.store(true, Release);
        for r in readers {
            r.join().expect("reader");
        }
        assert_eq!(list.iter().count() as u64, n);
    }

    #[test]
    fn dropping_the_list_drops_every_value_once() {
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
        let dropped = Arc::new(AtomicUsize::new(0));
        let list = SkipList::new();
        for i in 0..1_000u64 {
            let v = Bytes::from_owner(Counted(dropped.clone()));
            // Every tenth key twice: both inserts are dropped.
            let k = if i % 10 == 9 { i - 1 } else { i };
            list.insert(Bytes::from(k.to_be_bytes().to_vec()), 1, value(v));
        }
        assert_eq!(dropped.load(Relaxed), 0);
        drop(list);
        assert_eq!(dropped.load(Relaxed), 1_000);
    }
}
