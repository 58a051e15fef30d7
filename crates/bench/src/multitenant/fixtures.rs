//! A two-tenant run with known figures, for the tests of the report modules.

use super::{MtConfig, MtRun, TenantPhase, TenantResult};
use crate::histogram::Histogram;
use crate::memory::MemorySample;
use crate::report::PhaseReport;
use crate::workload::{PhaseOutcome, Workload};
use cerberus_bench_engines::profile::ProfileArg;
use cerberus_bench_engines::{LayoutArg, TenantHandle};
use cerberus_engine::storage::NandStats;
use cerberus_engine::{DbStats, LevelStats, NamespaceStats, StepCost};

fn phase(ops: u64, seconds: f64, micros: u64) -> TenantPhase {
    let mut latency = Histogram::new();
    for _ in 0..ops {
        latency.record(micros * 1000);
    }
    TenantPhase {
        ops,
        seconds,
        latency,
    }
}

fn ns(
    gets: u64,
    memtable: u64,
    by_level: Vec<u64>,
    filter_loads: u64,
    pages: [u64; 6],
) -> NamespaceStats {
    NamespaceStats {
        nsid: 0,
        levels: vec![
            LevelStats {
                tables: 1,
                bytes: 100,
                ..LevelStats::default()
            },
            LevelStats {
                tables: 3,
                bytes: 3000,
                ..LevelStats::default()
            },
        ],
        gets,
        gets_memtable: memtable,
        gets_by_level: by_level,
        filter_loads,
        pages,
        ..Default::default()
    }
}

fn tenant(index: usize, put_secs: f64, get_secs: f64, stats: bool) -> TenantResult {
    let before = ns(0, 0, vec![0, 0, 0], 0, [0; 6]);
    // 1000 gets: 100 memtable, 200 L0, 700 L1; filter loads 10 * (index + 1);
    // pages: 500 data + 1000 value (+ index).
    let after = ns(
        1000,
        100,
        vec![200, 700, 0],
        10 * (index as u64 + 1),
        [0, index as u64, 500, 1000, 0, 0],
    );
    // The search: 100 memtable hits of 2 us, 900 misses of 1 us; L0: 200 hits of 5 us,
    // 700 misses of 4 us; runs: none; L1: 700 hits of 10 us. ALKA: L1 10; L0 (200 * 5 +
    // 700 * (4 + 10)) / 900 = 12; memtable 0.1 * 2 + 0.9 * (1 + 12) = 11.9 (= the time of
    // all steps over the gets: 11900 us / 1000).
    let after = NamespaceStats {
        search: vec![
            step("memtable", 100, 2, 900, 1),
            step("L0", 200, 5, 700, 4),
            step("runs", 0, 0, 0, 0),
            step("L1", 700, 10, 0, 0),
            step("L2", 0, 0, 0, 0),
        ],
        compaction_bytes_written: 5000 * (index as u64 + 1),
        consolidations: 1,
        consolidation_bytes_written: 3000,
        ..after
    };
    TenantResult {
        handle: TenantHandle {
            index,
            id: index as u32 + 1,
            name: TenantHandle::name_of(index),
        },
        put: phase(1000, put_secs, 5),
        get: phase(1000, get_secs, 20),
        distinct_keys: 632,
        get_misses: 0,
        stats: stats.then(|| [before.clone(), before, after]),
        get_path: stats.then(|| super::MeanGetPath {
            levels: vec![0.5, 1.0, 0.25],
            runs: 0.0,
        }),
    }
}

/// A step with `hits` of `hit_us` each and `misses` of `miss_us` each.
pub(super) fn step(name: &str, hits: u64, hit_us: u64, misses: u64, miss_us: u64) -> StepCost {
    StepCost {
        step: name.into(),
        hits,
        hit_nanos: hits * hit_us * 1000,
        misses,
        miss_nanos: misses * miss_us * 1000,
    }
}

fn outcome(read: bool, ops: u64, seconds: f64) -> PhaseOutcome {
    PhaseOutcome {
        workload: if read {
            Workload::ReadRandom
        } else {
            Workload::FillRandom
        },
        name: if read { "get" } else { "put" },
        ops,
        found: read.then_some(ops),
        writer_ops: None,
        seconds,
        thread_seconds: seconds,
        bytes: ops * 100,
        latency: Histogram::new(),
        scan: None,
    }
}

pub(super) fn run(stats: bool) -> MtRun {
    let put_delta = DbStats {
        compaction_bytes_written: 30_000,
        flush_bytes_written: 16_000,
        l0_bytes_written: 20_000,
        run_merge_bytes_written: 8_000,
        level_bytes_written: 2_000,
        ..Default::default()
    };
    let get_delta = DbStats {
        gets: 2000,
        compaction_bytes_written: 2_000,
        consolidation_bytes_written: 2_000,
        nand: Some(NandStats {
            read_time_ns: 100_000_000,
            ..Default::default()
        }),
        ..Default::default()
    };
    MtRun {
        put: PhaseReport {
            outcome: outcome(false, 2000, 1.0),
            delta: stats.then_some(put_delta),
        },
        get: PhaseReport {
            outcome: outcome(true, 2000, 0.5),
            delta: stats.then_some(get_delta),
        },
        tenants: vec![tenant(0, 0.5, 0.25, stats), tenant(1, 1.0, 0.5, stats)],
        put_memory: MemorySample {
            rss_bytes: Some(100 << 20),
            peak_rss_bytes: Some(120 << 20),
        },
        get_memory: MemorySample {
            rss_bytes: Some(110 << 20),
            peak_rss_bytes: Some(150 << 20),
        },
    }
}

pub(super) fn mt_config() -> MtConfig {
    MtConfig {
        tenants: 2,
        num_per_tenant: 1000,
        gets_per_tenant: 1000,
        key_size: 16,
        value_size: 100,
        seed: 1,
        compression_ratio: 0.5,
        layout: LayoutArg::Shared,
        profile: Some(ProfileArg::Paper),
        settle: true,
    }
}
