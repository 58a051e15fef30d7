//! `seekrandom`, as db_bench's: seeks to uniformly random keys of the key space, each followed
//! by reading the entries from there on in key order (`--scan-length` of them, the one the
//! seek found included), on the database the phases before it filled.
//!
//! Each seek makes a new cursor (an iterator at the database as it is then), as db_bench makes
//! a new iterator per seek without `--use_tailing_iterator`, and an op is: make the cursor,
//! seek, read the entries, drop the cursor. Besides the op's latency it times the seek (cursor
//! made, seek, first entry read: `seek_latency_us`) and each further entry (`next_latency_us`).

#[cfg(test)]
mod device_tests;
#[cfg(test)]
pub(crate) mod tests;

use crate::histogram::Histogram;
use crate::workload::scan::{ScanConfig, ScanOutcome};
use crate::workload::{
    mix, phase_seed, progress_bar, split, BenchConfig, KeyFormat, PhaseOutcome, Progress, Workload,
};
use anyhow::{anyhow, bail, Result};
use cerberus_bench_engines::{BenchDb, CursorOptions};
use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Seeks of a seekrandom phase when `--seeks` is not given.
pub const DEFAULT_SEEKS: u64 = 1000;
/// Entries read per seek when `--scan-length` is not given.
pub const DEFAULT_SCAN_LENGTH: usize = 100;
/// The largest `--prefetch-degree` accepted (each degree is a value held ahead).
pub const MAX_PREFETCH_DEGREE: usize = 4096;

fn prefetch_help() -> String {
    format!(
        "seekrandom on cerberus: values read ahead of the scan through the engine's prefetch \
         threads (ReadOptions::prefetch_degree; 0 reads each value when its entry is read); \
         other engines ignore it [default: {}, the engine's DEFAULT_PREFETCH_DEGREE]",
        cerberus_engine::DEFAULT_PREFETCH_DEGREE
    )
}

/// The flags of seekrandom (flattened into the command line).
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct SeekArgs {
    /// seekrandom: seeks, each to a uniformly random key of 0..num, split among --threads
    /// as readrandom's gets [default: 1000].
    #[arg(long)]
    pub seeks: Option<u64>,

    /// seekrandom: entries read from each seek on, the one the seek found included (fewer at
    /// the end of the key space) [default: 100].
    #[arg(long)]
    pub scan_length: Option<usize>,

    /// seekrandom: read keys only (Cerberus reads nothing from its value log; RocksDB's
    /// value is not looked at).
    #[arg(long)]
    pub keys_only: bool,

    #[arg(long, value_name = "D", help = prefetch_help())]
    pub prefetch_degree: Option<usize>,

    /// seekrandom on cerberus: read the next data block and the next table ahead once a
    /// scan walks past a block (ReadOptions::index_prefetch) [default: on]; other engines
    /// ignore it.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub index_prefetch: Option<bool>,

    /// seekrandom on rocksdb: bytes read ahead of the iterator in each table file
    /// (ReadOptions::readahead_size) [default: 0, RocksDB's automatic readahead]; other
    /// engines ignore it.
    #[arg(long, value_name = "BYTES")]
    pub readahead_bytes: Option<usize>,
}

pub(crate) fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("expected on or off, not {s:?}")),
    }
}

impl SeekArgs {
    /// Whether any of these flags was given.
    pub fn given(&self) -> bool {
        *self != SeekArgs::default()
    }

    /// What seekrandom does, when `workloads` has it; refuses these flags without it.
    pub fn config(&self, workloads: &[Workload]) -> Result<Option<ScanConfig>> {
        if !workloads.contains(&Workload::SeekRandom) {
            if self.given() {
                bail!(
                    "--seeks, --scan-length, --keys-only, --prefetch-degree, \
                     --index-prefetch and --readahead-bytes are for the seekrandom workload"
                );
            }
            return Ok(None);
        }
        let config = ScanConfig {
            seeks: self.seeks.unwrap_or(DEFAULT_SEEKS),
            scan_length: self.scan_length.unwrap_or(DEFAULT_SCAN_LENGTH),
            keys_only: self.keys_only,
            prefetch_degree: self
                .prefetch_degree
                .unwrap_or(cerberus_engine::DEFAULT_PREFETCH_DEGREE),
            index_prefetch: self.index_prefetch.unwrap_or(true),
            readahead_bytes: self.readahead_bytes.unwrap_or(0),
        };
        if config.seeks == 0 {
            bail!("--seeks must be at least 1");
        }
        if config.scan_length == 0 {
            bail!("--scan-length must be at least 1");
        }
        if config.prefetch_degree > MAX_PREFETCH_DEGREE {
            bail!("--prefetch-degree must be at most {MAX_PREFETCH_DEGREE}");
        }
        Ok(Some(config))
    }
}

/// The generator of the keys thread `thread` of phase `index` seeks to.
pub(crate) fn seek_rng(config: &BenchConfig, index: usize, thread: usize) -> SmallRng {
    let phase = phase_seed(config.seed, Workload::SeekRandom, index);
    SmallRng::seed_from_u64(mix(phase, thread as u64 + 1))
}

/// What one thread measured.
struct ThreadScan {
    ops: u64,
    entries: u64,
    bytes: u64,
    found: u64,
    elapsed: Duration,
    latency: Histogram,
    seek: Histogram,
    next: Histogram,
}

/// One thread's share of a phase.
struct Share<'a> {
    db: &'a dyn BenchDb,
    keys: KeyFormat,
    num: u64,
    count: u64,
    scan: &'a ScanConfig,
    start: &'a Barrier,
    stop: &'a AtomicBool,
    progress: &'a ProgressBar,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Share<'_> {
    fn run(&self, mut rng: SmallRng) -> Result<ThreadScan> {
        let opts = CursorOptions {
            keys_only: self.scan.keys_only,
            prefetch_degree: self.scan.prefetch_degree,
            index_prefetch: self.scan.index_prefetch,
            scan_length: self.scan.scan_length,
            whole_scan: false,
            readahead_bytes: self.scan.readahead_bytes,
        };
        let mut key = vec![0u8; self.keys.size()];
        let mut out = ThreadScan {
            ops: 0,
            entries: 0,
            bytes: 0,
            found: 0,
            elapsed: Duration::ZERO,
            latency: Histogram::new(),
            seek: Histogram::new(),
            next: Histogram::new(),
        };
        self.start.wait();
        let t0 = Instant::now();
        let mut progress = Progress::new(self.progress);
        let result = (|| -> Result<()> {
            while out.ops < self.count {
                if self.stop.load(Ordering::Relaxed) {
                    break;
                }
                self.keys.write(rng.gen_range(0..self.num), &mut key);
                let op_start = Instant::now();
                let mut cursor = self.db.cursor(&opts)?;
                cursor.seek(&key)?;
                let first = cursor.next()?.map(|(k, v)| (k == key, k.len() + v.len()));
                let mut last = Instant::now();
                out.seek.record(nanos(last - op_start));
                if let Some((exact, bytes)) = first {
                    out.found += u64::from(exact);
                    out.entries += 1;
                    out.bytes += bytes as u64;
                    for _ in 1..self.scan.scan_length {
                        let Some(bytes) = cursor.next()?.map(|(k, v)| k.len() + v.len()) else {
                            break;
                        };
                        let now = Instant::now();
                        out.next.record(nanos(now - last));
                        last = now;
                        out.entries += 1;
                        out.bytes += bytes as u64;
                    }
                }
                drop(cursor);
                out.latency.record(nanos(op_start.elapsed()));
                out.ops += 1;
                progress.add(1);
            }
            Ok(())
        })();
        out.elapsed = t0.elapsed();
        drop(progress);
        if result.is_err() {
            // Let the other threads end early.
            self.stop.store(true, Ordering::Relaxed);
        }
        result.map(|()| out)
    }
}

/// Runs seekrandom as phase number `index` of the list on `db`.
pub fn run(
    db: &dyn BenchDb,
    index: usize,
    config: &BenchConfig,
    scan: &ScanConfig,
) -> Result<PhaseOutcome> {
    let keys = KeyFormat::new(config.key_size, config.num)?;
    let workload = Workload::SeekRandom;
    let shares = split(scan.seeks, config.threads);
    let progress = progress_bar(workload.name(), scan.seeks);
    let start = Barrier::new(shares.len() + 1);
    let stop = AtomicBool::new(false);
    let (results, wall) = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(shares.len());
        for (t, &(from, to)) in shares.iter().enumerate() {
            let share = Share {
                db,
                keys,
                num: config.num,
                count: to - from,
                scan,
                start: &start,
                stop: &stop,
                progress: &progress,
            };
            let rng = seek_rng(config, index, t);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("{}-{t}", workload.name()))
                    .spawn_scoped(s, move || share.run(rng))
                    .expect("spawning a worker thread"),
            );
        }
        start.wait();
        let t0 = Instant::now();
        let results: Vec<Result<ThreadScan>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a worker thread panicked")))
            })
            .collect();
        (results, t0.elapsed())
    });
    progress.finish_and_clear();

    let mut outcome = PhaseOutcome::new(workload, workload.name(), wall.as_secs_f64(), Some(0));
    let mut scanned = ScanOutcome {
        config: *scan,
        entries: 0,
        seek_latency: Histogram::new(),
        next_latency: Histogram::new(),
    };
    let mut found = 0;
    for r in results {
        let r = r?;
        outcome.ops += r.ops;
        outcome.bytes += r.bytes;
        outcome.thread_seconds += r.elapsed.as_secs_f64();
        outcome.latency.merge(&r.latency);
        found += r.found;
        scanned.entries += r.entries;
        scanned.seek_latency.merge(&r.seek);
        scanned.next_latency.merge(&r.next);
    }
    outcome.found = Some(found);
    outcome.scan = Some(scanned);
    Ok(outcome)
}
