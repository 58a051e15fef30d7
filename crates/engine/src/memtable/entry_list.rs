//! The memtable's entries in order: a list linked through the entries (what walks follow,
//! taking nothing) and a search tree over it (what inserts and seeks descend, under a lock:
//! `search_tree`). An insert links its entry after the one the tree finds before it and
//! adds its slot to the tree, both under the tree's write lock: the list and the tree change
//! together, and a seek under the read lock finds the list as the tree says.

use super::entry::{free_node, new_node, Node, NodeRef, Probe};
use super::search_tree::{SearchTree, Slot};
use super::value::MemValue;
use crate::key::{self, SeqNo};
use parking_lot::RwLock;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering::*};

/// The list. Its entries are freed only when it drops.
pub(super) struct EntryList {
    /// An entry with an empty key, before every other.
    head: NonNull<Node>,
    tree: RwLock<SearchTree>,
    len: AtomicUsize,
}

// SAFETY: entries are written once before they are published (with release order) and read
// after (with acquire order); after that only their links change, which are atomic. The
// tree's raw entry pointers are read and changed under its lock.
unsafe impl Send for EntryList {}
// SAFETY: as for `Send`.
unsafe impl Sync for EntryList {}

impl EntryList {
    pub(super) fn new() -> EntryList {
        let none = MemValue {
            kind: key::Kind::Delete,
            value: bytes::Bytes::new(),
            addr: key::ValueAddr::NONE,
        };
        EntryList {
            head: new_node(&[], 0, none),
            tree: RwLock::new(SearchTree::new()),
            len: AtomicUsize::new(0),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// The first entry at or after `p` in memtable order.
    pub(super) fn seek(&self, p: &Probe<'_>) -> Option<NodeRef<'_>> {
        let tree = self.tree.read();
        let before = tree.last_before(p).unwrap_or(self.head.as_ptr());
        // Under the lock: an insert after `before` could be before `p`.
        // SAFETY: the head or an entry of this list, live as long as it.
        NodeRef::at(unsafe { &*before }.next.load(Acquire))
    }

    /// Inserts `(user, seq)` with `value`, and returns its entry. A second insert of the
    /// same user key and seqno sits before the first: seeks find it, and walks that reach
    /// it pass the first. Also returns the bytes the search tree grew by for it (most often
    /// none).
    pub(super) fn insert(&self, user: &[u8], seq: SeqNo, value: MemValue) -> (NodeRef<'_>, usize) {
        let entry = new_node(user, seq, value);
        let node = entry.as_ptr();
        // Counted before it can be found, so whoever finds an entry finds the list not empty.
        self.len.fetch_add(1, Relaxed);
        let p = Probe::new(user, seq);
        let head = self.head.as_ptr();
        let grown = self.tree.write().insert(Slot::new(&p, node), &p, |before| {
            let before = before.unwrap_or(head);
            // SAFETY: `before` is the head or an entry of this list; `node` is fresh. Links
            // change only under the tree's write lock, held here.
            unsafe {
                let after = (*before).next.load(Relaxed);
                (*node).next.store(after, Relaxed);
                (*before).next.store(node, Release);
            }
        });
        (NodeRef::of(entry), grown)
    }

    /// The bytes of its search tree.
    pub(super) fn tree_bytes(&self) -> usize {
        self.tree.read().bytes()
    }

    /// The entries in order from the first at or after `p` (or the first of all).
    pub(super) fn walk(&self, p: Option<&Probe<'_>>) -> Walk<'_> {
        let first = match p {
            Some(p) => self.seek(p),
            // SAFETY: the head lives as long as the list.
            None => NodeRef::at(unsafe { self.head.as_ref() }.next.load(Acquire)),
        };
        Walk { next: first }
    }
}

#[cfg(test)]
impl EntryList {
    pub(super) fn tree_for_tests(&self) -> parking_lot::RwLockReadGuard<'_, SearchTree> {
        self.tree.read()
    }
}

impl Drop for EntryList {
    fn drop(&mut self) {
        let head = self.head.as_ptr();
        // SAFETY: `&mut self`: no walk or insert is under way; every entry is freed once.
        unsafe {
            let mut n = (*head).next.load(Acquire);
            while !n.is_null() {
                let next = (*n).next.load(Acquire);
                free_node(n);
                n = next;
            }
            free_node(head);
        }
    }
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
        let list = Arc::new(EntryList::new());
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
    fn the_same_key_and_seqno_again_hides_the_first_from_walks_and_seeks() {
        let drops = Arc::new(AtomicUsize::new(0));
        let list = EntryList::new();
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
        let list = Arc::new(EntryList::new());
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
