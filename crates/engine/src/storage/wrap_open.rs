//! Storage in memory whose files are wrapped as they open: tests count the read handles or
//! pause a read. Compiled for tests only.

use super::{MemStorage, RandomAccessFile, Storage, WritableFile};
use std::sync::Arc;

/// A file as a test wraps it.
pub(crate) type Wrap = dyn Fn(Arc<dyn RandomAccessFile>) -> Arc<dyn RandomAccessFile> + Send + Sync;

/// [`MemStorage`], each file opened for reading passed through `wrap`.
pub(crate) struct WrapOpen {
    pub(crate) inner: MemStorage,
    pub(crate) wrap: Box<Wrap>,
}

impl Storage for WrapOpen {
    fn create(&self, name: &str) -> std::io::Result<Box<dyn WritableFile>> {
        self.inner.create(name)
    }
    fn open(&self, name: &str) -> std::io::Result<Arc<dyn RandomAccessFile>> {
        Ok((self.wrap)(self.inner.open(name)?))
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
}
