//! The memtable's point index: a key's hash to the entry of its newest version, so a get of
//! a key the memtable holds reads a slot and the entry instead of searching the list (several
//! cache misses in a full memtable).
//!
//! Open addressing over a fixed table of entry pointers, sized for the entries the memtable
//! is foreseen to hold; a slot, once taken by a key, stays that key's (entries never leave a
//! memtable), so a key's probe sequence finds its slot again. Inserts run after the entry is
//! in the list and keep the entry of the highest seqno (at an equal seqno the later insert,
//! as the list's seeks do; two inserts of one key and seqno never overlap, see
//! `Memtable::insert`). The write path's inserts come before their seqno is visible, so
//! every version a read at the visible seqno may see is indexed. Inserts at a seqno already
//! visible (index entries: a backfill, the tombstones a flush supersedes with) are seen by
//! gets from the slot's update on, a moment after the list links them: such a get answers
//! as it would have just before. A key that found no free slot within [`PROBES`] is not
//! indexed, and the index says so from then on ([`Lookup::Unknown`] for a key it lacks):
//! the list answers. The answer is never a guess.

use super::entry::NodeRef;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};

/// Slots a key may look at, from the one its hash picks: two or three cache lines.
const PROBES: usize = 16;

/// What the index knows of a key.
pub(super) enum Lookup<'a> {
    /// The entry of its newest version here.
    Newest(NodeRef<'a>),
    /// The memtable has no version of it.
    Absent,
    /// Not indexed: ask the list.
    Unknown,
}

pub(super) struct PointIndex {
    slots: Box<[AtomicPtr<()>]>,
    /// `slots.len() - 1` (a power of two).
    mask: usize,
    /// Every key inserted found a slot.
    complete: AtomicBool,
}

impl PointIndex {
    /// An index of at least twice `expected` slots (a power of two: at most half full when
    /// the entries foreseen come), at most `most_bytes` of them.
    pub(super) fn new(expected: usize, most_bytes: usize) -> PointIndex {
        let most = (most_bytes / std::mem::size_of::<AtomicPtr<()>>()).max(PROBES);
        // The largest power of two not above `most`.
        let most = 1usize << (usize::BITS - 1 - most.leading_zeros());
        let n = expected
            .saturating_mul(2)
            .checked_next_power_of_two()
            .unwrap_or(most)
            .clamp(PROBES, most);
        PointIndex {
            slots: null_slots(n),
            mask: n - 1,
            complete: AtomicBool::new(true),
        }
    }

    fn probes(&self, hash: u64) -> impl Iterator<Item = &AtomicPtr<()>> {
        let first = hash as usize;
        (0..PROBES).map(move |i| &self.slots[first.wrapping_add(i) & self.mask])
    }

    /// Indexes `entry`, just inserted into the list, whose key hashes to `hash`.
    pub(super) fn insert(&self, hash: u64, entry: NodeRef<'_>) {
        let (user, seq) = (entry.user(), entry.seq());
        for slot in self.probes(hash) {
            let mut cur = slot.load(Acquire);
            loop {
                // SAFETY: a slot holds null or an entry of this memtable's list, which lives
                // as long as the memtable (and this index).
                let held = unsafe { NodeRef::from_raw(cur) };
                match held {
                    Some(h) if h.user() != user => break,
                    Some(h) if h.seq() > seq => return,
                    _ => {}
                }
                match slot.compare_exchange(cur, entry.raw(), AcqRel, Acquire) {
                    Ok(_) => return,
                    // Another insert took or moved the slot: look at what it holds now.
                    Err(now) => cur = now,
                }
            }
        }
        // Published before the entry's seqno is (the write path's release of it).
        self.complete.store(false, Release);
    }

    /// What the index knows of `user`, whose hash is `hash`.
    pub(super) fn get<'a>(&'a self, hash: u64, user: &[u8]) -> Lookup<'a> {
        for slot in self.probes(hash) {
            // SAFETY: as in `insert`; the entry lives as long as `self` is borrowed.
            match unsafe { NodeRef::from_raw(slot.load(Acquire)) } {
                None => break,
                Some(e) if e.user() == user => return Lookup::Newest(e),
                Some(_) => {}
            }
        }
        // Not found where its insert would have put it: absent, unless an insert gave up.
        match self.complete.load(Acquire) {
            true => Lookup::Absent,
            false => Lookup::Unknown,
        }
    }

    /// Its size in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<AtomicPtr<()>>()
    }
}

/// `n` (at least 1) null slots, from zeroed memory: a large table's pages are not written
/// here, on the write path that makes a memtable, but as entries come.
fn null_slots(n: usize) -> Box<[AtomicPtr<()>]> {
    let layout = match std::alloc::Layout::array::<AtomicPtr<()>>(n) {
        Ok(l) => l,
        // Bounded far below this by the memtable's budget.
        Err(_) => panic!("a point index of {n} slots"),
    };
    // SAFETY: `layout` is not empty (`n` >= 1); a null `AtomicPtr` is all zero bits; the
    // box frees with the same layout (`Layout::array` of its length).
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<AtomicPtr<()>>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n))
    }
}

#[cfg(test)]
impl Lookup<'_> {
    pub(super) fn is_newest(&self) -> bool {
        matches!(self, Lookup::Newest(_))
    }

    pub(super) fn is_absent(&self) -> bool {
        matches!(self, Lookup::Absent)
    }
}
