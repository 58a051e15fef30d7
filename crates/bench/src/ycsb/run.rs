//! One YCSB workload on one key space (a database, or one tenant of it): the load phase
//! (`--record-count` records, in hashed key order) and the run phase (`--operation-count`
//! operations of the workload's mix), each by `--threads` threads, timed per operation.

use super::distribution::Chooser;
use super::workload::{record_key, Distribution, Op, Workload};
use crate::histogram::Histogram;
use crate::workload::{mix, ValuePool};
use anyhow::{bail, Context, Result};
use cerberus_bench_engines::{BenchDb, CursorOptions, TenantHandle};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// What a run of one workload is asked to do.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub workload: Workload,
    pub record_count: u64,
    pub operation_count: u64,
    pub threads: usize,
    /// Bytes of a record: field count times field length.
    pub record_bytes: usize,
    pub max_scan_length: usize,
    /// Overrides the workload's request distribution.
    pub distribution: Option<Distribution>,
    pub seed: u64,
}

/// Count and latencies of one operation type.
#[derive(Clone, Debug, Default)]
pub struct OpFigures {
    pub count: u64,
    pub latency: Histogram,
}

/// What a phase measured: its wall time and each operation type's figures.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub seconds: f64,
    pub ops: [OpFigures; 5],
    /// Reads (and the reads of read-modify-writes) that did not find their record.
    pub read_misses: u64,
    /// Entries the scans read.
    pub scanned: u64,
}

impl Figures {
    pub fn total(&self) -> u64 {
        self.ops.iter().map(|o| o.count).sum()
    }

    pub fn ops_per_sec(&self, count: u64) -> f64 {
        if self.seconds > 0.0 {
            count as f64 / self.seconds
        } else {
            0.0
        }
    }

    fn merge(&mut self, other: &Figures) {
        for (a, b) in self.ops.iter_mut().zip(&other.ops) {
            a.count += b.count;
            a.latency.merge(&b.latency);
        }
        self.read_misses += other.read_misses;
        self.scanned += other.scanned;
    }

    fn record(&mut self, op: Op, since: Instant) {
        let o = &mut self.ops[op.index()];
        o.count += 1;
        o.latency.record(since.elapsed().as_nanos() as u64);
    }
}

/// A key space the workload runs on: the database's, or a tenant's.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub db: &'a dyn BenchDb,
    pub tenant: Option<&'a TenantHandle>,
}

impl Target<'_> {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        match self.tenant {
            Some(t) => self.db.put_tenant(t, key, value)?,
            None => self.db.put(key, value)?,
        }
        Ok(())
    }

    pub fn get(&self, key: &[u8]) -> Result<bool> {
        Ok(match self.tenant {
            Some(t) => self.db.get_tenant(t, key)?,
            None => self.db.get(key)?,
        })
    }

    /// Reads up to `len` entries from the first key at or after `start`; how many it read.
    fn scan(&self, start: &[u8], len: usize) -> Result<u64> {
        if self.tenant.is_some() {
            bail!("scans of a tenant's key space are not supported");
        }
        let opts = CursorOptions {
            scan_length: len,
            whole_scan: true,
            ..CursorOptions::default()
        };
        let mut cursor = self.db.cursor(&opts)?;
        cursor.seek(start)?;
        let mut n = 0;
        while n < len as u64 {
            match cursor.next()? {
                Some((_, v)) => std::hint::black_box(v.len()),
                None => break,
            };
            n += 1;
        }
        Ok(n)
    }
}

/// The records inserted so far: the next record number to insert, and how many records,
/// from 0, are all written (YCSB's acknowledged counter), which reads choose below.
pub struct Records {
    next: AtomicU64,
    done: AtomicU64,
    /// Inserted record numbers above `done`, written before a smaller one.
    pending: Mutex<BTreeSet<u64>>,
}

impl Records {
    pub fn new(loaded: u64) -> Records {
        Records {
            next: AtomicU64::new(loaded),
            done: AtomicU64::new(loaded),
            pending: Mutex::new(BTreeSet::new()),
        }
    }

    /// Records 0 up to this are all written.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Acquire)
    }

    fn claim(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn acknowledge(&self, n: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.insert(n);
        let mut done = self.done.load(Ordering::Acquire);
        while pending.remove(&done) {
            done += 1;
        }
        self.done.store(done, Ordering::Release);
    }
}

/// Runs `per_thread(thread, ops)` on `threads` threads sharing `total` operations, and merges
/// their figures; the wall time is the whole phase's.
fn threaded(
    threads: usize,
    total: u64,
    per_thread: impl Fn(usize, u64) -> Result<Figures> + Sync,
) -> Result<Figures> {
    let start = Instant::now();
    let parts: Vec<Result<Figures>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let ops = total / threads as u64 + u64::from((t as u64) < total % threads as u64);
                let f = &per_thread;
                s.spawn(move || f(t, ops))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| bail!("a YCSB thread panicked")))
            .collect()
    });
    let mut out = Figures {
        seconds: start.elapsed().as_secs_f64(),
        ..Figures::default()
    };
    for p in parts {
        out.merge(&p?);
    }
    Ok(out)
}

/// Inserts records `0..record_count`, thread `t` taking every `threads`-th one from `t`.
pub fn load(target: Target<'_>, cfg: &Config, values: &ValuePool) -> Result<Figures> {
    let threads = cfg.threads;
    threaded(threads, cfg.record_count, |t, ops| {
        let mut rng = SmallRng::seed_from_u64(mix(cfg.seed, t as u64));
        let mut gen = values.generator(&mut rng);
        let mut f = Figures::default();
        for i in 0..ops {
            let n = i * threads as u64 + t as u64;
            let start = Instant::now();
            target.put(&record_key(n), gen.next())?;
            f.record(Op::Insert, start);
        }
        Ok(f)
    })
}

/// The workload's `operation_count` operations, on the records `load` wrote.
pub fn run(
    target: Target<'_>,
    cfg: &Config,
    values: &ValuePool,
    records: &Records,
) -> Result<Figures> {
    let dist = cfg.distribution.unwrap_or(cfg.workload.distribution());
    let chooser = dist.chooser(cfg.record_count);
    threaded(cfg.threads, cfg.operation_count, |t, ops| {
        let mut rng = SmallRng::seed_from_u64(mix(cfg.seed ^ 0x7963_7362, t as u64));
        let mut gen = values.generator(&mut rng);
        let mut chooser: Chooser = chooser.clone();
        let mut f = Figures::default();
        for _ in 0..ops {
            let op = cfg.workload.op(rng.gen_range(0..100));
            let start = Instant::now();
            if op == Op::Insert {
                let n = records.claim();
                target.put(&record_key(n), gen.next())?;
                records.acknowledge(n);
                f.record(op, start);
                continue;
            }
            let key = record_key(chooser.next(&mut rng, records.done()));
            match op {
                Op::Read | Op::Rmw => {
                    f.read_misses += u64::from(!target.get(&key)?);
                    if op == Op::Rmw {
                        target.put(&key, gen.next())?;
                    }
                }
                Op::Update => target.put(&key, gen.next())?,
                Op::Scan => {
                    let len = rng.gen_range(1..=cfg.max_scan_length.max(1));
                    f.scanned += target.scan(&key, len)?;
                }
                Op::Insert => unreachable!("inserts are done above"),
            }
            f.record(op, start);
        }
        Ok(f)
    })
}

/// One workload's load and run on one key space.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub load: Figures,
    pub run: Figures,
    /// Records after the run: the loaded ones and the run's inserts.
    pub records: u64,
}

/// Loads every target, all at once, then runs the workload on every target, all at once
/// (each target with its own `cfg.threads` threads).
pub fn run_all(targets: &[Target<'_>], cfg: &Config, values: &ValuePool) -> Result<Vec<Outcome>> {
    let loads = each(targets, |t| load(*t, cfg, values)).context("loading")?;
    let records: Vec<Records> = targets
        .iter()
        .map(|_| Records::new(cfg.record_count))
        .collect();
    let pairs: Vec<(Target<'_>, &Records)> = targets.iter().copied().zip(&records).collect();
    let runs = each(&pairs, |(t, r)| run(*t, cfg, values, r)).context("running")?;
    Ok(loads
        .into_iter()
        .zip(runs)
        .zip(&records)
        .map(|((load, run), r)| Outcome {
            load,
            run,
            records: r.done(),
        })
        .collect())
}

/// `f` of every item, each on its own thread (one: on this thread).
fn each<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R> + Sync) -> Result<Vec<R>> {
    if let [one] = items {
        return Ok(vec![f(one)?]);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = items.iter().map(|i| s.spawn(|| f(i))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| bail!("a tenant's thread panicked"))
            })
            .collect()
    })
}
