//! The storage wrapper that charges the timing model on every request.

use super::config::NandConfig;
use super::device::Device;
use super::file::{NandReadable, NandWritable, WriteState};
use crate::storage::interface::{RandomAccessFile, Storage, StorageRef, WritableFile};
use crate::storage::nand_stats::NandStats;
use crate::storage::purpose::IoPurpose;
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

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
