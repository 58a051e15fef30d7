//! The `multitenant` workload: one database, `tenants` namespaces, one thread per tenant.
//!
//! Phase "put": all threads start together; each puts `num_per_tenant` uniformly random keys
//! of `0..num_per_tenant` (as fillrandom) into its own namespace. Phase "get": all threads
//! start together again; each makes `gets_per_tenant` gets of keys picked uniformly among
//! those it wrote, so every get should find its key (a miss is counted as an error). The
//! namespace counters of every tenant are snapshotted before and after each phase, and the
//! process's memory at the end of each.

mod cost_model;
mod figures;
#[cfg(test)]
mod fixtures;
mod json;
pub mod report;
mod summary;

use crate::engine::{BenchDb, LayoutArg, TenantHandle};
use crate::histogram::Histogram;
use crate::memory::MemorySample;
use crate::profile::{ProfileArg, SizeProfile};
use crate::report::measures::stats_delta;
use crate::report::PhaseReport;
use crate::workload::{
    mix, progress_bar, KeyFormat, PhaseOutcome, ValuePool, Workload, PROGRESS_EVERY,
};
use anyhow::{anyhow, bail, Result};
use cerberus_engine::NamespaceStats;
use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Parameters of a multitenant run.
#[derive(Clone, Debug)]
pub struct MtConfig {
    pub tenants: usize,
    pub num_per_tenant: u64,
    /// Gets each tenant makes in the get phase.
    pub gets_per_tenant: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub seed: u64,
    pub compression_ratio: f64,
    pub layout: LayoutArg,
    pub profile: Option<ProfileArg>,
    /// Between the phases, let the engine flush and finish its compactions (untimed).
    pub settle: bool,
}

impl MtConfig {
    /// The engine sizes of `--profile` for this many tenants.
    pub fn sizes(&self) -> Option<SizeProfile> {
        self.profile.map(|p| p.sizes(self.tenants))
    }
}

/// What one tenant's thread measured in one phase.
#[derive(Clone, Debug, Default)]
pub struct TenantPhase {
    pub ops: u64,
    /// From the thread's first operation to its last.
    pub seconds: f64,
    pub latency: Histogram,
}

impl TenantPhase {
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// One tenant's results.
#[derive(Clone, Debug)]
pub struct TenantResult {
    pub handle: TenantHandle,
    pub put: TenantPhase,
    pub get: TenantPhase,
    /// Distinct keys the tenant wrote (what its gets pick from).
    pub distinct_keys: u64,
    /// Gets that did not find a key the tenant had written.
    pub get_misses: u64,
    /// Namespace counters before the put phase, between the phases and after the get phase
    /// (Cerberus only).
    pub stats: Option<[NamespaceStats; 3]>,
}

impl TenantResult {
    /// The change of the namespace counters over the get phase.
    pub fn get_delta(&self) -> Option<NamespaceStats> {
        self.stats.as_ref().map(|[_, b, a]| ns_delta(b, a))
    }
}

/// A multitenant run on one engine: the two phases (with the engine-wide counter deltas)
/// and every tenant.
pub struct MtRun {
    pub put: PhaseReport,
    pub get: PhaseReport,
    pub tenants: Vec<TenantResult>,
    /// The process's memory when the put threads ended (before the settle step) and when the
    /// get threads ended.
    pub put_memory: MemorySample,
    pub get_memory: MemorySample,
}

/// The counters of `after` minus those of `before`; `levels` is `after`'s.
pub fn ns_delta(before: &NamespaceStats, after: &NamespaceStats) -> NamespaceStats {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let arr = |a: &[u64; 6], b: &[u64; 6]| std::array::from_fn(|i| d(a[i], b[i]));
    NamespaceStats {
        nsid: after.nsid,
        levels: after.levels.clone(),
        gets: d(after.gets, before.gets),
        gets_memtable: d(after.gets_memtable, before.gets_memtable),
        gets_by_level: after
            .gets_by_level
            .iter()
            .enumerate()
            .map(|(i, &a)| d(a, before.gets_by_level.get(i).copied().unwrap_or(0)))
            .collect(),
        gets_runs: d(after.gets_runs, before.gets_runs),
        search: after
            .search
            .iter()
            .map(|a| {
                let b = before.search.iter().find(|b| b.step == a.step);
                let b = b.cloned().unwrap_or_default();
                cerberus_engine::StepCost {
                    step: a.step.clone(),
                    hits: d(a.hits, b.hits),
                    hit_nanos: d(a.hit_nanos, b.hit_nanos),
                    misses: d(a.misses, b.misses),
                    miss_nanos: d(a.miss_nanos, b.miss_nanos),
                }
            })
            .collect(),
        runs: after.runs.clone(),
        compaction_bytes_written: d(
            after.compaction_bytes_written,
            before.compaction_bytes_written,
        ),
        gets_not_found: d(after.gets_not_found, before.gets_not_found),
        puts: d(after.puts, before.puts),
        deletes: d(after.deletes, before.deletes),
        filter_probes: d(after.filter_probes, before.filter_probes),
        filter_loads: d(after.filter_loads, before.filter_loads),
        index_loads: d(after.index_loads, before.index_loads),
        reads: arr(&after.reads, &before.reads),
        read_bytes: arr(&after.read_bytes, &before.read_bytes),
        pages: arr(&after.pages, &before.pages),
        listings: cerberus_engine::ListingStats {
            calls: d(after.listings.calls, before.listings.calls),
            keys: d(after.listings.keys, before.listings.keys),
            index_loads: d(after.listings.index_loads, before.listings.index_loads),
            reads: arr(&after.listings.reads, &before.listings.reads),
            read_bytes: arr(&after.listings.read_bytes, &before.listings.read_bytes),
            pages: arr(&after.listings.pages, &before.listings.pages),
        },
        keys_estimate: after.keys_estimate,
        snapshots: after.snapshots,
    }
}

/// Which keys of `0..len` a tenant has written.
struct KeySet {
    words: Vec<u64>,
}

impl KeySet {
    fn new(len: u64) -> KeySet {
        KeySet {
            words: vec![0; len.div_ceil(64) as usize],
        }
    }

    #[inline]
    fn insert(&mut self, k: u64) {
        self.words[(k / 64) as usize] |= 1 << (k % 64);
    }

    /// The keys, ascending.
    fn keys(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for (w, &bits) in self.words.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                out.push(w as u64 * 64 + u64::from(bits.trailing_zeros()));
                bits &= bits - 1;
            }
        }
        out
    }
}

/// Runs `work(tenant)` on one thread per tenant, all released together; returns the results
/// in tenant order and the wall time from the release to the end of the last thread.
fn run_threads<T: Send>(
    name: &str,
    count: usize,
    stop: &AtomicBool,
    work: impl Fn(usize) -> Result<T> + Sync,
) -> Result<(Vec<T>, Duration)> {
    let start = Barrier::new(count + 1);
    let (results, wall) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..count)
            .map(|t| {
                let (start, work) = (&start, &work);
                std::thread::Builder::new()
                    .name(format!("{name}-{t}"))
                    .spawn_scoped(s, move || {
                        start.wait();
                        let r = work(t);
                        if r.is_err() {
                            // Let the other threads end early.
                            stop.store(true, Ordering::Relaxed);
                        }
                        r
                    })
                    .expect("spawning a tenant thread")
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let results: Vec<Result<T>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a tenant thread panicked")))
            })
            .collect();
        (results, t0.elapsed())
    });
    Ok((results.into_iter().collect::<Result<Vec<T>>>()?, wall))
}

/// Advances the phase's progress bar every `PROGRESS_EVERY` ops.
struct Progress<'a> {
    bar: &'a ProgressBar,
    pending: u64,
}

impl Progress<'_> {
    #[inline]
    fn tick(&mut self) {
        self.pending += 1;
        if self.pending == PROGRESS_EVERY {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }
}

impl Drop for Progress<'_> {
    fn drop(&mut self) {
        self.bar.inc(self.pending);
    }
}

/// Seed salts of the two phases.
const PUT_SALT: u64 = 0x6d74_7075;
const GET_SALT: u64 = 0x6d74_6765;

fn snapshot(db: &dyn BenchDb, tenants: &[TenantHandle]) -> Result<Vec<Option<NamespaceStats>>> {
    tenants.iter().map(|t| db.tenant_stats(t)).collect()
}

/// The outcome of a phase from its tenants' results.
fn phase_outcome(
    read: bool,
    per_tenant: &[TenantPhase],
    wall: Duration,
    found: u64,
    kv_bytes: u64,
) -> PhaseOutcome {
    let mut latency = Histogram::new();
    for t in per_tenant {
        latency.merge(&t.latency);
    }
    let ops = per_tenant.iter().map(|t| t.ops).sum::<u64>();
    PhaseOutcome {
        workload: if read {
            Workload::ReadRandom
        } else {
            Workload::FillRandom
        },
        name: if read { "get" } else { "put" },
        ops,
        found: read.then_some(found),
        writer_ops: None,
        seconds: wall.as_secs_f64(),
        thread_seconds: per_tenant.iter().map(|t| t.seconds).sum(),
        bytes: if read { found } else { ops } * kv_bytes,
        latency,
        scan: None,
    }
}

/// Runs the multitenant workload on `db`.
pub fn run(db: &dyn BenchDb, cfg: &MtConfig, values: &ValuePool) -> Result<MtRun> {
    let keys = KeyFormat::new(cfg.key_size, cfg.num_per_tenant)?;
    let m = cfg.num_per_tenant;
    let kv_bytes = (cfg.key_size + cfg.value_size) as u64;
    let handles = db.create_tenants(cfg.tenants)?;
    if handles.len() != cfg.tenants {
        bail!("asked for {} tenants, got {}", cfg.tenants, handles.len());
    }
    let stop = AtomicBool::new(false);

    let stats0 = snapshot(db, &handles)?;
    let global0 = db.db_stats();
    let bar = progress_bar("put", m * cfg.tenants as u64);
    let (puts, put_wall) = run_threads("put", cfg.tenants, &stop, |t| {
        let tenant = &handles[t];
        let mut rng = SmallRng::seed_from_u64(mix(mix(cfg.seed, PUT_SALT), t as u64 + 1));
        let mut gen = values.generator(&mut rng);
        let mut key = vec![0u8; keys.size()];
        let mut written = KeySet::new(m);
        let mut hist = Histogram::new();
        let mut progress = Progress {
            bar: &bar,
            pending: 0,
        };
        let t0 = Instant::now();
        let mut ops = 0;
        while ops < m && !stop.load(Ordering::Relaxed) {
            let k = rng.gen_range(0..m);
            keys.write(k, &mut key);
            let value = gen.next();
            let op_start = Instant::now();
            db.put_tenant(tenant, &key, value)?;
            hist.record(op_start.elapsed().as_nanos() as u64);
            written.insert(k);
            ops += 1;
            progress.tick();
        }
        let seconds = t0.elapsed().as_secs_f64();
        let phase = TenantPhase {
            ops,
            seconds,
            latency: hist,
        };
        Ok((phase, written.keys()))
    })?;
    bar.finish_and_clear();
    let put_memory = MemorySample::now();
    if cfg.settle {
        db.settle()?;
    }
    let global1 = db.db_stats();
    let stats1 = snapshot(db, &handles)?;

    let bar = progress_bar("get", cfg.gets_per_tenant * cfg.tenants as u64);
    let (gets, get_wall) = run_threads("get", cfg.tenants, &stop, |t| {
        let tenant = &handles[t];
        let written = &puts[t].1;
        let mut rng = SmallRng::seed_from_u64(mix(mix(cfg.seed, GET_SALT), t as u64 + 1));
        let mut key = vec![0u8; keys.size()];
        let mut hist = Histogram::new();
        let mut progress = Progress {
            bar: &bar,
            pending: 0,
        };
        let mut misses = 0u64;
        let t0 = Instant::now();
        let mut ops = 0;
        while ops < cfg.gets_per_tenant && !written.is_empty() && !stop.load(Ordering::Relaxed) {
            let k = written[rng.gen_range(0..written.len())];
            keys.write(k, &mut key);
            let op_start = Instant::now();
            let found = db.get_tenant(tenant, &key)?;
            hist.record(op_start.elapsed().as_nanos() as u64);
            misses += u64::from(!found);
            ops += 1;
            progress.tick();
        }
        let seconds = t0.elapsed().as_secs_f64();
        let phase = TenantPhase {
            ops,
            seconds,
            latency: hist,
        };
        Ok((phase, misses))
    })?;
    bar.finish_and_clear();
    let get_memory = MemorySample::now();
    let global2 = db.db_stats();
    let stats2 = snapshot(db, &handles)?;

    let mut tenants = Vec::with_capacity(cfg.tenants);
    let mut found = 0;
    let mut stats = stats0.into_iter().zip(stats1).zip(stats2);
    for ((handle, (put, written)), (get, misses)) in handles.into_iter().zip(puts).zip(gets) {
        let ((s0, s1), s2) = stats.next().expect("a snapshot per tenant");
        found += get.ops - misses;
        tenants.push(TenantResult {
            handle,
            put,
            get,
            distinct_keys: written.len() as u64,
            get_misses: misses,
            stats: match (s0, s1, s2) {
                (Some(a), Some(b), Some(c)) => Some([a, b, c]),
                _ => None,
            },
        });
    }
    let delta = |b: &Option<_>, a: &Option<_>| match (b, a) {
        (Some(b), Some(a)) => Some(stats_delta(b, a)),
        _ => None,
    };
    let put_phases: Vec<TenantPhase> = tenants.iter().map(|t| t.put.clone()).collect();
    let get_phases: Vec<TenantPhase> = tenants.iter().map(|t| t.get.clone()).collect();
    Ok(MtRun {
        put: PhaseReport {
            outcome: phase_outcome(false, &put_phases, put_wall, 0, kv_bytes),
            delta: delta(&global0, &global1),
        },
        get: PhaseReport {
            outcome: phase_outcome(true, &get_phases, get_wall, found, kv_bytes),
            delta: delta(&global1, &global2),
        },
        tenants,
        put_memory,
        get_memory,
    })
}

#[cfg(test)]
mod tests {
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
        use crate::engine::{self, Engine, OpenConfig, StorageArg};
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(3, 2_000);
        cfg.layout = LayoutArg::Baseline;
        cfg.gets_per_tenant = 500;
        let open = OpenConfig {
            path: dir.path().to_path_buf(),
            storage: StorageArg::Posix,
            cache_bytes: 1 << 20,
            mmap_reads: true,
            sync: false,
            tenants: 3,
            layout: LayoutArg::Baseline,
            profile: None,
            device: None,
            admin_secret: None,
            device_prefetch_degree: None,
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
}
