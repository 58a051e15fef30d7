//! The multitenant workload on an in-memory engine.

use super::*;
use crate::workload::run::tests::MemDb;

pub(crate) fn config(tenants: usize, num_per_tenant: u64) -> MtConfig {
    MtConfig {
        tenants,
        num_per_tenant,
        gets_per_tenant: num_per_tenant,
        key_size: 16,
        value_size: 100,
        seed: 7,
        compression_ratio: 0.5,
        layout: LayoutArg::PerNamespace,
        profile: None,
        settle: true,
    }
}

#[test]
fn every_tenant_writes_its_own_keys_and_finds_them() {
    let db = MemDb::default();
    let cfg = config(3, 5_000);
    let values = ValuePool::new(cfg.value_size, 0.5, 1);
    let run = run(&db, &cfg, &values).unwrap();
    assert_eq!(run.tenants.len(), 3);
    assert_eq!(run.put.outcome.ops, 15_000);
    assert_eq!(run.put.outcome.name, "put");
    assert_eq!(run.get.outcome.ops, 15_000);
    assert_eq!(run.get.outcome.found, Some(15_000));
    assert_eq!(run.get.outcome.latency.count(), 15_000);
    assert_eq!(run.get.outcome.bytes, 15_000 * 116);
    assert!(run.put.delta.is_none());
    let map = db.tenant_map.lock().unwrap();
    for (i, t) in run.tenants.iter().enumerate() {
        assert_eq!(t.handle.index, i);
        assert_eq!(t.put.ops, 5_000);
        assert_eq!(t.get.ops, 5_000);
        assert_eq!(t.get_misses, 0);
        assert!(t.put.ops_per_sec() > 0.0 && t.get.ops_per_sec() > 0.0);
        assert!(t.stats.is_none());
        // About 1 - 1/e of each tenant's key space gets written, and only in its space.
        let written = map.keys().filter(|(id, _)| *id == t.handle.id).count();
        assert_eq!(written as u64, t.distinct_keys);
        let share = written as f64 / 5_000.0;
        assert!((share - 0.632).abs() < 0.03, "{share}");
    }
    assert_eq!(
        map.len() as u64,
        run.tenants.iter().map(|t| t.distinct_keys).sum::<u64>()
    );
    // Tenants draw different key sequences.
    let keys_of = |id| {
        let mut k: Vec<_> = map
            .keys()
            .filter(|(i, _)| *i == id)
            .map(|(_, k)| k.clone())
            .collect();
        k.sort();
        k
    };
    assert_ne!(
        keys_of(run.tenants[0].handle.id),
        keys_of(run.tenants[1].handle.id)
    );
}

#[test]
fn gets_per_tenant_samples_the_written_keys() {
    let db = MemDb::default();
    let mut cfg = config(2, 4_000);
    cfg.gets_per_tenant = 1_500;
    let values = ValuePool::new(cfg.value_size, 0.5, 1);
    let r = run(&db, &cfg, &values).unwrap();
    assert_eq!(r.put.outcome.ops, 8_000);
    assert_eq!(r.get.outcome.ops, 3_000);
    assert_eq!(r.get.outcome.found, Some(3_000));
    for t in &r.tenants {
        assert_eq!(t.put.ops, 4_000);
        assert_eq!(t.get.ops, 1_500);
        assert_eq!(t.get.latency.count(), 1_500);
    }
    // More gets than keys is fine too: keys repeat.
    cfg.gets_per_tenant = 10_000;
    let r = run(&db, &cfg, &values).unwrap();
    assert_eq!(r.get.outcome.found, Some(20_000));
    // The process's memory is sampled after each phase.
    if cfg!(target_os = "linux") {
        for m in [r.put_memory, r.get_memory] {
            assert!(m.rss_bytes.unwrap() > 0 && m.peak_rss_bytes.unwrap() > 0);
        }
    }
}

#[test]
fn baseline_tenants_share_one_cerberus_namespace() {
    use cerberus_bench_engines::{self as engine, Engine, OpenConfig};
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(3, 2_000);
    cfg.layout = LayoutArg::Baseline;
    cfg.gets_per_tenant = 500;
    let open = OpenConfig {
        cache_bytes: 1 << 20,
        tenants: 3,
        ..OpenConfig::at(dir.path(), LayoutArg::Baseline)
    };
    let db = engine::open(Engine::Cerberus, &open).unwrap();
    let values = ValuePool::new(cfg.value_size, 0.5, 1);
    let run = run(&*db, &cfg, &values).unwrap();
    assert_eq!(run.get.outcome.found, Some(1_500));
    let nsid = run.tenants[0].handle.id;
    assert!(nsid != 0);
    let written: u64 = run.tenants.iter().map(|t| t.distinct_keys).sum();
    for t in &run.tenants {
        assert_eq!(t.handle.id, nsid, "one namespace for all");
        assert_eq!(t.get_misses, 0);
        // Every tenant sees the whole namespace's counters.
        let [_, _, after] = t.stats.as_ref().unwrap();
        assert_eq!(after.puts, 6_000);
        let d = t.get_delta().unwrap();
        assert_eq!(d.gets, 1_500);
    }
    assert!(written > 3_000);
    // Opened again, the tenants find the same namespace.
    db.close().unwrap();
    drop(db);
    let db = engine::open(Engine::Cerberus, &open).unwrap();
    let again = db.create_tenants(3).unwrap();
    assert!(again.iter().all(|t| t.id == nsid));
    db.close().unwrap();
}

#[test]
fn misses_are_counted() {
    let db = MemDb {
        drop_ending: Some(b'7'),
        ..Default::default()
    };
    let cfg = config(2, 2_000);
    let values = ValuePool::new(cfg.value_size, 0.5, 1);
    let run = run(&db, &cfg, &values).unwrap();
    let misses: u64 = run.tenants.iter().map(|t| t.get_misses).sum();
    // A tenth of the keys end with 7.
    let share = misses as f64 / 4_000.0;
    assert!((share - 0.1).abs() < 0.03, "{share}");
    assert_eq!(run.get.outcome.found, Some(4_000 - misses));
}

#[test]
fn keyset_lists_what_was_inserted() {
    let mut s = KeySet::new(130);
    for k in [129, 0, 64, 63, 5, 5] {
        s.insert(k);
    }
    assert_eq!(s.keys(), vec![0, 5, 63, 64, 129]);
    assert!(KeySet::new(1).keys().is_empty());
}

#[test]
fn namespace_delta_subtracts() {
    let before = NamespaceStats {
        nsid: 3,
        gets: 10,
        gets_by_level: vec![1, 2],
        filter_loads: 4,
        pages: [1, 1, 1, 1, 1, 1],
        ..Default::default()
    };
    let after = NamespaceStats {
        nsid: 3,
        levels: vec![Default::default(); 3],
        gets: 30,
        gets_by_level: vec![5, 2, 7],
        filter_loads: 9,
        pages: [1, 2, 3, 4, 5, 6],
        ..Default::default()
    };
    let d = ns_delta(&before, &after);
    assert_eq!(d.nsid, 3);
    assert_eq!(d.gets, 20);
    assert_eq!(d.gets_by_level, vec![4, 0, 7]);
    assert_eq!(d.filter_loads, 5);
    assert_eq!(d.pages, [0, 1, 2, 3, 4, 5]);
    assert_eq!(d.levels.len(), 3);
}
