//! The fjall adapter (cerberus-bench-engines) under the bench's own workloads: tenants in
//! every layout through the multitenant run, and seekrandom with and without key-value
//! separation.

use crate::multitenant::{self, MtConfig};
use crate::workload::scan::ScanConfig;
use crate::workload::seek::tests::{check_seekrandom, fill, open_config};
use crate::workload::ValuePool;
use cerberus_bench_engines::profile::{paper_profile, ProfileArg};
use cerberus_bench_engines::{self as engine, Engine, LayoutArg, OpenConfig};

#[test]
fn tenants_are_separate_in_every_layout() {
    for layout in [
        LayoutArg::PerNamespace,
        LayoutArg::Shared,
        LayoutArg::Baseline,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = OpenConfig {
            cache_bytes: 1 << 20,
            tenants: 3,
            profile: Some(paper_profile(3)),
            ..OpenConfig::at(dir.path(), layout)
        };
        let db = engine::open(Engine::Fjall, &config).unwrap();
        let t = db.create_tenants(3).unwrap();
        assert!(db.create_tenants(2).is_err());
        db.put_tenant(&t[0], b"k", b"v0").unwrap();
        db.put_tenant(&t[2], b"k", b"v2").unwrap();
        assert!(db.get_tenant(&t[0], b"k").unwrap());
        assert!(!db.get_tenant(&t[1], b"k").unwrap());
        assert!(db.get_tenant(&t[2], b"k").unwrap());
        assert!(!db.get(b"k").unwrap(), "{layout:?}");

        let mt = MtConfig {
            tenants: 3,
            num_per_tenant: 3_000,
            gets_per_tenant: 2_000,
            key_size: 16,
            value_size: 100,
            seed: 1,
            compression_ratio: 0.5,
            layout,
            profile: Some(ProfileArg::Paper),
            settle: true,
        };
        let values = ValuePool::new(100, 0.5, 1);
        let run = multitenant::run(&*db, &mt, &values).unwrap();
        assert_eq!(run.get.outcome.found, Some(6_000));
        assert!(run.tenants.iter().all(|t| t.stats.is_none()));
        db.close().unwrap();
        drop(db);
        // Reopens with the partitions it has.
        let db = engine::open(Engine::Fjall, &config).unwrap();
        let t = db.create_tenants(3).unwrap();
        assert!(db.get_tenant(&t[2], b"k").unwrap());
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
