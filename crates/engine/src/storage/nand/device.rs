//! The device: when each die and channel is free, where a file's pages live, and what the
//! requests it serves counted.

use super::config::NandConfig;
use crate::storage::purpose::IoPurpose;
use parking_lot::Mutex;
use std::ops::RangeInclusive;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::xxh3_64;

pub(super) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// When each die and channel becomes free.
struct Timeline {
    dies: Vec<Instant>,
    channels: Vec<Instant>,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) page_reads: [AtomicU64; IoPurpose::COUNT],
    pub(super) page_programs: [AtomicU64; IoPurpose::COUNT],
    pub(super) read_requests: [AtomicU64; IoPurpose::COUNT],
    pub(super) read_time_ns: AtomicU64,
    pub(super) sync_wait_ns: AtomicU64,
}

/// State shared by the storage and all its open files.
pub(super) struct Device {
    pub(super) config: NandConfig,
    dies: u64,
    /// One lock over all dies and channels: a multi-page request must see a consistent
    /// picture, and the critical section is a few additions per page, so even ~100k
    /// requests/s do not contend noticeably.
    timeline: Mutex<Timeline>,
    pub(super) counters: Counters,
}

impl Device {
    /// Zero `page_size`, `channels` or `ways` are treated as 1 (they are divisors below).
    pub(super) fn new(config: NandConfig) -> Self {
        let config = NandConfig {
            page_size: config.page_size.max(1),
            channels: config.channels.max(1),
            ways: config.ways.max(1),
            ..config
        };
        let now = Instant::now();
        let dies = config.dies();
        let channels = config.channels;
        Device {
            dies: dies as u64,
            timeline: Mutex::new(Timeline {
                dies: vec![now; dies],
                channels: vec![now; channels],
            }),
            config,
            counters: Counters::default(),
        }
    }

    /// First die of a file's stripe.
    pub(super) fn base_die(&self, name: &str) -> u64 {
        xxh3_64(name.as_bytes()) % self.dies
    }

    /// (die, channel) of page `page` of a file starting its stripe at `base`.
    fn locate(&self, base: u64, page: u64) -> (usize, usize) {
        // Both operands are below `dies`, so the sum cannot overflow.
        let die = ((base + page % self.dies) % self.dies) as usize;
        (die, die % self.config.channels)
    }

    /// Books the dies and channels for a read of `len > 0` bytes at `offset` issued at `now`
    /// and returns when its last byte reaches the controller, plus the number of pages touched.
    pub(super) fn schedule_read(
        &self,
        now: Instant,
        base: u64,
        offset: u64,
        len: usize,
    ) -> (Instant, u64) {
        let page_size = self.config.page_size as u64;
        // A read this far out cannot succeed; let the inner file report the error.
        let Some(end) = offset.checked_add(len as u64) else {
            return (now, 0);
        };
        let pages = offset / page_size..=(end - 1) / page_size;
        let count = pages.end() - pages.start() + 1;
        let mut done = now;
        let mut tl = self.timeline.lock();
        for page in pages {
            let (die, channel) = self.locate(base, page);
            let sensed = now.max(tl.dies[die]) + self.config.t_read;
            tl.dies[die] = sensed;
            let lo = offset.max(page * page_size);
            let hi = end.min((page + 1).saturating_mul(page_size));
            let xfer_end =
                sensed.max(tl.channels[channel]) + self.config.transfer_time((hi - lo) as usize);
            tl.channels[channel] = xfer_end;
            done = done.max(xfer_end);
        }
        (done, count)
    }

    /// Books the programs of `pages` issued at `now` and returns when the last one completes.
    pub(super) fn schedule_programs(
        &self,
        now: Instant,
        base: u64,
        pages: RangeInclusive<u64>,
    ) -> Instant {
        let page_xfer = self.config.transfer_time(self.config.page_size);
        let mut done = now;
        let mut tl = self.timeline.lock();
        for page in pages {
            let (die, channel) = self.locate(base, page);
            // The page crosses the channel into the die's register, then the die programs it.
            let loaded = now.max(tl.channels[channel]) + page_xfer;
            tl.channels[channel] = loaded;
            let programmed = loaded.max(tl.dies[die]) + self.config.t_prog;
            tl.dies[die] = programmed;
            done = done.max(programmed);
        }
        done
    }
}
