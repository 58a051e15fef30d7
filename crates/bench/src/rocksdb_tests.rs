//! The RocksDB adapter (cerberus-bench-engines) under the bench's own workloads: tenants in
//! every layout through the multitenant run, and seekrandom with and without blob files.

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
        check_tenants(Engine::RocksDb, layout, |db| {
            // Where the shared key spaces put the tenant index.
            assert_eq!(db.get(b"\0\0\0\x02k").unwrap(), layout == LayoutArg::Shared);
            assert_eq!(
                db.get(b"k\0\0\0\x02").unwrap(),
                layout == LayoutArg::Baseline
            );
            let cfs = db.stats_json().get("column_families").is_some();
            assert_eq!(cfs, layout == LayoutArg::PerNamespace);
        });
    }
}

#[test]
fn seekrandom_returns_what_the_database_holds_with_and_without_blob_files() {
    for blob_files in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let engine = if blob_files {
            Engine::RocksDbBlob
        } else {
            Engine::RocksDb
        };
        let db = engine::open(engine, &open_config(dir.path())).unwrap();
        let model = fill(&*db);
        db.flush().unwrap();
        let stats = db.stats_json();
        assert_eq!(stats["blob_files"], blob_files);
        let blobs = stats["num_blob_files"].as_u64().unwrap();
        assert_eq!(blobs > 0, blob_files, "{stats}");
        for (threads, seeks, scan_length, keys_only) in
            [(1, 300, 50, false), (3, 301, 7, false), (2, 200, 100, true)]
        {
            let scan = ScanConfig {
                seeks,
                scan_length,
                keys_only,
                prefetch_degree: 0,
                index_prefetch: true,
                readahead_bytes: if keys_only { 0 } else { 256 << 10 },
            };
            check_seekrandom(&*db, &model, threads, scan);
        }
        db.close().unwrap();
    }
}
