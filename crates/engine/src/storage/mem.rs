//! Files in memory, for tests.

use super::interface::{check_truncate, RandomAccessFile, Storage, WritableFile};
use super::purpose::IoPurpose;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

type Contents = Arc<RwLock<Vec<u8>>>;

/// An in-memory file system; clones share the same files.
#[derive(Clone, Default)]
pub struct MemStorage {
    files: Arc<Mutex<HashMap<String, Contents>>>,
}

impl MemStorage {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// Total bytes held in all files.
    pub fn total_bytes(&self) -> u64 {
        self.files
            .lock()
            .values()
            .map(|f| f.read().len() as u64)
            .sum()
    }

    fn get(&self, name: &str) -> io::Result<Contents> {
        self.files
            .lock()
            .get(name)
            .cloned()
            .ok_or_else(|| not_found(name))
    }
}

pub(super) fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no such file: {name}"))
}

pub(super) fn read_slice(data: &[u8], offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    match start.checked_add(len) {
        Some(end) if end <= data.len() => Ok(data[start..end].to_vec()),
        _ => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("read of {len} bytes at {offset} past end {}", data.len()),
        )),
    }
}

struct MemWritable {
    data: Contents,
}

impl WritableFile for MemWritable {
    fn append(&self, data: &[u8], _purpose: IoPurpose) -> io::Result<()> {
        self.data.write().extend_from_slice(data);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.data.read().len() as u64
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut data = self.data.write();
        check_truncate(len, data.len() as u64)?;
        // Fits in usize: it is at most the current length.
        data.truncate(len as usize);
        Ok(())
    }
}

struct MemReadable {
    data: Contents,
}

impl RandomAccessFile for MemReadable {
    fn read_at(&self, offset: u64, len: usize, _purpose: IoPurpose) -> io::Result<Vec<u8>> {
        read_slice(&self.data.read(), offset, len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.data.read().len() as u64)
    }
}

impl Storage for MemStorage {
    fn create(&self, name: &str) -> io::Result<Box<dyn WritableFile>> {
        let data: Contents = Arc::default();
        self.files.lock().insert(name.to_string(), data.clone());
        Ok(Box::new(MemWritable { data }))
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(MemReadable {
            data: self.get(name)?,
        }))
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.files
            .lock()
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| not_found(name))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut files = self.files.lock();
        let data = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_string(), data);
        Ok(())
    }

    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.files.lock().keys().cloned().collect())
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        Ok(self.files.lock().contains_key(name))
    }

    fn sync_dir(&self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: IoPurpose = IoPurpose::Other;

    #[test]
    fn truncate_cuts_back_and_appends_continue() {
        let mem = MemStorage::new();
        let f = mem.create("a").unwrap();
        f.append(b"hello world", P).unwrap();
        let r = mem.open("a").unwrap();
        f.truncate(5).unwrap();
        assert_eq!(f.len(), 5);
        assert_eq!(r.len().unwrap(), 5);
        f.append(b"!", P).unwrap();
        assert_eq!(r.read_at(0, 6, P).unwrap(), b"hello!");
        assert_eq!(mem.total_bytes(), 6);
        // Same length is a no-op; longer is refused and changes nothing.
        f.truncate(6).unwrap();
        let e = f.truncate(7).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(f.len(), 6);
        f.truncate(0).unwrap();
        assert!(f.is_empty());
        assert!(r.is_empty().unwrap());
    }
}
