//! The memtable's search tree: a B+tree of its entries in memtable order, where an insert
//! finds the entry it goes after and a seek the entry it starts from.
//!
//! A skiplist searched the same way passes about two nodes a level over a score of levels
//! in a full memtable, each node a cache miss of its own: the walk was the largest part of
//! a small value's put. Here a search reads a few inner nodes (few in all, so likely cached) and
//! one leaf, whose slots keep the keys' heads side by side: most comparisons read no entry.
//!
//! It is not safe to read while it changes: the list holds it under a lock, writers (one at
//! a time) exclusive, seeks shared. Walks never take it: they follow the entries' links.

use super::entry::{prefetch, user_of, Node, Probe, HEAD_LEN};
use crate::key::SeqNo;
use std::cmp::Ordering;

/// Slots of a leaf: 1.5 KiB, of which a binary search reads five lines.
const LEAF_CAP: usize = 32;
/// Children of an inner node.
const FAN: usize = 32;

/// Bytes of a leaf.
const LEAF_BYTES: usize = std::mem::size_of::<Leaf>();
/// Bytes of an inner node: its fixed part and its separators and children at the most it
/// holds (one more than `FAN` children while it splits), reserved when it is made.
const INNER_BYTES: usize = std::mem::size_of::<Inner>()
    + FAN * std::mem::size_of::<Slot>()
    + (FAN + 1) * std::mem::size_of::<Child>();

/// An entry and what a search compares of it.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    head: [u64; 3],
    seq: SeqNo,
    /// Of its user key.
    len: u32,
    entry: *mut Node,
}

impl Slot {
    const EMPTY: Slot = Slot {
        head: [0; 3],
        seq: 0,
        len: 0,
        entry: std::ptr::null_mut(),
    };

    /// The slot of `entry`, whose key and seqno `p` gives.
    pub(super) fn new(p: &Probe<'_>, entry: *mut Node) -> Slot {
        Slot {
            head: p.head,
            seq: p.seq,
            // Keys are bounded far below this by the engine's own limits.
            len: u32::try_from(p.user.len()).unwrap_or(u32::MAX),
            entry,
        }
    }

    /// Memtable order of this entry against `p` (as `entry::cmp_keys`, reading the entry's
    /// key only when the heads are equal and a key is longer than they hold).
    fn cmp(&self, p: &Probe<'_>) -> Ordering {
        self.head
            .cmp(&p.head)
            .then_with(|| {
                let len = self.len as usize;
                if len <= HEAD_LEN && p.user.len() <= HEAD_LEN {
                    len.cmp(&p.user.len())
                } else {
                    // SAFETY: a slot's entry lives as long as the list, which owns the tree.
                    unsafe { user_of(self.entry) }.cmp(p.user)
                }
            })
            .then_with(|| p.seq.cmp(&self.seq))
    }

    #[inline]
    fn before(&self, p: &Probe<'_>) -> bool {
        self.cmp(p).is_lt()
    }
}

struct Leaf {
    len: usize,
    slots: [Slot; LEAF_CAP],
}

impl Leaf {
    fn empty() -> Box<Leaf> {
        Box::new(Leaf {
            len: 0,
            slots: [Slot::EMPTY; LEAF_CAP],
        })
    }

    /// Puts `slot` at `pos`; a full leaf splits, and the new leaf to its right is returned
    /// with its first slot.
    fn insert(&mut self, pos: usize, slot: Slot) -> Option<(Slot, Child)> {
        if self.len < LEAF_CAP {
            self.slots.copy_within(pos..self.len, pos + 1);
            self.slots[pos] = slot;
            self.len += 1;
            return None;
        }
        let mut right = Leaf::empty();
        if pos == LEAF_CAP {
            // Past the end: a leaf of its own, so that keys put in order leave full leaves.
            right.slots[0] = slot;
            right.len = 1;
        } else {
            let mid = LEAF_CAP / 2;
            right.slots[..LEAF_CAP - mid].copy_from_slice(&self.slots[mid..]);
            right.len = LEAF_CAP - mid;
            self.len = mid;
            // Neither half is full: no split again.
            match pos <= mid {
                true => self.insert(pos, slot),
                false => right.insert(pos - mid, slot),
            };
        }
        Some((right.slots[0], Child::Leaf(right)))
    }
}

/// `kids[i + 1]`'s first slot is `seps[i]`: every slot of `kids[i]` orders before it.
struct Inner {
    seps: Vec<Slot>,
    kids: Vec<Child>,
}

impl Inner {
    /// A node of these separators and children, with room for the most it ever holds (so
    /// that its bytes are `INNER_BYTES`, and no insert moves them).
    fn new(seps: impl IntoIterator<Item = Slot>, kids: impl IntoIterator<Item = Child>) -> Inner {
        let mut inner = Inner {
            seps: Vec::with_capacity(FAN),
            kids: Vec::with_capacity(FAN + 1),
        };
        inner.seps.extend(seps);
        inner.kids.extend(kids);
        inner
    }

    /// The child whose slots `p` falls among: after every separator before `p`.
    fn kid_of(&self, p: &Probe<'_>) -> usize {
        ask_ahead(&self.seps, 4);
        self.seps.partition_point(|s| s.before(p))
    }
}

enum Child {
    Leaf(Box<Leaf>),
    Inner(Box<Inner>),
}

pub(super) struct SearchTree {
    root: Child,
    /// Of its nodes.
    bytes: usize,
}

impl SearchTree {
    pub(super) fn new() -> SearchTree {
        SearchTree {
            root: Child::Leaf(Leaf::empty()),
            bytes: LEAF_BYTES,
        }
    }

    /// The bytes its nodes take.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The entry of the last slot before `p` (`None`: no slot is).
    pub(super) fn last_before(&self, p: &Probe<'_>) -> Option<*mut Node> {
        let mut at = &self.root;
        loop {
            match at {
                Child::Inner(inner) => at = &inner.kids[inner.kid_of(p)],
                Child::Leaf(leaf) => return last_before_in(leaf, p).map(|i| leaf.slots[i].entry),
            }
        }
    }

    /// Puts `slot` (whose key and seqno `p` gives) after every slot before `p` and before
    /// the others (an equal one too). `link` is called on the way, with the entry of the last
    /// slot before `p` (`None`: no slot is), to link the new entry after it in the list.
    /// Returns the bytes of the nodes it added (most often none).
    pub(super) fn insert(
        &mut self,
        slot: Slot,
        p: &Probe<'_>,
        link: impl FnOnce(Option<*mut Node>),
    ) -> usize {
        let mut grown = 0;
        if let Some((sep, right)) = insert_in(&mut self.root, slot, p, link, &mut grown) {
            let left = std::mem::replace(&mut self.root, Child::Leaf(Leaf::empty()));
            self.root = Child::Inner(Box::new(Inner::new([sep], [left, right])));
            grown += INNER_BYTES;
        }
        self.bytes += grown;
        grown
    }
}

/// Where the last slot of `leaf` before `p` is, if any is.
///
/// A leaf reached through a child other than the first of its parent starts with the
/// parent's separator, which is before `p`: only the tree's first leaf can have none.
fn last_before_in(leaf: &Leaf, p: &Probe<'_>) -> Option<usize> {
    let slots = &leaf.slots[..leaf.len];
    ask_ahead(slots, 8);
    slots.partition_point(|s| s.before(p)).checked_sub(1)
}

/// Asks at once for the slots a binary search over `slots` reads in its first steps (at
/// every `1/parts` of them: 4 parts for its first two steps, 8 for three): the node is most
/// often cold, and the search would wait for each in turn. Leaves, the coldest, ask for 8.
#[inline]
fn ask_ahead(slots: &[Slot], parts: usize) {
    let n = slots.len();
    for i in 1..parts {
        if let Some(s) = slots.get(i * n / parts) {
            prefetch(std::ptr::from_ref(s).cast::<u8>());
        }
    }
}

/// Inserts as [`SearchTree::insert`] under `at`; a node that splits returns its new right
/// sibling and that sibling's first slot, for the parent, and adds its bytes to `grown`.
fn insert_in(
    at: &mut Child,
    slot: Slot,
    p: &Probe<'_>,
    link: impl FnOnce(Option<*mut Node>),
    grown: &mut usize,
) -> Option<(Slot, Child)> {
    match at {
        Child::Leaf(leaf) => {
            let before = last_before_in(leaf, p);
            let entry = before.map(|i| leaf.slots[i].entry);
            // The entry's link is written next, after the slots move: its line is on its
            // way meanwhile (a miss of its own: entries sit where they were allocated).
            if let Some(e) = entry {
                prefetch(e.cast::<u8>());
            }
            let split = leaf.insert(before.map_or(0, |i| i + 1), slot);
            link(entry);
            if split.is_some() {
                *grown += LEAF_BYTES;
            }
            split
        }
        Child::Inner(inner) => {
            let i = inner.kid_of(p);
            let (sep, right) = insert_in(&mut inner.kids[i], slot, p, link, grown)?;
            inner.seps.insert(i, sep);
            inner.kids.insert(i + 1, right);
            if inner.kids.len() <= FAN {
                return None;
            }
            let mid = inner.kids.len() / 2;
            let mut seps = inner.seps.drain(mid - 1..);
            // `FAN` separators: the first of the right half goes up.
            let up = seps.next()?;
            let right = Inner::new(seps, inner.kids.drain(mid..));
            *grown += INNER_BYTES;
            Some((up, Child::Inner(Box::new(right))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::entry::{free_node, new_node};
    use super::super::entry_list::EntryList;
    use super::super::test_keys::{awkward_keys, order, xorshift};
    use super::*;
    use crate::key::{Kind, ValueAddr};
    use crate::memtable::MemValue;

    fn val() -> MemValue {
        MemValue {
            kind: Kind::Put,
            value: bytes::Bytes::new(),
            addr: ValueAddr::NONE,
        }
    }

    /// The slot's entry as a probe.
    fn probe_of(s: &Slot) -> Probe<'static> {
        // SAFETY: the lists of these tests outlive the probes.
        let user = unsafe { user_of(s.entry) };
        Probe::new(user, s.seq)
    }

    /// Checks that every node is in order and every separator its subtree's first slot;
    /// returns the slots in order.
    fn slots_in_order(at: &Child, out: &mut Vec<Slot>) {
        match at {
            Child::Leaf(leaf) => out.extend_from_slice(&leaf.slots[..leaf.len]),
            Child::Inner(inner) => {
                assert_eq!(inner.seps.len() + 1, inner.kids.len());
                assert!(inner.kids.len() <= FAN);
                for (i, kid) in inner.kids.iter().enumerate() {
                    let from = out.len();
                    slots_in_order(kid, out);
                    assert!(out.len() > from, "an empty child");
                    if i > 0 {
                        assert_eq!(
                            inner.seps[i - 1].entry,
                            out[from].entry,
                            "a stale separator"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn inserts_in_any_order_keep_slots_sorted_separators_true_and_the_list_alike() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        // Rising keys (leaves split at their end), falling keys (at their start), then keys
        // at random, many of them again at other seqnos, some longer than a head.
        let mut keys: Vec<(Vec<u8>, SeqNo)> = Vec::new();
        keys.extend((0..3_000u64).map(|i| (format!("up{i:06}").into_bytes(), 1)));
        keys.extend(
            (0..3_000u64)
                .rev()
                .map(|i| (format!("down{i:06}").into_bytes(), 1)),
        );
        for _ in 0..6_000 {
            let n = next() % 500;
            let tail = "x".repeat((next() % 3) as usize * 20);
            keys.push((format!("r{n:04}{tail}").into_bytes(), next() % 8));
        }
        let list = EntryList::new();
        for (k, seq) in &keys {
            list.insert(k, *seq, val());
        }
        let mut slots = Vec::new();
        slots_in_order(&list.tree_for_tests().root, &mut slots);
        for pair in slots.windows(2) {
            // Strictly before, or the same key and seqno again (the later insert first).
            assert!(!pair[1].before(&probe_of(&pair[0])), "slots out of order");
        }
        assert_eq!(slots.len(), keys.len());
        let walked: Vec<*mut ()> = {
            let mut all = Vec::new();
            let mut at = list.walk(None).next();
            while let Some(e) = at {
                all.push(e.raw());
                at = e.step_for_tests();
            }
            all
        };
        let listed: Vec<*mut ()> = slots.iter().map(|s| s.entry.cast()).collect();
        assert_eq!(walked, listed, "the list and the tree disagree");
    }

    #[test]
    fn slots_order_as_user_key_then_newest_seqno_whatever_their_lengths() {
        let keys = awkward_keys();
        let entries: Vec<_> = keys.iter().map(|(k, s)| new_node(k, *s, val())).collect();
        let slot = |i: usize| Slot::new(&Probe::new(&keys[i].0, keys[i].1), entries[i].as_ptr());
        for i in 1..keys.len() {
            let (a, b) = (&keys[i - 1], &keys[i]);
            let (pa, pb) = (Probe::new(&a.0, a.1), Probe::new(&b.0, b.1));
            assert_eq!(slot(i - 1).cmp(&pb), order(a, b), "{a:?} {b:?}");
            assert_eq!(slot(i).cmp(&pa), order(b, a), "{a:?} {b:?}");
        }
        for e in entries {
            // SAFETY: made here, read by nothing any more.
            unsafe { free_node(e.as_ptr()) };
        }
    }

    #[test]
    fn a_seek_finds_the_first_entry_at_or_after_any_probe() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let key = |n: u64| format!("k{:05}{}", n % 3_000, "y".repeat((n % 2) as usize * 30));
        let list = EntryList::new();
        let mut model: Vec<(Vec<u8>, SeqNo)> = Vec::new();
        for _ in 0..5_000 {
            let (k, seq) = (key(next()).into_bytes(), 1 + next() % 5);
            list.insert(&k, seq, val());
            model.push((k, seq));
        }
        model.sort_by(order);
        for _ in 0..5_000 {
            let want = (key(next()).into_bytes(), next() % 7);
            let at = model.partition_point(|m| order(m, &want).is_lt());
            let got = list.seek(&Probe::new(&want.0, want.1));
            match model.get(at) {
                None => assert!(got.is_none()),
                Some((k, s)) => {
                    let got = got.expect("a seek found nothing");
                    assert_eq!((got.user(), got.seq()), (&k[..], *s));
                }
            }
        }
    }
}
