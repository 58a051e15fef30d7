//! Real files in one directory.

use super::interface::{check_truncate, RandomAccessFile, Storage, WritableFile};
use super::purpose::IoPurpose;
use bytes::Bytes;
use parking_lot::RwLock;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Files in a directory of a real file system.
pub struct PosixStorage {
    dir: PathBuf,
    mmap_reads: bool,
}

impl PosixStorage {
    /// Uses `dir`, creating it if needed. Reads use `pread`.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        Ok(PosixStorage {
            dir,
            mmap_reads: false,
        })
    }

    /// Reads through memory maps of the files (`Options::mmap_reads`): no system call per
    /// read of what the page cache holds. The engine's files never change under a map
    /// (tables are immutable, segments only grow), but an I/O error on a mapped page
    /// stops the process (SIGBUS) where `pread` would return the error.
    pub fn with_mmap_reads(mut self, on: bool) -> Self {
        self.mmap_reads = on;
        self
    }

    /// The directory that holds the files.
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

    #[cfg(target_os = "linux")]
    fn write_back(&self, offset: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "range past i64",
            ));
        };
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: the descriptor is this file's own, open for the call's duration.
        match unsafe { libc::sync_file_range(self.file.as_raw_fd(), offset, len, flags) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
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

/// The least address space a map reserves: a segment growing from empty is mapped again a
/// handful of times, not once per few appends.
const MIN_RESERVATION: u64 = 4 << 20;

/// The address space a map of a file of `len` bytes takes: the next power of two, so that a
/// growing file is mapped again only when it doubles. Pages past the file's end are never
/// touched (that would raise SIGBUS): reads stop at the length last seen.
fn reservation(len: u64) -> u64 {
    len.max(MIN_RESERVATION)
        .checked_next_power_of_two()
        .unwrap_or(len)
}

/// A file's map and how much of it may be read.
struct FileMap {
    /// The whole reservation as shared bytes: a read hands out a slice of it (a reference
    /// count, no copy and no allocation). Its page tables stay as long as it does, which is
    /// why it is made once per doubling, not per growth.
    map: Bytes,
    /// The file's length when last looked at: reads stay below it.
    readable: u64,
}

struct PosixReadable {
    file: File,
    /// With mmap reads: the file's map.
    map: Option<RwLock<Option<FileMap>>>,
}

impl PosixReadable {
    /// The map covering `[offset, end)`, its readable part grown (or the file mapped again)
    /// if the file has grown.
    fn map_covering(&self, end: u64) -> io::Result<Option<Bytes>> {
        let Some(slot) = &self.map else {
            return Ok(None);
        };
        if let Some(m) = &*slot.read() {
            if end <= m.readable {
                return Ok(Some(m.map.clone()));
            }
        }
        let mut slot = slot.write();
        if let Some(m) = &*slot {
            if end <= m.readable {
                return Ok(Some(m.map.clone()));
            }
        }
        let len = self.file.metadata()?.len();
        if len < end || len == 0 {
            return Ok(None);
        }
        let map = match &mut *slot {
            Some(m) if len <= m.map.len() as u64 => {
                m.readable = len;
                m.map.clone()
            }
            _ => {
                let reserve = reservation(len);
                let Ok(reserve) = usize::try_from(reserve) else {
                    return Ok(None);
                };
                // SAFETY: the engine never rewrites its files' bytes while they are open for
                // reads, nor shrinks them below a byte a reader is given: tables are
                // immutable, value-log segments only grow (a failed append's cut-off removes
                // bytes past every record a reader can be given). Reads stay below the length
                // seen, so pages past the file's end are never touched.
                let mapped = unsafe { memmap2::MmapOptions::new().len(reserve).map(&self.file) };
                // Out of address space or maps: `pread` still reads.
                let Ok(mapped) = mapped else {
                    return Ok(None);
                };
                let map = Bytes::from_owner(mapped);
                *slot = Some(FileMap {
                    map: map.clone(),
                    readable: len,
                });
                map
            }
        };
        Ok(Some(map))
    }
}

impl RandomAccessFile for PosixReadable {
    fn read_at(&self, offset: u64, len: usize, purpose: IoPurpose) -> io::Result<Vec<u8>> {
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "read past 2^64"))?;
        // Log reads (replay, value-log GC) go over a file once, front to back, into a buffer
        // of their own: through a map they would gain nothing and leave every page they
        // touched in the process's resident set.
        let mapped = match purpose {
            IoPurpose::Log => None,
            _ => self.map_covering(end)?,
        };
        if let Some(map) = mapped {
            return Ok(map[offset as usize..end as usize].to_vec());
        }
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    fn read_bytes(&self, offset: u64, len: usize, purpose: IoPurpose) -> io::Result<Bytes> {
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "read past 2^64"))?;
        let mapped = match purpose {
            IoPurpose::Log => None,
            _ => self.map_covering(end)?,
        };
        match mapped {
            Some(map) => Ok(map.slice(offset as usize..end as usize)),
            None => self.read_at(offset, len, purpose).map(Bytes::from),
        }
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
        let map = self.mmap_reads.then(|| RwLock::new(None));
        Ok(Arc::new(PosixReadable { file, map }))
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

    fn local_path(&self, name: &str) -> Option<PathBuf> {
        self.path(name).ok()
    }

    fn link_from(&self, src: &Path, name: &str) -> io::Result<()> {
        let dst = self.path(name)?;
        fs::hard_link(src, &dst)?;
        // The inode is shared: this makes the source's bytes durable too (a no-op for files
        // synced already, as tables and sealed segments are).
        File::open(&dst)?.sync_all()
    }

    fn truncate_file(&self, name: &str, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(self.path(name)?)?;
        check_truncate(len, file.metadata()?.len())?;
        file.set_len(len)?;
        file.sync_all()
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

    fn space(&self) -> io::Result<Option<(u64, u64)>> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(self.dir.as_os_str().as_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: `path` is NUL-terminated and `st` has room for the result.
        if unsafe { libc::statvfs(path.as_ptr(), st.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: statvfs returned 0, so it filled `st`.
        let st = unsafe { st.assume_init() };
        // The field types are u32 on some 32-bit targets.
        #[allow(clippy::useless_conversion)]
        let (frag, blocks, avail) = (
            u64::from(st.f_frsize),
            u64::from(st.f_blocks),
            u64::from(st.f_bavail),
        );
        // Free to an unprivileged writer (`f_bavail`), as `df` shows it.
        Ok(Some((
            blocks.saturating_mul(frag),
            avail.saturating_mul(frag),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: IoPurpose = IoPurpose::Other;

    #[test]
    fn space_is_the_file_systems() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixStorage::new(dir.path()).unwrap();
        let (total, free) = fs
            .space()
            .unwrap()
            .expect("posix storage reports its space");
        assert!(total > 0 && free <= total, "{total} {free}");
    }

    #[test]
    fn mmap_reads_see_what_appends_add_and_fail_past_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixStorage::new(dir.path()).unwrap().with_mmap_reads(true);
        let f = fs.create("seg").unwrap();
        let r = fs.open("seg").unwrap();
        // Empty: nothing to map, a read past the end is an error, not a crash.
        assert_eq!(
            r.read_at(0, 1, P).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        f.append(&chunk, P).unwrap();
        assert_eq!(r.read_at(1000, 10, P).unwrap(), &chunk[1000..1010]);
        // Grown a little: read through the map's grown readable part.
        f.append(b"tail", P).unwrap();
        assert_eq!(r.read_at(1 << 20, 4, P).unwrap(), b"tail");
        // Grown a lot: mapped again.
        for _ in 0..5 {
            f.append(&chunk, P).unwrap();
        }
        let end = (6 << 20) + 4;
        assert_eq!(
            r.read_at(end - 10, 10, P).unwrap(),
            &chunk[(1 << 20) - 10..]
        );
        assert_eq!(
            r.read_at(end - 2, 4, P).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert!(r.read_at(u64::MAX - 1, 4, P).is_err());
    }

    #[test]
    fn mapped_bytes_match_reads_and_outlive_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixStorage::new(dir.path()).unwrap().with_mmap_reads(true);
        let f = fs.create("seg").unwrap();
        let chunk: Vec<u8> = (0..=255u8).cycle().take(5 << 20).collect();
        f.append(&chunk, P).unwrap();
        let r = fs.open("seg").unwrap();
        let mapped = r.read_bytes(4097, 3000, P).unwrap();
        assert_eq!(mapped, r.read_at(4097, 3000, P).unwrap());
        assert_eq!(&mapped[..], &chunk[4097..7097]);
        assert!(r.read_bytes((5 << 20) - 2, 4, P).is_err());
        // Deleted and closed: the bytes handed out stay readable.
        drop(r);
        fs.delete("seg").unwrap();
        assert_eq!(&mapped[..], &chunk[4097..7097]);
    }

    #[test]
    fn a_growing_file_keeps_its_map_until_it_doubles() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixStorage::new(dir.path()).unwrap().with_mmap_reads(true);
        let f = fs.create("seg").unwrap();
        let r = fs.open("seg").unwrap();
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        f.append(&chunk, P).unwrap();
        let first = r.read_bytes(0, 8, IoPurpose::Value).unwrap();
        // Grown within the reservation: the same map, its new bytes readable.
        f.append(&chunk, P).unwrap();
        let grown = r.read_bytes((1 << 20) + 5, 8, IoPurpose::Value).unwrap();
        assert_eq!(&grown[..], &chunk[5..13]);
        assert_eq!(r.read_bytes(0, 8, P).unwrap().as_ptr(), first.as_ptr());
        // Past the file's end is still an error, though the map reaches further.
        assert!(r.read_bytes((2 << 20) - 2, 4, P).is_err());
        // Doubled past the reservation (4 MiB): mapped again.
        for _ in 0..3 {
            f.append(&chunk, P).unwrap();
        }
        let again = r.read_bytes((5 << 20) - 8, 8, IoPurpose::Value).unwrap();
        assert_eq!(&again[..], &chunk[(1 << 20) - 8..]);
        assert_ne!(r.read_bytes(0, 8, P).unwrap().as_ptr(), first.as_ptr());
        assert_eq!(&first[..], &chunk[..8]);
    }

    #[test]
    fn reservations_round_up_to_powers_of_two_and_never_overflow() {
        assert_eq!(reservation(0), MIN_RESERVATION);
        assert_eq!(reservation(MIN_RESERVATION + 1), 2 * MIN_RESERVATION);
        assert_eq!(reservation(u64::MAX - 3), u64::MAX - 3);
    }

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
