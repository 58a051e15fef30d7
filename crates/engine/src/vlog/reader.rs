//! Reading values, and the lifetime of segments that GC collects.
//!
//! A get finds a value's address in an index entry, then reads the value log. Between the
//! two, GC may move the value and collect its segment. A segment is therefore deleted not when
//! GC is done with it but when the last reader that could have found one of its addresses is
//! gone. Readers pin the current *epoch* ([`VlogReader::pin`]) before they look anything up;
//! GC retires a segment into the current epoch and starts a new one. Each epoch holds the next
//! one, so an epoch (and the segments retired into it) ends only after every older epoch
//! has: a reader pinned long ago keeps everything retired since it started.

use super::format::{decode_record, segment_name, RECORD_HEADER_LEN};
use crate::error::{Error, Result};
use crate::key::{Kind, Nsid, ValueAddr};
use crate::stats::Counters;
use crate::storage::{IoPurpose, RandomAccessFile, StorageRef};
use crate::table::SegmentFiles;
use arc_swap::ArcSwap;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

/// What epochs need to delete what was retired into them.
struct Shared {
    storage: StorageRef,
    /// Open segment files, under the bound of the tables' (least recently used go first;
    /// a reader holding one keeps it open).
    files: SegmentFiles,
    /// Retired segments whose files are not deleted yet.
    retired: Mutex<HashSet<u64>>,
}

impl Shared {
    fn delete(&self, segment: u64) {
        self.files.evict(segment);
        let name = segment_name(segment);
        // A file left behind holds only dead records; GC finds and deletes it again.
        if let Err(e) = self.storage.delete(&name) {
            tracing::warn!(segment, error = %e, "could not delete a collected value-log segment");
        }
        self.retired.lock().remove(&segment);
    }
}

struct Epoch {
    shared: Arc<Shared>,
    retired: Mutex<Vec<u64>>,
    next: OnceLock<Arc<Epoch>>,
}

impl Epoch {
    fn new(shared: Arc<Shared>) -> Arc<Epoch> {
        Arc::new(Epoch {
            shared,
            retired: Mutex::default(),
            next: OnceLock::new(),
        })
    }

    fn release(&mut self) {
        for seg in self.retired.get_mut().drain(..) {
            self.shared.delete(seg);
        }
    }
}

impl Drop for Epoch {
    fn drop(&mut self) {
        self.release();
        // Unlink the chain iteratively: a long one must not recurse.
        let mut next = self.next.take();
        while let Some(e) = next {
            match Arc::try_unwrap(e) {
                Ok(mut e) => {
                    e.release();
                    next = e.next.take();
                }
                Err(_) => break,
            }
        }
    }
}

/// Keeps every segment retired from now on readable while it lives.
pub struct ReadPin {
    _epoch: Arc<Epoch>,
}

/// A [`ReadPin`] for the length of one point read, held by the reading thread: taking it
/// touches no shared reference count.
pub struct BriefPin {
    _epoch: arc_swap::Guard<Arc<Epoch>>,
}

/// The segment file a reader used last: a query's reads in one segment skip the shared cache
/// of open files (a lock, a hash and a reference count per read). Held under a [`ReadPin`],
/// as every read is.
#[derive(Default)]
pub struct LastSegment(Option<(u64, Arc<dyn RandomAccessFile>)>);

/// Segment files a reader of its own (no table cache to share) keeps open at most.
const OWN_OPEN_SEGMENTS: usize = 64;

/// Reads values by address, keeping segment files open.
pub struct VlogReader {
    shared: Arc<Shared>,
    current: ArcSwap<Epoch>,
    /// Serialises `retire`, the only writer of `current`.
    retiring: Mutex<()>,
}

impl VlogReader {
    /// A reader keeping at most a few segment files open, in a cache of its own.
    pub fn new(storage: StorageRef) -> Self {
        Self::sharing(storage, SegmentFiles::own(OWN_OPEN_SEGMENTS))
    }

    /// A reader keeping its segment files open in `files` (the tables' cache: one bound).
    pub fn sharing(storage: StorageRef, files: SegmentFiles) -> Self {
        let shared = Arc::new(Shared {
            storage,
            files,
            retired: Mutex::default(),
        });
        VlogReader {
            current: ArcSwap::new(Epoch::new(shared.clone())),
            retiring: Mutex::new(()),
            shared,
        }
    }

    /// Taken before a lookup: no segment an address found after this can name is deleted
    /// while the pin lives.
    pub fn pin(&self) -> ReadPin {
        ReadPin {
            _epoch: self.current.load_full(),
        }
    }

    /// [`pin`](Self::pin) for one get on this thread.
    pub fn pin_brief(&self) -> BriefPin {
        BriefPin {
            _epoch: self.current.load(),
        }
    }

    fn file(&self, segment: u64) -> Result<Arc<dyn RandomAccessFile>> {
        self.shared.files.get_or_open(segment, || {
            let name = segment_name(segment);
            self.shared
                .storage
                .open(&name)
                .map_err(|e| Error::io(name, e))
        })
    }

    /// Reads the record at `addr`, checks it is intact and belongs to `(nsid, key)`, and
    /// returns its value; the read is counted in `c`. The caller holds a [`ReadPin`] taken
    /// before it found `addr`.
    pub fn read_value(
        &self,
        addr: ValueAddr,
        nsid: Nsid,
        key: &[u8],
        c: &Counters,
    ) -> Result<Bytes> {
        let file = self.file(addr.segment)?;
        Self::read_in(&*file, addr, nsid, key, c)
    }

    /// [`read_value`](Self::read_value) for one of a sequence of reads, reusing the segment
    /// file the last one opened when it is the same.
    pub fn read_value_in(
        &self,
        last: &mut LastSegment,
        addr: ValueAddr,
        nsid: Nsid,
        key: &[u8],
        c: &Counters,
    ) -> Result<Bytes> {
        let file = match &last.0 {
            Some((seg, f)) if *seg == addr.segment => f,
            _ => &last.0.insert((addr.segment, self.file(addr.segment)?)).1,
        };
        Self::read_in(&**file, addr, nsid, key, c)
    }

    fn read_in(
        file: &dyn RandomAccessFile,
        addr: ValueAddr,
        nsid: Nsid,
        key: &[u8],
        c: &Counters,
    ) -> Result<Bytes> {
        let name = || segment_name(addr.segment);
        let mut buf = file
            .read_bytes(addr.offset, addr.len as usize, IoPurpose::Value)
            .map_err(|e| Error::io(name(), e))?;
        c.read(IoPurpose::Value, addr.offset, buf.len());
        prefetch_lines(&buf);
        let (rec, len) = decode_record(&buf)
            .map_err(|e| Error::corruption(name(), addr.offset, format!("value record: {e:?}")))?;
        if len != buf.len() || rec.nsid != nsid || rec.key != key || rec.kind != Kind::Put {
            return Err(Error::corruption(
                name(),
                addr.offset,
                "value record does not match the index entry",
            ));
        }
        let start = RECORD_HEADER_LEN + rec.key.len();
        // The record is the whole buffer: advancing past its header keeps the buffer as it
        // is (a slice would allocate a shared handle).
        bytes::Buf::advance(&mut buf, start);
        Ok(buf)
    }

    /// Hands `segment` over for deletion once every reader pinned until now is gone. The
    /// caller has made every live record of it reachable elsewhere first.
    pub fn retire(&self, segment: u64) {
        self.shared.retired.lock().insert(segment);
        let _retiring = self.retiring.lock();
        let current = self.current.load();
        current.retired.lock().push(segment);
        let next = Epoch::new(self.shared.clone());
        // Only this lock's holder sets `next`, once per epoch.
        let _ = current.next.set(next.clone());
        self.current.store(next);
    }

    /// Whether `segment` is retired and waits for its readers.
    pub fn is_retired(&self, segment: u64) -> bool {
        self.shared.retired.lock().contains(&segment)
    }
}

/// Bytes of a record whose cache lines [`prefetch_lines`] asks for: past them the checksum's
/// walk is a stream the hardware prefetcher follows, and asking for more would push the
/// record's first lines out of the nearest cache before the walk reaches them.
const PREFETCH_BYTES: usize = 4096;

/// Asks for the first cache lines of `buf` at once. A value record read by a get is rarely in
/// the cache; its checksum walks it front to back, and without this its lines come one after
/// another instead of together (a fifth fewer samples in the value read and its checksum, in
/// one profile of gets of 1 KiB values).
#[inline]
fn prefetch_lines(buf: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..buf.len().min(PREFETCH_BYTES)).step_by(64) {
        // SAFETY: a prefetch is a hint: it reads nothing the program sees and cannot fault;
        // the address is inside `buf` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                buf.as_ptr().add(off).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = buf;
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
