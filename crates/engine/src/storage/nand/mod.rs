//! NAND-flash timing model.
//!
//! [`NandStorage`] wraps any other storage and makes every request take, in real time, what it
//! would take on a flash device of `channels x ways` dies. Requests from different threads
//! overlap when they land on different dies and channels and queue behind each other when they
//! do not, so the engine's parallelism (or lack of it) shows up in wall-clock measurements.
//!
//! The model:
//! - A file's page `i` lives on die `(xxh3(name) + i) % dies` (striping, with a per-file start
//!   so that small files do not all pile up on die 0); die `d` hangs off channel
//!   `d % channels`.
//! - Every die and channel has a `busy_until` instant. A page read occupies its die for `t_read`
//!   and then its channel for the transfer of the bytes the request needs from that page. A page
//!   program occupies the channel for a full page transfer and then the die for `t_prog`.
//! - Readers wait until their last page has been transferred. Writers do not wait for programs
//!   (the device has a write-back buffer); only `sync` waits for the programs of its file.
//!
//! The die of a page is derived from the file's *current* name, so a file written under one name
//! and read under another (after a rename) is modeled on other dies. That is harmless: striping
//! is arbitrary, and all that matters is that pages of one file spread over the dies.

use super::{IoPurpose, RandomAccessFile, Storage, StorageRef, WritableFile};
use parking_lot::Mutex;
use std::io;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::xxh3_64;

mod clock;
pub(crate) use clock::deferred;
use clock::wait_until;
pub(crate) use clock::Completion;

/// Geometry and timings of the modeled flash.
#[derive(Clone, Debug)]
pub struct NandConfig {
    /// Bytes per page.
    pub page_size: usize,
    pub channels: usize,
    /// Dies (ways) per channel.
    pub ways: usize,
    /// Array read time of one page (tR).
    pub t_read: Duration,
    /// Program time of one page (tPROG).
    pub t_prog: Duration,
    /// Channel transfer rate in bytes per second (data moved between die and controller).
    pub channel_bytes_per_sec: u64,
}

impl Default for NandConfig {
    fn default() -> Self {
        NandConfig {
            page_size: 16 * 1024,
            channels: 4,
            ways: 8,
            t_read: Duration::from_micros(60),
            t_prog: Duration::from_micros(600),
            channel_bytes_per_sec: 800_000_000,
        }
    }
}

impl NandConfig {
    /// Number of dies (`channels * ways`).
    pub fn dies(&self) -> usize {
        self.channels.max(1) * self.ways.max(1)
    }

    /// Time to move `bytes` over one channel; a rate of 0 means an infinitely fast channel.
    pub fn transfer_time(&self, bytes: usize) -> Duration {
        if self.channel_bytes_per_sec == 0 {
            return Duration::ZERO;
        }
        let ns = bytes as u128 * 1_000_000_000 / u128::from(self.channel_bytes_per_sec);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Latency of reading `bytes` of one page on an idle die and channel: tR plus the transfer.
    pub fn modeled_page_read(&self, bytes: usize) -> Duration {
        self.t_read + self.transfer_time(bytes)
    }
}

/// Counters of the timing model, indexed by `IoPurpose as usize` (serialized as maps keyed
/// by purpose name).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NandStats {
    /// Pages read, by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub page_reads: [u64; IoPurpose::COUNT],
    /// Pages programmed, by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub page_programs: [u64; IoPurpose::COUNT],
    /// Read requests (one `read_at` call), by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub read_requests: [u64; IoPurpose::COUNT],
    /// Sum over read requests of modeled latency (issue to completion), nanoseconds.
    pub read_time_ns: u64,
    /// Sum over syncs of modeled wait for outstanding programs, nanoseconds.
    pub sync_wait_ns: u64,
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// When each die and channel becomes free.
struct Timeline {
    dies: Vec<Instant>,
    channels: Vec<Instant>,
}

#[derive(Default)]
struct Counters {
    page_reads: [AtomicU64; IoPurpose::COUNT],
    page_programs: [AtomicU64; IoPurpose::COUNT],
    read_requests: [AtomicU64; IoPurpose::COUNT],
    read_time_ns: AtomicU64,
    sync_wait_ns: AtomicU64,
}

/// State shared by the storage and all its open files.
struct Device {
    config: NandConfig,
    dies: u64,
    /// One lock over all dies and channels: a multi-page request must see a consistent
    /// picture, and the critical section is a few additions per page, so even ~100k
    /// requests/s do not contend noticeably.
    timeline: Mutex<Timeline>,
    counters: Counters,
}

impl Device {
    /// Zero `page_size`, `channels` or `ways` are treated as 1 (they are divisors below).
    fn new(config: NandConfig) -> Self {
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
    fn base_die(&self, name: &str) -> u64 {
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
    fn schedule_read(&self, now: Instant, base: u64, offset: u64, len: usize) -> (Instant, u64) {
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
    fn schedule_programs(&self, now: Instant, base: u64, pages: RangeInclusive<u64>) -> Instant {
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

/// Wraps another storage and charges the NAND timing model on every read, program and sync.
pub struct NandStorage {
    inner: StorageRef,
    device: Arc<Device>,
}

impl NandStorage {
    /// Wraps `inner`. Zero `page_size`, `channels` or `ways` are treated as 1.
    pub fn new(inner: StorageRef, config: NandConfig) -> Self {
        NandStorage {
            inner,
            device: Arc::new(Device::new(config)),
        }
    }

    pub fn config(&self) -> &NandConfig {
        &self.device.config
    }

    /// The wrapped storage.
    pub fn inner(&self) -> &StorageRef {
        &self.inner
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> NandStats {
        let c = &self.device.counters;
        let load =
            |a: &[AtomicU64; IoPurpose::COUNT]| a.each_ref().map(|x| x.load(Ordering::Relaxed));
        NandStats {
            page_reads: load(&c.page_reads),
            page_programs: load(&c.page_programs),
            read_requests: load(&c.read_requests),
            read_time_ns: c.read_time_ns.load(Ordering::Relaxed),
            sync_wait_ns: c.sync_wait_ns.load(Ordering::Relaxed),
        }
    }

    /// Zeroes the counters (the timeline is left alone: outstanding work stays outstanding).
    pub fn reset_stats(&self) {
        let c = &self.device.counters;
        for a in [&c.page_reads, &c.page_programs, &c.read_requests] {
            for x in a {
                x.store(0, Ordering::Relaxed);
            }
        }
        c.read_time_ns.store(0, Ordering::Relaxed);
        c.sync_wait_ns.store(0, Ordering::Relaxed);
    }
}

struct NandWritable {
    inner: Box<dyn WritableFile>,
    device: Arc<Device>,
    base: u64,
    state: Mutex<WriteState>,
}

struct WriteState {
    len: u64,
    /// Bytes covered by programs already charged. Mid-page after a sync of a partial page;
    /// that page is programmed again once appends fill it (flash cannot add to a page, so the
    /// device writes the completed page anew).
    programmed: u64,
    /// When the last program charged for this file completes.
    pending_until: Instant,
    last_purpose: IoPurpose,
}

impl NandWritable {
    fn program(
        &self,
        st: &mut WriteState,
        now: Instant,
        pages: RangeInclusive<u64>,
        purpose: IoPurpose,
    ) {
        let count = pages.end() - pages.start() + 1;
        let done = self.device.schedule_programs(now, self.base, pages);
        st.pending_until = st.pending_until.max(done);
        self.device.counters.page_programs[purpose as usize].fetch_add(count, Ordering::Relaxed);
    }
}

impl WritableFile for NandWritable {
    fn append(&self, data: &[u8], purpose: IoPurpose) -> io::Result<()> {
        // The inner file gets the bytes first: a failed append must not be charged.
        if let Err(e) = self.inner.append(data, purpose) {
            // It may have kept a prefix; track it so that len() shows it and a later append
            // or sync programs it.
            let mut st = self.state.lock();
            st.len = self.inner.len();
            st.programmed = st.programmed.min(st.len);
            return Err(e);
        }
        let mut st = self.state.lock();
        st.len += data.len() as u64;
        st.last_purpose = purpose;
        let page_size = self.device.config.page_size as u64;
        let first = st.programmed / page_size;
        let full_pages = st.len / page_size;
        if full_pages > first {
            // Pages first..full_pages are now complete; the device programs them in the
            // background, so the appender does not wait.
            self.program(&mut st, Instant::now(), first..=full_pages - 1, purpose);
            st.programmed = full_pages * page_size;
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let issued = Instant::now();
        let pending_until = {
            let mut st = self.state.lock();
            if st.programmed < st.len {
                let page = st.programmed / self.device.config.page_size as u64;
                let purpose = st.last_purpose;
                self.program(&mut st, issued, page..=page, purpose);
                st.programmed = st.len;
            }
            st.pending_until
        };
        let wait = pending_until.saturating_duration_since(issued);
        self.device
            .counters
            .sync_wait_ns
            .fetch_add(duration_ns(wait), Ordering::Relaxed);
        // The real sync runs inside the modeled wait rather than after it, so that a slow host
        // file system does not add to the modeled device time.
        let result = self.inner.sync();
        wait_until(pending_until);
        result
    }

    fn len(&self) -> u64 {
        self.state.lock().len
    }

    /// Not charged: dropping bytes is a mapping update in the flash translation layer. A page
    /// left partial is programmed anew once appends fill it or a sync comes.
    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        self.inner.truncate(len)?;
        st.len = len;
        st.programmed = st.programmed.min(len);
        Ok(())
    }
}

struct NandReadable {
    inner: Arc<dyn RandomAccessFile>,
    device: Arc<Device>,
    base: u64,
}

impl RandomAccessFile for NandReadable {
    fn read_at(&self, offset: u64, len: usize, purpose: IoPurpose) -> io::Result<Vec<u8>> {
        if len == 0 {
            return self.inner.read_at(offset, len, purpose);
        }
        let issued = clock::issue_time();
        let (done, pages) = self.device.schedule_read(issued, self.base, offset, len);
        let c = &self.device.counters;
        c.page_reads[purpose as usize].fetch_add(pages, Ordering::Relaxed);
        c.read_requests[purpose as usize].fetch_add(1, Ordering::Relaxed);
        c.read_time_ns
            .fetch_add(duration_ns(done - issued), Ordering::Relaxed);
        // As for sync: the real read overlaps the modeled latency instead of adding to it.
        let result = self.inner.read_at(offset, len, purpose);
        clock::complete(done);
        result
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Storage for NandStorage {
    fn create(&self, name: &str) -> io::Result<Box<dyn WritableFile>> {
        let inner = self.inner.create(name)?;
        let len = inner.len();
        Ok(Box::new(NandWritable {
            inner,
            base: self.device.base_die(name),
            device: self.device.clone(),
            state: Mutex::new(WriteState {
                len,
                programmed: len,
                pending_until: Instant::now(),
                last_purpose: IoPurpose::Other,
            }),
        }))
    }
    fn open(&self, name: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        let inner = self.inner.open(name)?;
        Ok(Arc::new(NandReadable {
            inner,
            base: self.device.base_die(name),
            device: self.device.clone(),
        }))
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.inner.delete(name)
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn list(&self) -> io::Result<Vec<String>> {
        self.inner.list()
    }
    fn exists(&self, name: &str) -> io::Result<bool> {
        self.inner.exists(name)
    }
    fn sync_dir(&self) -> io::Result<()> {
        self.inner.sync_dir()
    }
    fn lock(&self) -> io::Result<Option<Box<dyn std::any::Any + Send + Sync>>> {
        self.inner.lock()
    }

    fn nand_stats(&self) -> Option<NandStats> {
        Some(self.stats())
    }
}

#[cfg(test)]
mod tests;
