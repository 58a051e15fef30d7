//! What the tests of every peer adapter (RocksDB, fjall) check alike under the bench's own
//! workloads: three tenants kept apart in a layout, the multitenant run over them, and a
//! reopen that finds them again.

use crate::multitenant::{self, MtConfig};
use crate::workload::ValuePool;
use cerberus_bench_engines::profile::{paper_profile, ProfileArg};
use cerberus_bench_engines::{self as engine, BenchDb, Engine, LayoutArg, OpenConfig};

/// Opens `engine` for three tenants in `layout`, puts a key for tenants 0 and 2 and checks
/// each tenant sees only its own; `check` then sees the database (the adapter's own checks),
/// the multitenant run follows, and a reopen finds tenant 2's key.
pub(crate) fn check_tenants(engine: Engine, layout: LayoutArg, check: impl FnOnce(&dyn BenchDb)) {
    let dir = tempfile::tempdir().unwrap();
    let config = OpenConfig {
        cache_bytes: 1 << 20,
        tenants: 3,
        profile: Some(paper_profile(3)),
        ..OpenConfig::at(dir.path(), layout)
    };
    let db = engine::open(engine, &config).unwrap();
    let t = db.create_tenants(3).unwrap();
    assert!(db.create_tenants(2).is_err());
    db.put_tenant(&t[0], b"k", b"v0").unwrap();
    db.put_tenant(&t[2], b"k", b"v2").unwrap();
    assert!(db.get_tenant(&t[0], b"k").unwrap());
    assert!(!db.get_tenant(&t[1], b"k").unwrap());
    assert!(db.get_tenant(&t[2], b"k").unwrap());
    assert!(!db.get(b"k").unwrap(), "{layout:?}");
    check(&*db);

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
    // Reopens with the tenants' key spaces it has (column families, partitions).
    let db = engine::open(engine, &config).unwrap();
    let t = db.create_tenants(3).unwrap();
    assert!(db.get_tenant(&t[2], b"k").unwrap());
}
