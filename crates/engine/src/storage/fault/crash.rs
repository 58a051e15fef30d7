//! What a power cut keeps of the bytes appended but never synced.
//!
//! A file system writes dirty pages back on its own schedule, in any order, and a power cut
//! can stop a write part-way; so after a crash a file holds its synced bytes, then, up to a
//! length that may be anywhere between the synced and the written one, each unsynced page
//! either as written or as zeros (a later page reached the disk, an earlier one did not).
//! This is the crash state space that ALICE and CrashMonkey explore for one file and that
//! LazyFS makes on a real file system; [`CrashModel::Disk`] draws one state of it per file.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The unit a file system writes back: a page is on the disk whole or not at all.
pub const PAGE: usize = 4096;

/// What [`super::FaultStorage::crash`] keeps of each file's unsynced bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CrashModel {
    /// Exactly the synced bytes: nothing unsynced reached the disk.
    #[default]
    Synced,
    /// Any state a disk can be left in: for each file, a length drawn between the synced and
    /// the written one (a torn last write at any byte), and each unsynced page below it kept
    /// or zeroed independently. Drawn from `seed`, a new state each crash.
    Disk {
        /// Seeds the draws; the same seed and the same writes give the same crash states.
        seed: u64,
    },
}

/// What the crashes of a [`CrashModel::Disk`] storage did, for a test's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashCounts {
    /// Crashes made.
    pub crashes: u64,
    /// Files that had unsynced bytes at a crash.
    pub files_with_unsynced: u64,
    /// Files left with a length strictly between their synced and written ones.
    pub torn: u64,
    /// Unsynced pages kept as written.
    pub pages_kept: u64,
    /// Unsynced pages zeroed (a hole before a kept page or the file's end).
    pub pages_zeroed: u64,
}

/// The draws of a [`CrashModel::Disk`] storage.
pub(super) struct CrashDraws {
    rng: SmallRng,
    pub(super) counts: CrashCounts,
}

impl CrashDraws {
    pub(super) fn new(seed: u64) -> Self {
        CrashDraws {
            rng: SmallRng::seed_from_u64(seed),
            counts: CrashCounts::default(),
        }
    }

    /// Leaves `data` as a crash could with its first `synced` bytes durable; returns the new
    /// length (all of which is durable from now on).
    pub(super) fn crash_file(&mut self, data: &mut Vec<u8>, synced: usize) -> usize {
        let written = data.len();
        if written <= synced {
            data.truncate(synced.min(written));
            return data.len();
        }
        self.counts.files_with_unsynced += 1;
        // The file's length: the metadata update may or may not have reached the disk, and
        // the last write may stop at any byte.
        let end = match self.rng.gen_range(0..4) {
            0 => synced,
            1 => written,
            _ => self.rng.gen_range(synced + 1..=written),
        };
        if end > synced && end < written {
            self.counts.torn += 1;
        }
        data.truncate(end);
        // How likely a page is to have been written back: all, none, or any mix.
        let keep = [0.0, 0.5, 0.9, 1.0][self.rng.gen_range(0..4)];
        let mut page = synced / PAGE * PAGE;
        while page < end {
            let lo = page.max(synced);
            let hi = (page + PAGE).min(end);
            if self.rng.gen_bool(keep) {
                self.counts.pages_kept += 1;
            } else {
                data[lo..hi].fill(0);
                self.counts.pages_zeroed += 1;
            }
            page += PAGE;
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8 + 1).collect()
    }

    /// Every state keeps the synced bytes, never grows the file, and holds each unsynced page
    /// as written or as zeros; over many draws every kind of state shows up.
    #[test]
    fn a_disk_crash_keeps_the_synced_bytes_and_whole_or_zeroed_pages() {
        let mut draws = CrashDraws::new(7);
        let (synced, len) = (5000, 5 * PAGE + 123);
        let original = written(len);
        let (mut holes, mut torn, mut whole, mut none) = (0, 0, 0, 0);
        for _ in 0..400 {
            let mut data = original.clone();
            let end = draws.crash_file(&mut data, synced);
            assert_eq!(end, data.len());
            assert!(end >= synced && end <= len);
            assert_eq!(data[..synced], original[..synced], "synced bytes changed");
            let mut page = synced / PAGE * PAGE;
            let mut zeroed_before_kept = false;
            let mut seen_zeroed = false;
            while page < end {
                let (lo, hi) = (page.max(synced), (page + PAGE).min(end));
                let kept = data[lo..hi] == original[lo..hi];
                let zeroed = data[lo..hi].iter().all(|b| *b == 0);
                assert!(kept || zeroed, "page at {page} is neither kept nor zeroed");
                zeroed_before_kept |= kept && seen_zeroed;
                seen_zeroed |= zeroed;
                page += PAGE;
            }
            holes += usize::from(zeroed_before_kept);
            torn += usize::from(end > synced && end < len);
            whole += usize::from(end == len && data == original);
            none += usize::from(end == synced);
        }
        assert!(holes > 0 && torn > 0 && whole > 0 && none > 0);
        assert_eq!(draws.counts.files_with_unsynced, 400);
    }

    #[test]
    fn a_file_without_unsynced_bytes_is_left_alone() {
        let mut draws = CrashDraws::new(1);
        let mut data = written(100);
        assert_eq!(draws.crash_file(&mut data, 100), 100);
        assert_eq!(data, written(100));
        assert_eq!(draws.counts, CrashCounts::default());
    }
}
