//! Crash injection. (Stub: to be implemented.)

use super::{MemStorage, RandomAccessFile, Storage, WritableFile};
use std::io;
use std::sync::Arc;

/// In-memory storage that remembers what was made durable and can lose the rest.
#[derive(Clone, Default)]
pub struct FaultStorage {
    inner: MemStorage,
}

impl FaultStorage {
    pub fn new() -> Self {
        Self::default()
    }
    /// Power cut now: every unsynced byte and directory change is lost.
    pub fn crash(&self) {}
    /// Makes the storage usable again after a crash (handles opened before stay dead).
    pub fn restart(&self) {}
    /// Crash automatically after `n` more mutating operations; `None` disarms.
    pub fn crash_after_ops(&self, _n: Option<u64>) {}
    /// Whether a crash happened and `restart` was not called since.
    pub fn is_crashed(&self) -> bool {
        false
    }
    /// Fail appends with `StorageFull` once the files hold more than `limit` bytes.
    pub fn set_space_limit(&self, _limit: Option<u64>) {}
}

impl Storage for FaultStorage {
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
}
