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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod clock;
mod device;
mod file;
#[cfg(test)]
mod tests;

pub(crate) use clock::deferred;
pub(crate) use clock::Completion;
use device::Device;
use file::{NandReadable, NandWritable, WriteState};

/// Geometry and timings of the modeled flash.
#[derive(Clone, Debug)]
pub struct NandConfig {
    /// Bytes per page.
    pub page_size: usize,
    /// Channels: buses between controller and dies, each moving one transfer at a time.
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

    /// The geometry and timings this storage models.
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

    fn page_size(&self) -> u64 {
        self.device.config.page_size as u64
    }

    fn space(&self) -> io::Result<Option<(u64, u64)>> {
        self.inner.space()
    }

    /// The model's files are the inner storage's: a checkpoint links them (the model charges
    /// no time for a link, as a device's own copy would not cross the host's bus).
    fn local_path(&self, name: &str) -> Option<std::path::PathBuf> {
        self.inner.local_path(name)
    }
}
