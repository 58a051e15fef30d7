//! The fjall adapter (cerberus-bench-engines) under the bench's own workloads: tenants in
//! every layout through the multitenant run, and seekrandom with and without key-value
//! separation.

use crate::peer_tests::check_tenants;
use crate::workload::scan::ScanConfig;
use crate::workload::seek::tests::{check_seekrandom, fill, open_config};
use cerberus_bench_engines::{self as engine, Engine, LayoutArg};

#[test]
fn tenants_are_separate_in_every_layout() {
    for layout in [
        LayoutArg::PerNamespace,
        LayoutArg::Shared,
        LayoutArg::Baseline,
    ] {
        check_tenants(Engine::Fjall, layout, |_| {});
    }
}

#[test]
fn seekrandom_returns_what_the_database_holds_with_and_without_separation() {
    for (engine, separated) in [(Engine::Fjall, false), (Engine::FjallBlob, true)] {
        let dir = tempfile::tempdir().unwrap();
        let db = engine::open(engine, &open_config(dir.path())).unwrap();
        let model = fill(&*db);
        db.flush().unwrap();
        let stats = db.stats_json();
        assert_eq!(stats["kv_separation"], separated);
        let blobs = stats["main"]["blob_files"].as_u64().unwrap();
        assert_eq!(blobs > 0, separated, "{stats}");
        for (threads, seeks, scan_length, keys_only) in
            [(1, 300, 50, false), (3, 301, 7, false), (2, 200, 100, true)]
        {
            let scan = ScanConfig {
                seeks,
                scan_length,
                keys_only,
                prefetch_degree: 0,
                index_prefetch: true,
                readahead_bytes: 0,
            };
            check_seekrandom(&*db, &model, threads, scan);
        }
        db.close().unwrap();
    }
}
