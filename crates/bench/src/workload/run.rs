//! Running a phase: each thread's loop of generated keys and values against the engine,
//! timed, and the phases that are one engine call (flush, compact) or their own runner
//! (seekrandom).

use super::{
    mix, phase_seed, progress_bar, split, BenchConfig, KeyFormat, PhaseOutcome, Progress,
    ValuePool, Workload,
};
use crate::histogram::Histogram;
use anyhow::{anyhow, Result};
use cerberus_bench_engines::BenchDb;
use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What one thread does in a phase.
#[derive(Clone, Copy, Debug)]
enum Job {
    /// Put keys start..end in order.
    SeqWrite { start: u64, end: u64 },
    /// Put `count` random keys.
    RandomWrite { count: u64 },
    /// Get `count` random keys.
    RandomRead { count: u64 },
    /// Put random keys until told to stop (not measured).
    BackgroundWrite,
}

impl Job {
    /// The key of the job's operation `i`: in order, or random among `num`.
    fn key(self, i: u64, rng: &mut SmallRng, num: u64) -> u64 {
        match self {
            Job::SeqWrite { start, .. } => start + i,
            _ => rng.gen_range(0..num),
        }
    }
}

#[derive(Default)]
struct ThreadResult {
    ops: u64,
    found: u64,
    bytes: u64,
    elapsed: Duration,
    latency: Option<Histogram>,
}

/// Runs the key/value generator and timing loop of one thread.
#[allow(clippy::too_many_arguments)]
fn run_job(
    db: &dyn BenchDb,
    job: Job,
    config: &BenchConfig,
    keys: KeyFormat,
    values: &ValuePool,
    seed: u64,
    start: &Barrier,
    stop: &AtomicBool,
    progress: &ProgressBar,
) -> Result<ThreadResult> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut gen = values.generator(&mut rng);
    let mut key = vec![0u8; keys.size()];
    let kv_bytes = (config.key_size + config.value_size) as u64;
    let mut out = ThreadResult::default();
    let measured = !matches!(job, Job::BackgroundWrite);
    let mut hist = Histogram::new();
    let count = match job {
        Job::SeqWrite { start, end } => end - start,
        Job::RandomWrite { count } | Job::RandomRead { count } => count,
        Job::BackgroundWrite => u64::MAX,
    };
    start.wait();
    let t0 = Instant::now();
    let mut bar = Progress::new(progress);
    let mut i = 0u64;
    let pipeline = if measured { config.pipeline.max(1) } else { 1 };
    let mut batch_keys: Vec<Vec<u8>> = Vec::new();
    let mut batch_values: Vec<Vec<u8>> = Vec::new();
    let result = (|| -> Result<()> {
        while i < count {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let n = pipeline.min((count - i) as usize);
            if n > 1 {
                batch_keys.resize_with(n, || vec![0u8; keys.size()]);
                for (j, key) in batch_keys[..n].iter_mut().enumerate() {
                    keys.write(job.key(i + j as u64, &mut rng, config.num), key);
                }
                let refs: Vec<&[u8]> = batch_keys[..n].iter().map(Vec::as_slice).collect();
                let op_start = Instant::now();
                if let Job::RandomRead { .. } = job {
                    let found = db.get_many(&refs)?;
                    out.found += found;
                    out.bytes += found * kv_bytes;
                } else {
                    batch_values.resize_with(n, Vec::new);
                    for v in &mut batch_values[..n] {
                        v.clear();
                        v.extend_from_slice(gen.next());
                    }
                    let pairs: Vec<(&[u8], &[u8])> = refs
                        .iter()
                        .zip(&batch_values[..n])
                        .map(|(k, v)| (*k, v.as_slice()))
                        .collect();
                    db.put_many(&pairs)?;
                    out.bytes += n as u64 * kv_bytes;
                }
                // Every op of a batch waited as long as the batch (as redis-benchmark -P).
                let ns = op_start.elapsed().as_nanos() as u64;
                for _ in 0..n {
                    hist.record(ns);
                }
                i += n as u64;
                bar.add(n as u64);
                continue;
            }
            keys.write(job.key(i, &mut rng, config.num), &mut key);
            if let Job::RandomRead { .. } = job {
                let op_start = Instant::now();
                let found = db.get(&key)?;
                hist.record(op_start.elapsed().as_nanos() as u64);
                if found {
                    out.found += 1;
                    out.bytes += kv_bytes;
                }
            } else {
                let value = gen.next();
                let op_start = Instant::now();
                db.put(&key, value)?;
                if measured {
                    hist.record(op_start.elapsed().as_nanos() as u64);
                }
                out.bytes += kv_bytes;
            }
            i += 1;
            if measured {
                bar.add(1);
            }
        }
        Ok(())
    })();
    out.elapsed = t0.elapsed();
    out.ops = i;
    drop(bar);
    if measured {
        out.latency = Some(hist);
    }
    if result.is_err() {
        // Let the other threads end early.
        stop.store(true, Ordering::Relaxed);
    }
    result.map(|()| out)
}

/// Runs phase number `index` of the list on `db`.
pub fn run_phase(
    db: &dyn BenchDb,
    workload: Workload,
    index: usize,
    config: &BenchConfig,
    values: &ValuePool,
) -> Result<PhaseOutcome> {
    let keys = KeyFormat::new(config.key_size, config.num)?;
    match workload {
        Workload::Flush | Workload::Compact | Workload::WaitForCompaction => {
            return one_call(db, workload)
        }
        Workload::SeekRandom => {
            let scan = config
                .scan
                .as_ref()
                .ok_or_else(|| anyhow!("seekrandom has no scan settings"))?;
            return super::seek::run(db, index, config, scan);
        }
        _ => {}
    }

    let shares = split(config.num, config.threads);
    let mut jobs: Vec<Job> = shares
        .iter()
        .map(|&(start, end)| match workload {
            Workload::FillSeq => Job::SeqWrite { start, end },
            Workload::FillRandom | Workload::Overwrite => Job::RandomWrite { count: end - start },
            _ => Job::RandomRead { count: end - start },
        })
        .collect();
    let measured_threads = jobs.len();
    if workload == Workload::ReadWhileWriting {
        jobs.push(Job::BackgroundWrite);
    }

    let progress = progress_bar(workload.name(), config.num);
    let start = Barrier::new(jobs.len() + 1);
    let readers_done = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let phase_seed = phase_seed(config.seed, workload, index);

    let (results, wall, writer) = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(jobs.len());
        for (t, &job) in jobs.iter().enumerate() {
            let seed = mix(phase_seed, t as u64 + 1);
            let (start, stop, readers_done, progress) = (&start, &stop, &readers_done, &progress);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("{}-{t}", workload.name()))
                    .spawn_scoped(s, move || {
                        let stop = if matches!(job, Job::BackgroundWrite) {
                            readers_done
                        } else {
                            stop
                        };
                        run_job(db, job, config, keys, values, seed, start, stop, progress)
                    })
                    .expect("spawning a worker thread"),
            );
        }
        start.wait();
        let t0 = Instant::now();
        let mut writer_handle = None;
        if handles.len() > measured_threads {
            writer_handle = handles.pop();
        }
        let results: Vec<Result<ThreadResult>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a worker thread panicked")))
            })
            .collect();
        let wall = t0.elapsed();
        readers_done.store(true, Ordering::Relaxed);
        let writer = writer_handle.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(anyhow!("the writer thread panicked")))
        });
        (results, wall, writer)
    });
    progress.finish_and_clear();

    outcome_of(workload, wall, results, writer)
}

/// Flush, compact or settle: one engine call, timed.
fn one_call(db: &dyn BenchDb, workload: Workload) -> Result<PhaseOutcome> {
    let t0 = Instant::now();
    match workload {
        Workload::Flush => db.flush()?,
        Workload::WaitForCompaction => db.settle()?,
        _ => db.compact()?,
    }
    let elapsed = t0.elapsed();
    let mut latency = Histogram::new();
    latency.record(elapsed.as_nanos() as u64);
    let seconds = elapsed.as_secs_f64();
    Ok(PhaseOutcome {
        ops: 1,
        thread_seconds: seconds,
        latency,
        ..PhaseOutcome::new(workload, workload.name(), seconds, None)
    })
}

/// The phase's outcome from its threads' results (and the background writer's, if any).
fn outcome_of(
    workload: Workload,
    wall: Duration,
    results: Vec<Result<ThreadResult>>,
    writer: Option<Result<ThreadResult>>,
) -> Result<PhaseOutcome> {
    let found = workload.is_read().then_some(0);
    let mut outcome = PhaseOutcome::new(workload, workload.name(), wall.as_secs_f64(), found);
    for r in results {
        let r = r?;
        outcome.ops += r.ops;
        outcome.bytes += r.bytes;
        outcome.thread_seconds += r.elapsed.as_secs_f64();
        if let Some(found) = outcome.found.as_mut() {
            *found += r.found;
        }
        if let Some(h) = r.latency {
            outcome.latency.merge(&h);
        }
    }
    if let Some(w) = writer {
        outcome.writer_ops = Some(w?.ops);
    }
    Ok(outcome)
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// An in-memory engine for tests of the runners.
    #[derive(Default)]
    pub(crate) struct MemDb {
        pub(crate) map: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
        /// Tenants' records by (tenant id, key).
        pub(crate) tenant_map: Mutex<TenantMap>,
        /// Loses the tenant puts of keys ending with this byte (to test that misses count).
        pub(crate) drop_ending: Option<u8>,
    }

    pub(crate) type TenantMap = HashMap<(u32, Vec<u8>), Vec<u8>>;

    impl BenchDb for MemDb {
        fn put(&self, key: &[u8], value: &[u8]) -> cerberus_bench_engines::Result<()> {
            self.map
                .lock()
                .unwrap()
                .insert(key.to_vec(), value.to_vec());
            Ok(())
        }
        fn get(&self, key: &[u8]) -> cerberus_bench_engines::Result<bool> {
            Ok(self.map.lock().unwrap().contains_key(key))
        }
        fn flush(&self) -> cerberus_bench_engines::Result<()> {
            Ok(())
        }
        fn compact(&self) -> cerberus_bench_engines::Result<()> {
            Ok(())
        }
        fn stats_json(&self) -> serde_json::Value {
            serde_json::json!({ "keys": self.map.lock().unwrap().len() })
        }
        fn close(&self) -> cerberus_bench_engines::Result<()> {
            Ok(())
        }
        fn create_tenants(
            &self,
            n: usize,
        ) -> cerberus_bench_engines::Result<Vec<cerberus_bench_engines::TenantHandle>> {
            Ok((0..n)
                .map(|index| cerberus_bench_engines::TenantHandle {
                    index,
                    id: 100 + index as u32,
                    name: cerberus_bench_engines::TenantHandle::name_of(index),
                })
                .collect())
        }
        fn put_tenant(
            &self,
            tenant: &cerberus_bench_engines::TenantHandle,
            key: &[u8],
            value: &[u8],
        ) -> cerberus_bench_engines::Result<()> {
            if self.drop_ending.is_some() && key.last() == self.drop_ending.as_ref() {
                return Ok(());
            }
            self.tenant_map
                .lock()
                .unwrap()
                .insert((tenant.id, key.to_vec()), value.to_vec());
            Ok(())
        }
        fn get_tenant(
            &self,
            tenant: &cerberus_bench_engines::TenantHandle,
            key: &[u8],
        ) -> cerberus_bench_engines::Result<bool> {
            Ok(self
                .tenant_map
                .lock()
                .unwrap()
                .contains_key(&(tenant.id, key.to_vec())))
        }
    }

    pub(crate) fn config(num: u64, threads: usize) -> BenchConfig {
        BenchConfig {
            num,
            key_size: 16,
            value_size: 100,
            threads,
            pipeline: 1,
            seed: 7,
            compression_ratio: 0.5,
            scan: None,
        }
    }

    #[test]
    fn fillseq_then_readrandom_finds_everything() {
        let db = MemDb::default();
        let cfg = config(10_000, 3);
        let values = ValuePool::new(cfg.value_size, 0.5, 1);
        let fill = run_phase(&db, Workload::FillSeq, 0, &cfg, &values).unwrap();
        assert_eq!(fill.ops, 10_000);
        assert_eq!(fill.latency.count(), 10_000);
        assert_eq!(fill.found, None);
        assert_eq!(db.map.lock().unwrap().len(), 10_000);
        let f = KeyFormat::new(16, 10_000).unwrap();
        assert_eq!(db.map.lock().unwrap()[&f.key(9_999)].len(), 100);
        let read = run_phase(&db, Workload::ReadRandom, 1, &cfg, &values).unwrap();
        assert_eq!(read.ops, 10_000);
        assert_eq!(read.found, Some(10_000));
        assert_eq!(read.bytes, 10_000 * 116);
        assert!(read.ops_per_sec() > 0.0);
    }

    #[test]
    fn fillrandom_repeats_keys_and_readwhilewriting_writes_meanwhile() {
        let db = MemDb::default();
        let cfg = config(20_000, 2);
        let values = ValuePool::new(cfg.value_size, 0.5, 1);
        let fill = run_phase(&db, Workload::FillRandom, 0, &cfg, &values).unwrap();
        assert_eq!(fill.ops, 20_000);
        // About 1 - 1/e of the key space gets written.
        let distinct = db.map.lock().unwrap().len() as f64 / 20_000.0;
        assert!((distinct - 0.632).abs() < 0.02, "{distinct}");
        let rww = run_phase(&db, Workload::ReadWhileWriting, 1, &cfg, &values).unwrap();
        assert_eq!(rww.ops, 20_000);
        assert!(rww.writer_ops.is_some());
        let found = rww.found.unwrap() as f64 / 20_000.0;
        assert!(found > 0.6, "{found}");
    }

    #[test]
    fn a_read_run_does_not_replay_the_fill_run_keys() {
        // fillrandom in one run, readrandom in the next on the same database: both phase 0.
        let db = MemDb::default();
        let cfg = config(20_000, 1);
        let values = ValuePool::new(cfg.value_size, 0.5, 1);
        run_phase(&db, Workload::FillRandom, 0, &cfg, &values).unwrap();
        let read = run_phase(&db, Workload::ReadRandom, 0, &cfg, &values).unwrap();
        let found = read.found.unwrap() as f64 / 20_000.0;
        assert!((found - 0.632).abs() < 0.02, "{found}");
    }

    #[test]
    fn phases_are_deterministic_for_a_seed() {
        let run = || {
            let db = MemDb::default();
            let cfg = config(5_000, 1);
            let values = ValuePool::new(cfg.value_size, 0.5, cfg.seed);
            run_phase(&db, Workload::FillRandom, 0, &cfg, &values).unwrap();
            let mut m: Vec<_> = db.map.into_inner().unwrap().into_iter().collect();
            m.sort();
            m
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn keys_are_fixed_width_zero_padded_decimal() {
        let f = KeyFormat::new(16, 1_000_000).unwrap();
        assert_eq!(f.key(0), b"0000000000000000");
        assert_eq!(f.key(42), b"0000000000000042");
        assert_eq!(f.key(999_999), b"0000000000999999");
        let f = KeyFormat::new(6, 1_000_000).unwrap();
        assert_eq!(f.key(999_999), b"999999");
        assert_eq!(f.key(7), b"000007");
    }

    #[test]
    fn key_order_is_numeric_order() {
        let f = KeyFormat::new(16, 100_000).unwrap();
        let mut prev = f.key(0);
        for i in 1..100_000 {
            let k = f.key(i);
            assert!(k > prev, "key {i}");
            prev = k;
        }
    }

    #[test]
    fn key_size_too_small_is_an_error() {
        assert!(KeyFormat::new(6, 1_000_001).is_err());
        assert!(KeyFormat::new(6, 1_000_000).is_ok());
        assert!(KeyFormat::new(1, 10).is_ok());
        assert!(KeyFormat::new(1, 0).is_ok());
        assert!(KeyFormat::new(20, u64::MAX).is_ok());
    }

    #[test]
    fn split_covers_everything() {
        assert_eq!(split(10, 3), vec![(0, 4), (4, 7), (7, 10)]);
        assert_eq!(split(2, 4), vec![(0, 1), (1, 2), (2, 2), (2, 2)]);
        assert_eq!(split(5, 1), vec![(0, 5)]);
    }

    #[test]
    fn values_have_the_size_and_compressibility_asked_for() {
        let pool = ValuePool::new(1000, 0.5, 1);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut g = pool.generator(&mut rng);
        for _ in 0..5000 {
            assert_eq!(g.next().len(), 1000);
        }
        // Half of each 100-byte piece repeats the other half.
        let d = &pool.data[..100];
        assert_eq!(d[..50], d[50..]);
        let random = ValuePool::new(100, 1.0, 1);
        assert_ne!(random.data[..50], random.data[50..100]);
    }

    #[test]
    fn workload_list_parses() {
        assert_eq!(
            Workload::parse_list("fillseq, readrandom,READWHILEWRITING").unwrap(),
            vec![
                Workload::FillSeq,
                Workload::ReadRandom,
                Workload::ReadWhileWriting
            ]
        );
        assert!(Workload::parse_list("fillrandom,bogus").is_err());
        assert!(Workload::parse_list(",").is_err());
    }

    #[test]
    fn waitforcompaction_is_one_call_to_settle_between_phases() {
        let db = MemDb::default();
        let cfg = config(2_000, 1);
        let values = ValuePool::new(cfg.value_size, 0.5, 1);
        let list = Workload::parse_list("fillrandom,waitforcompaction,readrandom").unwrap();
        assert_eq!(list[1], Workload::WaitForCompaction);
        run_phase(&db, list[0], 0, &cfg, &values).unwrap();
        let settle = run_phase(&db, list[1], 1, &cfg, &values).unwrap();
        assert_eq!(settle.ops, 1);
        assert!(settle.found.is_none());
        let read = run_phase(&db, list[2], 2, &cfg, &values).unwrap();
        assert!(read.found.unwrap() > 1_000);
    }
}
