//! The device-DRAM cache for filter, index and data blocks, bounded in bytes.

use super::block::Block;
use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::point_budget::PointBudget;
use crate::id_hash::IdHash;

#[derive(Clone)]
pub enum Cached {
    Filter(Bytes),
    Index(Block),
    Data(Block),
}

#[derive(Clone)]
struct ByteWeighter;

impl Weighter<(u64, u64), Cached> for ByteWeighter {
    fn weight(&self, _key: &(u64, u64), val: &Cached) -> u64 {
        let bytes = match val {
            Cached::Filter(b) => b.len(),
            Cached::Index(b) | Cached::Data(b) => b.size(),
        };
        bytes as u64 + 32
    }
}

/// Blocks by `(table id, what)`: a data block's offset, or one of the kinds below for the
/// table's filter and index block; a budget of 0 caches nothing. A deleted table's data
/// blocks are not looked for: table ids are never reused, so they age out.
pub struct BlockCache {
    inner: Option<Cache<(u64, u64), Cached, ByteWeighter, IdHash>>,
    /// Filter and index blocks are kept by their open table readers, not here
    /// (`Options::cache_filters_and_indexes` off).
    readers_keep_meta: bool,
    /// What the readers' kept point indexes may take (see `point_budget`).
    point_budget: PointBudget,
}

pub const KIND_FILTER: u64 = u64::MAX;
pub const KIND_INDEX: u64 = u64::MAX - 1;

impl BlockCache {
    /// A cache of `bytes` that holds filter and index blocks too (tools and tests that
    /// count every load use it so).
    pub fn new(bytes: u64) -> Self {
        Self::with_meta(bytes, true)
    }

    /// A cache of `bytes`; filter and index blocks in it if `meta_in_cache`, else kept by
    /// the table readers once read.
    pub fn with_meta(bytes: u64, meta_in_cache: bool) -> Self {
        let inner = (bytes > 0).then(|| {
            let items = (bytes / 4096).clamp(16, 1 << 20) as usize;
            Cache::with(
                items,
                bytes,
                ByteWeighter,
                IdHash::default(),
                Default::default(),
            )
        });
        BlockCache {
            inner,
            readers_keep_meta: !meta_in_cache,
            point_budget: PointBudget::new(u64::MAX),
        }
    }

    /// The same, with the readers' point indexes bounded to `bytes` together.
    pub fn with_point_budget(self, bytes: u64) -> Self {
        BlockCache {
            point_budget: PointBudget::new(bytes),
            ..self
        }
    }

    /// The budget of the point indexes the table readers keep.
    pub fn point_budget(&self) -> &PointBudget {
        &self.point_budget
    }

    /// Whether table readers keep their filter and index block themselves.
    pub fn readers_keep_meta(&self) -> bool {
        self.readers_keep_meta
    }

    pub fn get(&self, table: u64, kind: u64) -> Option<Cached> {
        self.inner.as_ref()?.get(&(table, kind))
    }

    pub fn insert(&self, table: u64, kind: u64, value: Cached) {
        if let Some(c) = &self.inner {
            c.insert((table, kind), value);
        }
    }

    pub fn evict_table(&self, table: u64) {
        if let Some(c) = &self.inner {
            c.remove(&(table, KIND_FILTER));
            c.remove(&(table, KIND_INDEX));
        }
    }
}
