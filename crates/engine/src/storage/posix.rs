//! Real files in one directory.

use super::{check_truncate, IoPurpose, RandomAccessFile, Storage, WritableFile};
use std::fs::{self, File, OpenOptions};
use std::io;
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

/// Writes go straight to the file (no user-space buffer) at the tracked length with positioned
/// writes, so a truncation needs no cursor fix-up and a failed append's prefix is counted.
struct PosixWritable {
    file: File,
    /// Bytes in the file; only the appending thread changes it.
    len: AtomicU64,
}

impl WritableFile for PosixWritable {
    fn append(&self, mut data: &[u8], _purpose: IoPurpose) -> io::Result<()> {
        let mut offset = self.len.load(Ordering::Acquire);
        while !data.is_empty() {
            match self.file.write_at(data, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "failed to write whole buffer",
                    ))
                }
                Ok(n) => {
                    // Count each piece as it lands: if a later piece fails, len() must still
                    // cover this prefix so that the caller can truncate it away.
                    offset += n as u64;
                    self.len.store(offset, Ordering::Release);
                    data = &data[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        check_truncate(len, self.len())?;
        self.file.set_len(len)?;
        self.len.store(len, Ordering::Release);
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    const P: IoPurpose = IoPurpose::Other;

    #[test]
    fn truncate_cuts_the_file_and_appends_continue_at_the_new_end() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixStorage::new(dir.path()).unwrap();
        let f = fs.create("a").unwrap();
        f.append(b"hello ", P).unwrap();
        f.sync().unwrap();
        f.append(b"world", P).unwrap();
        f.truncate(6).unwrap();
        assert_eq!(f.len(), 6);
        let r = fs.open("a").unwrap();
        assert_eq!(r.len().unwrap(), 6);
        // The next append lands right after the cut, with no hole.
        f.append(b"there", P).unwrap();
        f.sync().unwrap();
        assert_eq!(f.len(), 11);
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"hello there");
        assert_eq!(r.read_at(0, 11, P).unwrap(), b"hello there");

        let e = f.truncate(12).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(f.len(), 11);
        f.truncate(11).unwrap();
        f.truncate(0).unwrap();
        assert!(f.is_empty());
        assert_eq!(r.len().unwrap(), 0);
        f.append(b"x", P).unwrap();
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"x");
    }
}
