//! A storage over memory that reports a size, and as free what its files (and another tenant
//! of the disk, `use_elsewhere`) leave of it: the device-wide reserve and GC's look at the
//! free space are tested on it.

use cerberus_engine::storage::{MemStorage, RandomAccessFile, Storage, WritableFile};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub struct Sized {
    inner: MemStorage,
    total: u64,
    used_elsewhere: AtomicU64,
}

impl Sized {
    /// `total` bytes, all free.
    pub fn new(total: u64) -> Sized {
        Sized {
            inner: MemStorage::new(),
            total,
            used_elsewhere: AtomicU64::new(0),
        }
    }

    /// Another tenant of the disk holds `bytes` of it (0: gives it back).
    pub fn use_elsewhere(&self, bytes: u64) {
        self.used_elsewhere.store(bytes, Ordering::Relaxed);
    }

    /// Bytes the database's files take.
    pub fn files_bytes(&self) -> u64 {
        self.inner.total_bytes()
    }
}

impl Storage for Sized {
    fn create(&self, name: &str) -> std::io::Result<Box<dyn WritableFile>> {
        self.inner.create(name)
    }
    fn open(&self, name: &str) -> std::io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(name)
    }
    fn delete(&self, name: &str) -> std::io::Result<()> {
        self.inner.delete(name)
    }
    fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn list(&self) -> std::io::Result<Vec<String>> {
        self.inner.list()
    }
    fn exists(&self, name: &str) -> std::io::Result<bool> {
        self.inner.exists(name)
    }
    fn sync_dir(&self) -> std::io::Result<()> {
        self.inner.sync_dir()
    }
    fn space(&self) -> std::io::Result<Option<(u64, u64)>> {
        let used = self.inner.total_bytes() + self.used_elsewhere.load(Ordering::Relaxed);
        Ok(Some((self.total, self.total.saturating_sub(used))))
    }
}
