//! Which value-log records are known to be dead: versions a flush or compaction dropped
//! because a newer version shadows them. Value-log GC picks segments by their dead bytes and
//! skips marked records without an index lookup. A record not marked may still be dead (its
//! newer version not compacted yet); GC then finds out by looking it up.
//!
//! Offsets live in memory only; dead bytes per segment are also summed in the manifest, and a
//! restart starts from those sums (without offsets: GC then finds dead records by lookup).

use crate::key::ValueAddr;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};

#[derive(Default)]
struct SegmentMarks {
    bytes: u64,
    offsets: HashSet<u64>,
}

#[derive(Default)]
pub struct Liveness {
    segments: Mutex<HashMap<u64, SegmentMarks>>,
}

impl Liveness {
    /// Starts from dead byte sums per segment (from the manifest), no offsets known.
    pub fn seeded(dead: &std::collections::BTreeMap<u64, u64>) -> Liveness {
        let segments = dead
            .iter()
            .map(|(seg, bytes)| {
                let marks = SegmentMarks {
                    bytes: *bytes,
                    offsets: HashSet::new(),
                };
                (*seg, marks)
            })
            .collect();
        Liveness {
            segments: Mutex::new(segments),
        }
    }

    pub fn mark_dead(&self, addrs: &[ValueAddr]) {
        if addrs.is_empty() {
            return;
        }
        let mut segs = self.segments.lock();
        for a in addrs {
            let s = segs.entry(a.segment).or_default();
            if s.offsets.insert(a.offset) {
                s.bytes += u64::from(a.len);
            }
        }
    }

    pub fn is_dead(&self, addr: &ValueAddr) -> bool {
        self.segments
            .lock()
            .get(&addr.segment)
            .is_some_and(|s| s.offsets.contains(&addr.offset))
    }

    /// Marked dead bytes per segment.
    pub fn dead_bytes(&self) -> HashMap<u64, u64> {
        self.segments
            .lock()
            .iter()
            .map(|(seg, s)| (*seg, s.bytes))
            .collect()
    }

    /// Drops the marks of a deleted segment.
    pub fn forget(&self, segment: u64) {
        self.segments.lock().remove(&segment);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_count_once() {
        let l = Liveness::default();
        let a = ValueAddr {
            segment: 3,
            offset: 16,
            len: 100,
        };
        l.mark_dead(&[a, a]);
        assert!(l.is_dead(&a));
        assert_eq!(l.dead_bytes()[&3], 100);
        l.forget(3);
        assert!(!l.is_dead(&a));
    }
}
