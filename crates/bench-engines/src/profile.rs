//! `--profile`: named sets of engine sizes. Without a profile every engine keeps its defaults.
//!
//! `paper` scales the memtable and the levels down so that a short run already has a tree
//! several levels deep: with one tenant most gets are answered by L1 and the levels below
//! it, not by the memtable or L0, as in Figure 9 of the Cerberus paper. All of its numbers
//! are the `PAPER_*` constants below.

use serde::Serialize;

/// Memtable bytes per tenant. Cerberus has one memtable shared by all namespaces, so its
/// `memtable_bytes` is `tenants` times this (RocksDB: the write buffer of each tenant's
/// column family, or `tenants` times this for the one column family of the shared layout).
pub const PAPER_MEMTABLE_BYTES_PER_TENANT: u64 = 1 << 20;
/// Bytes L1 may hold (of each namespace's tree in the per-namespace layout): one tenant's
/// 50,000 keys (about 0.7 MB of tables) fit, eight tenants' do not.
pub const PAPER_LEVEL1_BYTES: u64 = 1 << 20;
/// Each level below L1 holds this many times the level above.
pub const PAPER_LEVEL_SIZE_RATIO: u64 = 2;
/// Target size of a table written by compaction.
pub const PAPER_TARGET_TABLE_BYTES: u64 = 64 << 10;
/// L0 tables that trigger a compaction into L1.
pub const PAPER_L0_COMPACTION_TRIGGER: usize = 2;
/// Values shorter than this are also stored inline in the tables (0: never; every value is
/// in the value log, tables hold keys and value addresses). Cerberus only.
pub const PAPER_INLINE_VALUE_THRESHOLD: usize = 0;
/// Bloom filter bits per key.
pub const PAPER_FILTER_BITS_PER_KEY: u32 = 10;
/// Levels, L0 included.
pub const PAPER_NUM_LEVELS: usize = 7;
/// Target bytes of a table's data block.
pub const PAPER_BLOCK_SIZE: usize = 4096;
/// Filter and index blocks live in the block cache (Cerberus only): the paper's device keeps
/// them in its small DRAM beside data blocks, and its figures count their loads.
pub const PAPER_CACHE_FILTERS_AND_INDEXES: bool = true;

/// `--profile` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    /// Small memtable and levels (see crates/bench/README.md).
    Paper,
}

impl ProfileArg {
    /// Its `--profile` value, as the reports and JSON documents name it.
    pub fn name(self) -> &'static str {
        match self {
            ProfileArg::Paper => "paper",
        }
    }

    /// The sizes of this profile for a run with `tenants` tenants.
    pub fn sizes(self, tenants: usize) -> SizeProfile {
        match self {
            ProfileArg::Paper => paper_profile(tenants),
        }
    }
}

/// Engine sizes a profile sets; each engine applies those it has an equivalent of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SizeProfile {
    /// Memtable bytes of the whole database (Cerberus's memtable is shared by all tenants).
    pub memtable_bytes: u64,
    /// Memtable bytes per tenant (RocksDB's write buffer per column family).
    pub memtable_bytes_per_tenant: u64,
    /// Bytes L1 may hold.
    pub level1_bytes: u64,
    /// Each level below L1 holds this many times the level above.
    pub level_size_ratio: u64,
    /// Target size of a table written by compaction.
    pub target_table_bytes: u64,
    /// L0 tables that trigger a compaction into L1.
    pub l0_compaction_trigger: usize,
    /// Values shorter than this are stored inline in the tables (0: never; Cerberus only).
    pub inline_value_threshold: usize,
    /// Bloom filter bits per key.
    pub filter_bits_per_key: u32,
    /// Levels, L0 included.
    pub num_levels: usize,
    /// Target bytes of a table's data block.
    pub block_size: usize,
    /// Cerberus: `Options::cache_filters_and_indexes`.
    pub cache_filters_and_indexes: bool,
}

/// The `paper` profile for `tenants` tenants: the `PAPER_*` constants, with the shared
/// memtable growing with the tenants so that each has the same share of it.
pub fn paper_profile(tenants: usize) -> SizeProfile {
    let tenants = tenants.max(1) as u64;
    SizeProfile {
        memtable_bytes: PAPER_MEMTABLE_BYTES_PER_TENANT * tenants,
        memtable_bytes_per_tenant: PAPER_MEMTABLE_BYTES_PER_TENANT,
        level1_bytes: PAPER_LEVEL1_BYTES,
        level_size_ratio: PAPER_LEVEL_SIZE_RATIO,
        target_table_bytes: PAPER_TARGET_TABLE_BYTES,
        l0_compaction_trigger: PAPER_L0_COMPACTION_TRIGGER,
        inline_value_threshold: PAPER_INLINE_VALUE_THRESHOLD,
        filter_bits_per_key: PAPER_FILTER_BITS_PER_KEY,
        num_levels: PAPER_NUM_LEVELS,
        block_size: PAPER_BLOCK_SIZE,
        cache_filters_and_indexes: PAPER_CACHE_FILTERS_AND_INDEXES,
    }
}

impl SizeProfile {
    /// Sets these sizes in Cerberus's options. The L0 slowdown and stop triggers are raised
    /// if needed to stay at or above the compaction trigger.
    pub fn apply(&self, o: &mut cerberus_engine::Options) {
        o.memtable_bytes = self.memtable_bytes as usize;
        o.level1_bytes = self.level1_bytes;
        o.level_size_ratio = self.level_size_ratio;
        o.target_table_bytes = self.target_table_bytes;
        o.l0_compaction_trigger = self.l0_compaction_trigger;
        o.l0_slowdown_trigger = o.l0_slowdown_trigger.max(self.l0_compaction_trigger);
        o.l0_stop_trigger = o.l0_stop_trigger.max(o.l0_slowdown_trigger);
        o.inline_value_threshold = self.inline_value_threshold;
        o.filter_bits_per_key = self.filter_bits_per_key;
        o.num_levels = self.num_levels;
        o.block_size = self.block_size;
        o.cache_filters_and_indexes = self.cache_filters_and_indexes;
    }

    /// One line for the run's header.
    pub fn describe(&self) -> String {
        let mb = |b: u64| b as f64 / 1_048_576.0;
        format!(
            "memtable {:.1} MB ({:.1} MB per tenant), L1 {:.1} MB, x{} per level, tables {:.1} MB, \
             L0 trigger {}, {} levels, inline values below {} B, {} filter bits/key, blocks {} B",
            mb(self.memtable_bytes),
            mb(self.memtable_bytes_per_tenant),
            mb(self.level1_bytes),
            self.level_size_ratio,
            mb(self.target_table_bytes),
            self.l0_compaction_trigger,
            self.num_levels,
            self.inline_value_threshold,
            self.filter_bits_per_key,
            self.block_size,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_profile_makes_valid_cerberus_options() {
        for tenants in [1, 4, 64] {
            let p = paper_profile(tenants);
            assert_eq!(p.memtable_bytes, (tenants as u64) << 20);
            assert_eq!(p.memtable_bytes_per_tenant, 1 << 20);
            let mut o = cerberus_engine::Options::default();
            p.apply(&mut o);
            o.validate().unwrap();
            assert_eq!(o.memtable_bytes, tenants << 20);
            assert_eq!(o.level1_bytes, PAPER_LEVEL1_BYTES);
            assert_eq!(o.level_size_ratio, PAPER_LEVEL_SIZE_RATIO);
            assert_eq!(o.target_table_bytes, PAPER_TARGET_TABLE_BYTES);
            assert_eq!(o.l0_compaction_trigger, PAPER_L0_COMPACTION_TRIGGER);
            assert_eq!(o.inline_value_threshold, PAPER_INLINE_VALUE_THRESHOLD);
            assert_eq!(o.filter_bits_per_key, PAPER_FILTER_BITS_PER_KEY);
            assert_eq!(o.num_levels, PAPER_NUM_LEVELS);
            assert_eq!(o.block_size, PAPER_BLOCK_SIZE);
            assert!(o.cache_filters_and_indexes);
        }
        assert_eq!(paper_profile(0), paper_profile(1));
    }

    #[test]
    fn apply_keeps_l0_triggers_ordered() {
        let p = SizeProfile {
            l0_compaction_trigger: 30,
            ..paper_profile(1)
        };
        let mut o = cerberus_engine::Options::default();
        p.apply(&mut o);
        o.validate().unwrap();
        assert_eq!(o.l0_slowdown_trigger, 30);
        assert_eq!(o.l0_stop_trigger, 30);
    }
}
