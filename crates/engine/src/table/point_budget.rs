//! The memory the open tables' point indexes may take together
//! (`Options::point_index_memory_bytes`). A point index is kept by its table's reader once
//! read (about 21 bytes a key), so without a bound the readers would hold some 21 bytes of
//! every key in the open tables. A table whose index does not fit asks again at later gets,
//! and has it once another's has been given back and the room is still there; until then its
//! gets take the long way (the data block), which answers the same.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct PointBudget {
    cap: u64,
    used: AtomicU64,
}

impl PointBudget {
    /// A budget of `cap` bytes (`u64::MAX`: no bound).
    pub fn new(cap: u64) -> PointBudget {
        PointBudget {
            cap,
            used: AtomicU64::new(0),
        }
    }

    /// Takes `bytes` of the budget if they fit.
    pub fn reserve(&self, bytes: u64) -> bool {
        // A plain load first: with the budget spent, each get of an unindexed table asks
        // again, and a failed update would write the shared line.
        if self.used.load(Ordering::Relaxed).saturating_add(bytes) > self.cap {
            return false;
        }
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |u| {
                u.checked_add(bytes).filter(|&n| n <= self.cap)
            })
            .is_ok()
    }

    /// Gives back `bytes` a [`reserve`](Self::reserve) took.
    pub fn release(&self, bytes: u64) {
        let before = self.used.fetch_sub(bytes, Ordering::AcqRel);
        debug_assert!(before >= bytes, "point budget released {bytes} of {before}");
    }

    /// Bytes taken now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_gives_what_fits_and_takes_it_back() {
        let b = PointBudget::new(100);
        assert!(b.reserve(60));
        assert!(!b.reserve(41));
        assert!(b.reserve(40));
        assert!(!b.reserve(1));
        b.release(60);
        assert_eq!(b.used(), 40);
        assert!(b.reserve(60));
        assert!(!b.reserve(u64::MAX));
        assert!(PointBudget::new(u64::MAX).reserve(u64::MAX));
    }
}
