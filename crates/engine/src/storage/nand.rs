//! NAND-flash timing model. (Stub: to be implemented.)

use super::{IoPurpose, RandomAccessFile, Storage, StorageRef, WritableFile};
use std::io;
use std::sync::Arc;
use std::time::Duration;

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

/// Counters of the timing model, indexed by `IoPurpose as usize`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NandStats {
    /// Pages read, by purpose.
    pub page_reads: [u64; IoPurpose::COUNT],
    /// Pages programmed, by purpose.
    pub page_programs: [u64; IoPurpose::COUNT],
    /// Read requests (one `read_at` call), by purpose.
    pub read_requests: [u64; IoPurpose::COUNT],
    /// Sum over read requests of modeled latency (issue to completion), nanoseconds.
    pub read_time_ns: u64,
    /// Sum over syncs of modeled wait for outstanding programs, nanoseconds.
    pub sync_wait_ns: u64,
}

/// Wraps another storage and charges the NAND timing model on every read, program and sync.
pub struct NandStorage {
    inner: StorageRef,
    config: NandConfig,
}

impl NandStorage {
    pub fn new(inner: StorageRef, config: NandConfig) -> Self {
        NandStorage { inner, config }
    }

    pub fn config(&self) -> &NandConfig {
        &self.config
    }

    pub fn stats(&self) -> NandStats {
        NandStats::default()
    }
}

impl Storage for NandStorage {
    fn create(&self, name: &str) -> io::Result<Box<dyn WritableFile>> {
        self.inner.create(name)
    }
    fn open(&self, name: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(name)
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
    fn nand_stats(&self) -> Option<NandStats> {
        Some(self.stats())
    }
}
