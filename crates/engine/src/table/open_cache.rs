//! The table cache: the open table readers and value-log segment files, each holding its
//! file open, at most about `Options::max_open_files` of them together (as RocksDB's and
//! LevelDB's table cache; value-log segments share the bound, so a large log does not need a
//! descriptor per segment).
//!
//! A table or segment is opened on first use and stays open until the cache evicts it
//! (least recently used first, roughly: CLOCK-PRO) or it is deleted. Eviction only drops the
//! cache's reference: a reader in use (an iterator in the middle of the table, a get probing
//! it) keeps its file open until the last user drops it, and the next use opens the file
//! again. Blocks stay in the [`BlockCache`](super::cache::BlockCache) across a re-open (table ids
//! are never reused), so a re-open reads only the footer and the namespace table.

use super::reader::TableReader;
use crate::error::{Error, Result};
use crate::id_hash::IdHash;
use crate::storage::RandomAccessFile;
use quick_cache::sync::Cache;
use quick_cache::UnitWeighter;
use std::sync::Arc;

/// What the cache holds open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Table(u64),
    Segment(u64),
}

#[derive(Clone)]
enum Open {
    Table(Arc<TableReader>),
    Segment(Arc<dyn RandomAccessFile>),
}

type Files = Arc<Cache<Key, Open, UnitWeighter, IdHash>>;

/// A cache of about `max_open` files.
fn files(max_open: usize) -> Files {
    Arc::new(Cache::with(
        max_open,
        max_open as u64,
        UnitWeighter,
        IdHash::default(),
        Default::default(),
    ))
}

pub struct TableCache {
    readers: Files,
}

/// The cache's files were asked for as the other kind (never happens: keys say the kind).
fn mixed_up() -> Error {
    Error::InvalidArgument("the open-file cache mixed up a table and a segment".into())
}

impl TableCache {
    /// A cache keeping at most about `max_open` files open (rounded up to a multiple of its
    /// shard count; at least 1), and no more than half the process's descriptor limit
    /// (`RLIMIT_NOFILE` as it is now): the other half is left to the manifest, the value
    /// log's head and what else the process opens.
    pub fn new(max_open: usize) -> Self {
        let max_open = max_open.min(descriptor_share()).max(1);
        TableCache {
            readers: files(max_open),
        }
    }

    /// Table `id`'s reader, opened with `open` unless the cache has it. Callers racing for
    /// the same table wait for one open.
    pub fn get_or_open(
        &self,
        id: u64,
        open: impl FnOnce() -> Result<TableReader>,
    ) -> Result<Arc<TableReader>> {
        let got = self
            .readers
            .get_or_insert_with(&Key::Table(id), || open().map(|r| Open::Table(Arc::new(r))))?;
        match got {
            Open::Table(r) => Ok(r),
            Open::Segment(_) => Err(mixed_up()),
        }
    }

    /// Table `id`'s reader if the cache holds it open: nothing is opened. Counted as a use,
    /// as [`TableCache::get_or_open`] is: a get asks it of the tables it may probe, and most
    /// of those it does probe (a peek would leave the tables gets use most unmarked).
    pub fn get_open(&self, id: u64) -> Option<Arc<TableReader>> {
        match self.readers.get(&Key::Table(id))? {
            Open::Table(r) => Some(r),
            Open::Segment(_) => None,
        }
    }

    /// Forgets table `id` (it is being deleted): its file closes once no one uses it.
    pub fn evict(&self, id: u64) {
        self.readers.remove(&Key::Table(id));
    }

    /// The value-log segments' side of the cache: under the same bound.
    pub fn segments(&self) -> SegmentFiles {
        SegmentFiles {
            files: self.readers.clone(),
        }
    }

    /// Readers held by the cache (each with its file open).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.readers.len()
    }

    /// The most readers it holds.
    #[cfg(test)]
    fn capacity(&self) -> u64 {
        self.readers.capacity()
    }
}

/// Open value-log segment files, in a [`TableCache`] (or a cache of their own).
#[derive(Clone)]
pub struct SegmentFiles {
    files: Files,
}

impl SegmentFiles {
    /// A cache of at most about `max_open` segment files of its own.
    pub fn own(max_open: usize) -> Self {
        SegmentFiles {
            files: files(max_open.max(1)),
        }
    }

    /// Segment `id`'s file, opened with `open` unless it is open.
    pub fn get_or_open(
        &self,
        id: u64,
        open: impl FnOnce() -> Result<Arc<dyn RandomAccessFile>>,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        match self
            .files
            .get_or_insert_with(&Key::Segment(id), || open().map(Open::Segment))?
        {
            Open::Segment(f) => Ok(f),
            Open::Table(_) => Err(mixed_up()),
        }
    }

    /// Forgets segment `id` (it is being deleted).
    pub fn evict(&self, id: u64) {
        self.files.remove(&Key::Segment(id));
    }
}

/// Half of the soft limit on open descriptors; unbounded if there is none or it cannot be
/// read.
fn descriptor_share() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    if !ok || lim.rlim_cur == libc::RLIM_INFINITY {
        return usize::MAX;
    }
    usize::try_from(lim.rlim_cur / 2).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_ikey, IndexValue, Kind};
    use crate::stats::Counters;
    use crate::storage::{MemStorage, Storage};
    use crate::table::{BlockCache, TableBuilder};

    fn build(storage: &dyn Storage, id: u64) {
        let mut b = TableBuilder::new(storage, id, 256, 10).unwrap();
        for i in 0..50u32 {
            let mut v = Vec::new();
            IndexValue::Table(bytes::Bytes::from(format!("v{id}-{i}"))).encode(&mut v);
            b.add(
                &make_ikey(1, format!("k{i:04}").as_bytes(), 1, Kind::Put),
                &v,
            )
            .unwrap();
        }
        b.finish().unwrap();
    }

    fn entries(r: &Arc<TableReader>) -> Vec<(Vec<u8>, bytes::Bytes)> {
        let mut it = r.iter().unwrap();
        it.seek_to_first().unwrap();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value()));
            it.advance().unwrap();
        }
        out
    }

    /// Past its capacity the cache lets readers go; one in use stays usable, and a table
    /// opened again reads the same.
    #[test]
    fn bounded_and_evicted_readers_keep_working() {
        let storage = MemStorage::new();
        let blocks = Arc::new(BlockCache::new(1 << 20));
        let counters = Arc::new(Counters::default());
        for id in 1..=200 {
            build(&storage, id);
        }
        let cache = TableCache::new(16);
        let open = |id| {
            cache
                .get_or_open(id, || {
                    TableReader::open(&storage, id, blocks.clone(), counters.clone())
                })
                .unwrap()
        };
        let first = open(1);
        let want = entries(&first);
        let mut it = first.iter().unwrap();
        it.seek_to_first().unwrap();
        for id in 2..=200 {
            assert_eq!(entries(&open(id)).len(), 50);
            assert!(cache.len() as u64 <= cache.capacity());
        }
        assert!(cache.capacity() < 200);
        // The iterator opened before all that still walks its table.
        let mut n = 0;
        while it.valid() {
            assert_eq!(it.key(), want[n].0.as_slice());
            n += 1;
            it.advance().unwrap();
        }
        assert_eq!(n, 50);
        assert_eq!(entries(&open(1)), want);
        cache.evict(1);
        assert_eq!(entries(&open(1)), want);
    }
}
