//! Helpers shared by the integration tests.
#![allow(dead_code)]

use cerberus_engine::Options;
use cerberus_engine::Readable;

/// Options that make flushes, compactions and segment rolls happen after a few hundred writes.
pub fn small_options() -> Options {
    Options {
        memtable_bytes: 16 << 10,
        max_immutable_memtables: 2,
        block_size: 512,
        cache_bytes: 64 << 10,
        inline_value_threshold: 16,
        vlog_segment_bytes: 64 << 10,
        target_table_bytes: 8 << 10,
        l0_compaction_trigger: 3,
        l0_slowdown_trigger: 6,
        l0_stop_trigger: 10,
        level1_bytes: 32 << 10,
        level_size_ratio: 4,
        num_levels: 5,
        background_threads: 2,
        ..Options::default()
    }
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
