//! The device-DRAM cache for filter and index blocks, bounded in bytes.

use super::block::Block;
use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

#[derive(Clone)]
pub enum Cached {
    Filter(Bytes),
    Index(Block),
}

#[derive(Clone)]
struct ByteWeighter;

impl Weighter<(u64, u8), Cached> for ByteWeighter {
    fn weight(&self, _key: &(u64, u8), val: &Cached) -> u64 {
        let bytes = match val {
            Cached::Filter(b) => b.len(),
            Cached::Index(b) => b.size(),
        };
        bytes as u64 + 32
    }
}

/// Filter and index blocks by `(table id, kind)`; a budget of 0 caches nothing.
pub struct BlockCache {
    inner: Option<Cache<(u64, u8), Cached, ByteWeighter>>,
}

pub const KIND_FILTER: u8 = 0;
pub const KIND_INDEX: u8 = 1;

impl BlockCache {
    pub fn new(bytes: u64) -> Self {
        let inner = (bytes > 0).then(|| {
            let items = (bytes / 4096).clamp(16, 1 << 20) as usize;
            Cache::with_weighter(items, bytes, ByteWeighter)
        });
        BlockCache { inner }
    }

    pub fn get(&self, table: u64, kind: u8) -> Option<Cached> {
        self.inner.as_ref()?.get(&(table, kind))
    }

    pub fn insert(&self, table: u64, kind: u8, value: Cached) {
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
