//! Real files in one directory.

use super::{IoPurpose, RandomAccessFile, Storage, WritableFile};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Files in a directory of a real file system.
pub struct PosixStorage {
    dir: PathBuf,
}

impl PosixStorage {
    /// Uses `dir`, creating it if needed.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        Ok(PosixStorage { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad file name {name:?}"),
            ));
        }
        Ok(self.dir.join(name))
    }
}

struct PosixWritable {
    file: File,
    len: AtomicU64,
}

impl WritableFile for PosixWritable {
    fn append(&self, data: &[u8], _purpose: IoPurpose) -> io::Result<()> {
        (&self.file).write_all(data)?;
        self.len.fetch_add(data.len() as u64, Ordering::Release);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }
}

struct PosixReadable {
    file: File,
}

impl RandomAccessFile for PosixReadable {
    fn read_at(&self, offset: u64, len: usize, _purpose: IoPurpose) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

impl Storage for PosixStorage {
    fn create(&self, name: &str) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(self.path(name)?)?;
        Ok(Box::new(PosixWritable {
            file,
            len: AtomicU64::new(0),
        }))
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(self.path(name)?)?;
        Ok(Arc::new(PosixReadable { file }))
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        fs::remove_file(self.path(name)?)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        fs::rename(self.path(from)?, self.path(to)?)
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    out.push(name.to_string());
                }
            }
        }
        Ok(out)
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        Ok(self.path(name)?.exists())
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    fn lock(&self) -> io::Result<Option<Box<dyn std::any::Any + Send + Sync>>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.dir.join("LOCK"))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(file))),
            Err(std::fs::TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!("{} is in use by another process", self.dir.display()),
            )),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}
