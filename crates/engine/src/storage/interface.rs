//! What every storage implements: a flat namespace of files, written by appends and read at
//! offsets, each request saying what it is for.

use super::nand_stats::NandStats;
use super::purpose::IoPurpose;
use bytes::Bytes;
use std::io;
use std::sync::Arc;

/// A file being written: append-only until dropped, except that [`WritableFile::truncate`] can
/// cut off what a failed append left behind. Appends and truncations come from one thread at a
/// time; `sync` may run on another thread concurrently with them (a background flush makes the
/// value log durable while writers keep appending to it).
pub trait WritableFile: Send + Sync {
    /// Appends `data`. The bytes are readable through [`Storage::open`] once this returns,
    /// but durable only after [`WritableFile::sync`]. A failed append may have written a prefix
    /// of `data`; [`WritableFile::len`] counts it, so `truncate` can remove it.
    fn append(&self, data: &[u8], purpose: IoPurpose) -> io::Result<()>;
    /// Makes every byte appended before the call durable.
    fn sync(&self) -> io::Result<()>;
    /// Writes bytes `[offset, offset + len)` out to the device and waits for them, so that
    /// a later [`WritableFile::sync`] has less to write. Makes nothing durable (the file's
    /// length, for one, is not); storages without a page cache do nothing.
    fn write_back(&self, _offset: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }
    /// Bytes in the file: appended so far (including what existed when the file was reopened
    /// for append, and prefixes left by failed appends), less what was truncated.
    fn len(&self) -> u64;
    /// Cuts the file back to its first `len` bytes, so that a writer whose append failed
    /// half-way can remove the partial bytes before going on. `len` above [`WritableFile::len`]
    /// is `InvalidInput`. Like appends, the new length is durable only after a sync.
    ///
    /// The default serves files that cannot hold partial appends: it accepts only the current
    /// length. Every storage overrides it.
    fn truncate(&self, len: u64) -> io::Result<()> {
        check_truncate(len, self.len())?;
        if len == self.len() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this file cannot be truncated",
            ))
        }
    }
    /// No byte in the file ([`WritableFile::len`] is 0).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file open for reads at arbitrary offsets, shared between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `len` bytes at `offset`; a short file is an `UnexpectedEof` error.
    fn read_at(&self, offset: u64, len: usize, purpose: IoPurpose) -> io::Result<Vec<u8>>;
    /// As `read_at`, as shared bytes: a file read through a memory map hands out the mapped
    /// bytes themselves, with no copy (they keep the map, and so the file's space, while
    /// they live).
    fn read_bytes(&self, offset: u64, len: usize, purpose: IoPurpose) -> io::Result<Bytes> {
        self.read_at(offset, len, purpose).map(Bytes::from)
    }
    /// Current length of the file.
    fn len(&self) -> io::Result<u64>;
    /// No byte in the file ([`RandomAccessFile::len`] is 0).
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A flat namespace of files.
pub trait Storage: Send + Sync + 'static {
    /// Creates `name` empty (truncating an existing file) and opens it for appends.
    fn create(&self, name: &str) -> io::Result<Box<dyn WritableFile>>;
    /// Opens an existing file for reads.
    fn open(&self, name: &str) -> io::Result<Arc<dyn RandomAccessFile>>;
    /// Deletes a file; deleting a missing file is `NotFound`.
    fn delete(&self, name: &str) -> io::Result<()>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Names of all files, in no particular order.
    fn list(&self) -> io::Result<Vec<String>>;
    /// Whether `name` exists.
    fn exists(&self, name: &str) -> io::Result<bool>;
    /// Makes creations, renames and deletions durable (fsync of the directory).
    fn sync_dir(&self) -> io::Result<()>;
    /// Takes an exclusive lock on the whole storage for one database instance; the lock holds
    /// while the returned guard lives. Storages that cannot be shared between processes need
    /// no lock.
    fn lock(&self) -> io::Result<Option<Box<dyn std::any::Any + Send + Sync>>> {
        Ok(None)
    }
    /// Page counters of a timing model, if this storage (or one it wraps) has one.
    fn nand_stats(&self) -> Option<NandStats> {
        None
    }
    /// The page size the database's counters count pages of (the device page of a timing
    /// model; 4096 otherwise).
    fn page_size(&self) -> u64 {
        4096
    }
    /// Cuts `name` back to its first `len` bytes, durably: recovery cuts off the torn tail a
    /// crash left at the value log's end, so that nothing later reads it as data. `len` above
    /// the file's length is `InvalidInput`.
    ///
    /// The default serves any storage: it writes the prefix to `name` + [`CUT_SUFFIX`], syncs
    /// it and renames it over `name`. A crash in between leaves `name` whole and a file with
    /// that suffix, which recovery deletes.
    fn truncate_file(&self, name: &str, len: u64) -> io::Result<()> {
        let f = self.open(name)?;
        let current = f.len()?;
        check_truncate(len, current)?;
        if len == current {
            return Ok(());
        }
        let keep = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large"))?;
        let prefix = f.read_at(0, keep, IoPurpose::Log)?;
        drop(f);
        let tmp = format!("{name}{CUT_SUFFIX}");
        let w = self.create(&tmp)?;
        w.append(&prefix, IoPurpose::Log)?;
        w.sync()?;
        drop(w);
        self.rename(&tmp, name)?;
        self.sync_dir()
    }
    /// Where `name` lives on the local file system, if this storage keeps its files there
    /// as they are: a checkpoint hard-links such files rather than copy them.
    fn local_path(&self, _name: &str) -> Option<std::path::PathBuf> {
        None
    }
    /// Makes `name` a hard link to the local file `src`, durably (the file and the link);
    /// `Unsupported` where this storage keeps no local files, and any link error (another
    /// file system, say) as it is: the caller copies instead.
    fn link_from(&self, _src: &std::path::Path, _name: &str) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this storage cannot link files",
        ))
    }
    /// `(total, free)` bytes of the medium the storage lives on, if it knows them (the
    /// device-wide reserve is checked against them); `None`: unknown, no reserve applies.
    fn space(&self) -> io::Result<Option<(u64, u64)>> {
        Ok(None)
    }
}

/// The suffix of the copy [`Storage::truncate_file`]'s default makes; such a file left by a
/// crash is deleted at open.
pub const CUT_SUFFIX: &str = ".cut";

/// The `InvalidInput` error of a truncation to `len` of a file of `current` bytes, if any.
pub(super) fn check_truncate(len: u64, current: u64) -> io::Result<()> {
    if len > current {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot truncate a file of {current} bytes to {len}"),
        ));
    }
    Ok(())
}

/// Shared handle to a storage.
pub type StorageRef = Arc<dyn Storage>;

/// Reads a whole file.
pub fn read_all(storage: &dyn Storage, name: &str, purpose: IoPurpose) -> io::Result<Vec<u8>> {
    let f = storage.open(name)?;
    let len = f.len()?;
    let len = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large"))?;
    f.read_at(0, len, purpose)
}
