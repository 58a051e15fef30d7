//! Helpers shared by the integration tests.
#![allow(dead_code)]

use cerberus_engine::Options;
use cerberus_engine::Readable;

/// Options that make flushes, compactions and segment rolls happen after a few hundred writes.
pub fn small_options() -> Options {
    let mut o = Options::default();
    o.memtable_bytes = 16 << 10;
    o.max_immutable_memtables = 2;
    o.block_size = 512;
    o.cache_bytes = 64 << 10;
    o.inline_value_threshold = 16;
    o.vlog_segment_bytes = 64 << 10;
    o.target_table_bytes = 8 << 10;
    o.l0_compaction_trigger = 3;
    o.l0_slowdown_trigger = 6;
    o.l0_stop_trigger = 10;
    o.level1_bytes = 32 << 10;
    o.level_size_ratio = 4;
    o.num_levels = 5;
    o.background_threads = 2;
    o
}

/// Seed from `CERBERUS_TEST_SEED`, or a fixed one so failures reproduce.
pub fn seed(default: u64) -> u64 {
    std::env::var("CERBERUS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

pub fn value_for(key: u32, version: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{key}:{version}:").into_bytes();
    while v.len() < len {
        v.push(b'a' + (v.len() % 26) as u8);
    }
    v.truncate(len.max(1));
    v
}

/// A page of keys in byte order, and whether another key follows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyList {
    pub keys: Vec<bytes::Bytes>,
    pub more: bool,
}

/// Key listing over the engine's iterators (keys only), as the device's List command pages.
pub trait ListKeys {
    /// Up to `limit` keys from `start` on (strictly after it if `exclusive`).
    fn list_keys(
        &self,
        start: &[u8],
        exclusive: bool,
        limit: usize,
    ) -> cerberus_engine::Result<KeyList>;
}

impl ListKeys for cerberus_engine::Namespace {
    fn list_keys(
        &self,
        start: &[u8],
        exclusive: bool,
        limit: usize,
    ) -> cerberus_engine::Result<KeyList> {
        let opts = cerberus_engine::ReadOptions {
            keys_only: true,
            ..cerberus_engine::ReadOptions::default()
        };
        let mut it = self.iter(opts)?;
        let mut from = start.to_vec();
        if exclusive {
            from.push(0);
        }
        it.seek(&from)?;
        let mut keys = Vec::new();
        for entry in it.by_ref().take(limit) {
            keys.push(entry?.0);
        }
        let more = it.next().transpose()?.is_some();
        Ok(KeyList { keys, more })
    }
}
