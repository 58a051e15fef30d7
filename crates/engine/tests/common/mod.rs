//! Helpers shared by the integration tests.
#![allow(dead_code)]

use cerberus_engine::Options;

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
