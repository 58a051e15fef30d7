//! A table's filter and index block: the reader's own copy, the block cache's, or read from
//! storage. Where they live is the cache's policy (`Options::cache_filters_and_indexes`): in
//! the block cache, competing with data blocks and read again after an eviction (a device
//! with little DRAM, the paper's model); or kept by the open table reader once read, outside
//! the cache's budget and bounded by the open tables (`Options::max_open_files`), as RocksDB
//! keeps them unless told to cache them. A kept block saves a get two cache lookups.

use super::block::Block;
use super::cache::{BlockCache, Cached, KIND_FILTER, KIND_INDEX};
use super::filter;
use super::point_index::PointIndex;
use crate::error::Result;
use crate::stats::Counters;
use bytes::Bytes;
use std::sync::{Arc, OnceLock};

/// One table's filter and index block, wherever they are.
pub struct MetaBlocks {
    table: u64,
    cache: Arc<BlockCache>,
    /// Kept once read when the cache leaves them to the readers (set once; a race reads
    /// twice and keeps the first).
    filter: OnceLock<Bytes>,
    index: OnceLock<Block>,
    /// The point index, read on first use when readers keep their meta blocks (`None`
    /// inside: the table has none, or it could not be read: gets take the long way).
    point: OnceLock<Option<KeptPoint>>,
}

/// A kept point index and the bytes of the budget it holds.
struct KeptPoint {
    index: PointIndex,
    charged: u64,
}

impl Drop for MetaBlocks {
    fn drop(&mut self) {
        if let Some(Some(kept)) = self.point.get() {
            self.cache.point_budget().release(kept.charged);
        }
    }
}

impl MetaBlocks {
    pub fn new(table: u64, cache: Arc<BlockCache>) -> MetaBlocks {
        MetaBlocks {
            table,
            cache,
            filter: OnceLock::new(),
            index: OnceLock::new(),
            point: OnceLock::new(),
        }
    }

    /// The filter block, kept, cached, or `read` (a load, counted in `c`).
    pub fn filter(&self, c: &Counters, read: impl FnOnce() -> Result<Bytes>) -> Result<Bytes> {
        if let Some(f) = self.filter.get() {
            return Ok(f.clone());
        }
        if let Some(Cached::Filter(f)) = self.cache.get(self.table, KIND_FILTER) {
            return Ok(f);
        }
        let f = read()?;
        Counters::add(&c.local().filter_loads, 1);
        if self.cache.readers_keep_meta() {
            let _ = self.filter.set(f.clone());
        } else {
            let kept = Cached::Filter(f.clone());
            self.cache.insert(self.table, KIND_FILTER, kept);
        }
        Ok(f)
    }

    /// The index block, kept, cached, or `read` (a load, counted in `c`; cached if
    /// `fill_cache`, when the cache holds index blocks).
    pub fn index(
        &self,
        c: &Counters,
        fill_cache: bool,
        read: impl FnOnce() -> Result<Block>,
    ) -> Result<Block> {
        if let Some(b) = self.index.get() {
            return Ok(b.clone());
        }
        if let Some(Cached::Index(b)) = self.cache.get(self.table, KIND_INDEX) {
            return Ok(b);
        }
        let b = read()?;
        Counters::add(&c.local().index_loads, 1);
        if self.cache.readers_keep_meta() {
            let _ = self.index.set(b.clone());
        } else if fill_cache {
            let kept = Cached::Index(b.clone());
            self.cache.insert(self.table, KIND_INDEX, kept);
        }
        Ok(b)
    }

    /// The point index of `len` bytes, kept once `read` if the point budget has room for
    /// it (else asked again at a later get); `None` when the cache holds the meta blocks
    /// (the point index is not cached: it only speeds gets up), or when it fails to read or
    /// decode: a get then reads the data block, which answers the same, or reports the
    /// corruption where it touches it.
    pub fn point(
        &self,
        len: u64,
        read: impl FnOnce() -> Result<Option<Bytes>>,
    ) -> Option<&PointIndex> {
        if let Some(kept) = self.point.get() {
            return kept.as_ref().map(|k| &k.index);
        }
        if !self.cache.readers_keep_meta() {
            return None;
        }
        let budget = self.cache.point_budget();
        if len > 0 && !budget.reserve(len) {
            return None;
        }
        let mut mine = false;
        let kept = self.point.get_or_init(|| {
            mine = true;
            let index = PointIndex::new(read().ok()??)?;
            Some(KeptPoint {
                index,
                charged: len,
            })
        });
        // Another reader's index won the race, or there is none: the bytes go back.
        if !mine || kept.is_none() {
            budget.release(len);
        }
        kept.as_ref().map(|k| &k.index)
    }

    /// The filter block, if kept (borrowed: no reference count touched).
    pub fn kept_filter(&self) -> Option<&Bytes> {
        self.filter.get()
    }

    /// The point index, if kept.
    pub fn kept_point(&self) -> Option<&PointIndex> {
        self.point.get()?.as_ref().map(|k| &k.index)
    }

    /// The index block, if kept.
    pub fn kept_index(&self) -> Option<&Block> {
        self.index.get()
    }
}

/// Whether `filter` may hold the key of `hash` (no filter: it may); the probe counted in `c`.
pub fn filter_allows(filter: Option<&Bytes>, hash: u64, c: &Counters) -> bool {
    Counters::add(&c.local().filter_probes, 1);
    let ok = filter.is_none_or(|f| filter::may_contain(f, hash));
    if !ok {
        Counters::add(&c.local().filter_negatives, 1);
    }
    ok
}
