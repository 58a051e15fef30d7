//! The `multitenant` workload: one database, `tenants` namespaces, one thread per tenant.
//!
//! Phase "put": all threads start together; each puts `num_per_tenant` uniformly random keys
//! of `0..num_per_tenant` (as fillrandom) into its own namespace. Phase "get": all threads
//! start together again; each makes `gets_per_tenant` gets of keys picked uniformly among
//! those it wrote, so every get should find its key (a miss is counted as an error). The
//! namespace counters of every tenant are snapshotted before and after each phase, and the
//! process's memory at the end of each.

mod cost_model;
pub(crate) mod figures;
#[cfg(test)]
mod fixtures;
pub mod json;
pub mod report;
mod summary;

use crate::histogram::Histogram;
use crate::memory::MemorySample;
use crate::report::measures::stats_delta;
use crate::report::PhaseReport;
use crate::workload::{mix, progress_bar, KeyFormat, PhaseOutcome, Progress, ValuePool, Workload};
use anyhow::{anyhow, bail, Result};
use cerberus_bench_engines::profile::{ProfileArg, SizeProfile};
use cerberus_bench_engines::{BenchDb, LayoutArg, TenantHandle};
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
    /// The tables a get of its keys consults at the end of the run (Cerberus only).
    pub get_path: Option<MeanGetPath>,
}

/// Keys of a tenant whose get paths [`MeanGetPath`] averages: spread over what it wrote.
const GET_PATH_SAMPLE: usize = 1_000;

/// The tables a get of a tenant's key would consult, level by level (L0 first), and the
/// tenant's runs: the mean over up to [`GET_PATH_SAMPLE`] of the keys it wrote.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MeanGetPath {
    pub levels: Vec<f64>,
    pub runs: f64,
}

/// [`MeanGetPath`] over `written` (every so many), `None` if the engine cannot tell.
fn mean_get_path(
    db: &dyn BenchDb,
    tenant: &TenantHandle,
    keys: &KeyFormat,
    written: &[u64],
) -> Result<Option<MeanGetPath>> {
    let mut key = vec![0u8; keys.size()];
    let mut sum = MeanGetPath::default();
    let step = written.len().div_ceil(GET_PATH_SAMPLE).max(1);
    let mut n = 0;
    for &k in written.iter().step_by(step) {
        keys.write(k, &mut key);
        let Some(path) = db.tenant_get_path(tenant, &key)? else {
            return Ok(None);
        };
        sum.levels
            .resize(sum.levels.len().max(path.levels.len()), 0.0);
        for (s, &t) in sum.levels.iter_mut().zip(&path.levels) {
            *s += t as f64;
        }
        sum.runs += path.runs as f64;
        n += 1;
    }
    if n == 0 {
        return Ok(None);
    }
    sum.levels.iter_mut().for_each(|s| *s /= n as f64);
    sum.runs /= n as f64;
    Ok(Some(sum))
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
        row_cache_hits: d(after.row_cache_hits, before.row_cache_hits),
        row_cache_misses: d(after.row_cache_misses, before.row_cache_misses),
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
        consolidations: d(after.consolidations, before.consolidations),
        consolidation_bytes_written: d(
            after.consolidation_bytes_written,
            before.consolidation_bytes_written,
        ),
        space: after.space,
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
pub(crate) fn run_threads<T: Send>(
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

/// Seed salts of the two phases.
const PUT_SALT: u64 = 0x6d74_7075;
const GET_SALT: u64 = 0x6d74_6765;

fn snapshot(db: &dyn BenchDb, tenants: &[TenantHandle]) -> Result<Vec<Option<NamespaceStats>>> {
    Ok(tenants
        .iter()
        .map(|t| db.tenant_stats(t))
        .collect::<Result<_, _>>()?)
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
    let (workload, name) = match read {
        true => (Workload::ReadRandom, "get"),
        false => (Workload::FillRandom, "put"),
    };
    PhaseOutcome {
        ops,
        thread_seconds: per_tenant.iter().map(|t| t.seconds).sum(),
        bytes: if read { found } else { ops } * kv_bytes,
        latency,
        ..PhaseOutcome::new(workload, name, wall.as_secs_f64(), read.then_some(found))
    }
}

/// One tenant's timed loop: `count` calls of `op` (fewer if `stop` is set), each returning
/// how long its engine call took.
pub(crate) fn tenant_loop(
    bar: &ProgressBar,
    stop: &AtomicBool,
    count: u64,
    mut op: impl FnMut() -> Result<Duration>,
) -> Result<TenantPhase> {
    let mut latency = Histogram::new();
    let mut progress = Progress::new(bar);
    let t0 = Instant::now();
    let mut ops = 0;
    while ops < count && !stop.load(Ordering::Relaxed) {
        latency.record(op()?.as_nanos() as u64);
        ops += 1;
        progress.add(1);
    }
    Ok(TenantPhase {
        ops,
        seconds: t0.elapsed().as_secs_f64(),
        latency,
    })
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
        let mut rng = SmallRng::seed_from_u64(mix(mix(cfg.seed, PUT_SALT), t as u64 + 1));
        let mut gen = values.generator(&mut rng);
        let mut key = vec![0u8; keys.size()];
        let mut written = KeySet::new(m);
        let phase = tenant_loop(&bar, &stop, m, || {
            let k = rng.gen_range(0..m);
            keys.write(k, &mut key);
            let value = gen.next();
            let op_start = Instant::now();
            db.put_tenant(&handles[t], &key, value)?;
            written.insert(k);
            Ok(op_start.elapsed())
        })?;
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
        let written = &puts[t].1;
        let mut rng = SmallRng::seed_from_u64(mix(mix(cfg.seed, GET_SALT), t as u64 + 1));
        let mut key = vec![0u8; keys.size()];
        let mut misses = 0u64;
        let count = if written.is_empty() {
            0
        } else {
            cfg.gets_per_tenant
        };
        let phase = tenant_loop(&bar, &stop, count, || {
            let k = written[rng.gen_range(0..written.len())];
            keys.write(k, &mut key);
            let op_start = Instant::now();
            let found = db.get_tenant(&handles[t], &key)?;
            misses += u64::from(!found);
            Ok(op_start.elapsed())
        })?;
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
        let get_path = mean_get_path(db, &handle, &keys, &written)?;
        tenants.push(TenantResult {
            get_path,
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
mod tests;
