//! `cerberus-paper bts`: the BTS paper's Figure 7 through a device: put-only "fill
//! sequential" with 16 KiB values from a growing number of client threads, under each
//! scheduling policy (`off`: no background service; `inline`: each put's dedup task on the
//! core that served the put; `bts`: on the least-loaded core below the load threshold).
//!
//! Each point is a fresh device in this process (its network threads are the cores) and
//! `--num` puts split among the client threads, one connection each, one put in flight per
//! thread. Reported per point: the foreground put latency (mean, p99, p99.9) and throughput,
//! the dedup backlog when the puts end and the time it takes to drain, and the scheduler's
//! shape: per core its connections, background tasks and load, and the migrations.
//! `--rounds` repeats the whole grid, policies in turn within each thread count (each round
//! starting with the next policy), and reports medians (this machine's speed drifts by the
//! minute).

mod chunking;
mod mix;
pub mod report;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use cerberus_bench::Histogram;
use cerberus_bench_engines::local_device::{self, LocalDevice};
use cerberus_device::{ChunkHash, Chunker, Chunking, Policy};
use cerberus_host::BlockingNamespace;
use clap::Parser;
use rand::{RngCore, SeedableRng};
pub use report::RunDoc;
use report::{medians, print_tables, Point};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-paper bts",
    bin_name = "cerberus-paper bts",
    about = "Foreground put latency under the scheduling policies, with dedup as the \
             background task (the BTS paper's Figure 7)"
)]
struct Args {
    /// Policies to run (comma-separated): off, inline, bts.
    #[arg(long, default_value = "off,inline,bts")]
    policy: String,
    /// Client thread counts (comma-separated).
    #[arg(long, default_value = "1,2,3,4,6,8,16")]
    client_threads: String,
    #[arg(long, default_value_t = 16384)]
    value_size: usize,
    /// Puts per point, split among the client threads.
    #[arg(long, default_value_t = 12000)]
    num: usize,
    /// The device's cores (network threads).
    #[arg(long, default_value_t = 4)]
    cores: usize,
    /// Pin core i to CPU i (modulo the CPUs).
    #[arg(long)]
    pin: bool,
    /// The BTS load threshold (mean core load, 0-1).
    #[arg(long)]
    threshold: Option<f64>,
    /// Commands between two samples of the cores' load.
    #[arg(long, default_value_t = 60)]
    sample_every: u32,
    /// fixed or cdc.
    #[arg(long, default_value = "fixed")]
    chunking: String,
    /// sha1 or xxh3.
    #[arg(long, default_value = "sha1")]
    hash: String,
    #[arg(long, default_value_t = 128)]
    chunk_bytes: u32,
    /// Repeats of the whole grid; medians are reported.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Directory for the devices' data (a temporary directory each point).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Write the points and the medians here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Keep every CPU out of its idle state during the runs with one busy thread per CPU at
    /// the idle scheduling class (SCHED_IDLE: it runs only when nothing else wants the CPU).
    /// On a virtual machine a halted CPU takes ~100 us to wake for the next command; a core
    /// busy with background work keeps one awake, which would favour the policies that run
    /// any.
    #[arg(long)]
    awake: bool,
    /// Instead of the latency grid: load a mix with known duplication (`tweets`, or `files`:
    /// a file set with repeated blocks) and set the device's dedup ratio beside one
    /// recomputed from the stored values.
    #[arg(long)]
    mix: Option<String>,
    /// Records of the mix.
    #[arg(long, default_value_t = 20000)]
    records: u64,
    /// Print the tables of an earlier run's --json file instead of running.
    #[arg(long)]
    from_json: Option<PathBuf>,
    /// Only measure chunking throughput per core (each chunking and hash), no device.
    #[arg(long)]
    chunking_only: bool,
}

fn list<T: std::str::FromStr>(s: &str, what: &str) -> Result<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    s.split(',')
        .map(|p| {
            p.trim()
                .parse::<T>()
                .map_err(|e| anyhow::anyhow!("bad {what} {p:?}: {e}"))
        })
        .collect()
}

fn chunker(args: &Args) -> Result<Chunker> {
    Ok(Chunker {
        chunking: match args.chunking.as_str() {
            "fixed" => Chunking::Fixed,
            "cdc" => Chunking::Cdc,
            c => bail!("unknown chunking {c:?} (fixed or cdc)"),
        },
        hash: match args.hash.as_str() {
            "sha1" => ChunkHash::Sha1,
            "xxh3" => ChunkHash::Xxh3,
            h => bail!("unknown hash {h:?} (sha1 or xxh3)"),
        },
        chunk_bytes: args.chunk_bytes,
    })
}

pub fn main(args: Vec<OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    if args.chunking_only {
        return chunking::main(args.value_size);
    }
    if let Some(mix) = &args.mix {
        return mix::main(mix, args.records, chunker(&args)?);
    }
    if let Some(path) = &args.from_json {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let points = serde_json::from_str::<RunDoc>(&text)?.points;
        let mut policies: Vec<Policy> = Vec::new();
        let mut threads: Vec<usize> = Vec::new();
        for p in &points {
            if !policies.contains(&p.policy) {
                policies.push(p.policy);
            }
            if !threads.contains(&p.threads) {
                threads.push(p.threads);
            }
        }
        threads.sort_unstable();
        let order = [Policy::Off, Policy::Inline, Policy::Bts];
        policies.sort_by_key(|p| order.iter().position(|o| o == p));
        print_tables(&medians(&points, &policies, &threads), &policies, &threads);
        return Ok(());
    }
    let policies: Vec<Policy> = list(&args.policy, "policy")?;
    let threads: Vec<usize> = list(&args.client_threads, "client thread count")?;
    if threads.contains(&0) || args.cores == 0 || args.num == 0 {
        bail!("client threads, cores and --num must be at least 1");
    }
    let chunker = chunker(&args)?;
    eprintln!(
        "bts: {} puts of {} B per point, device cores {} (pinned: {}), {} CPUs shared with the \
         client threads, chunks {:?}",
        args.num,
        args.value_size,
        args.cores,
        args.pin,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        chunker
    );
    let _awake = args.awake.then(Awake::start);
    let mut points = Vec::new();
    for round in 0..args.rounds.max(1) {
        // Each round starts with another policy: a run right after another one meets what it
        // left (dirty pages being written back, a warmer or colder cache).
        let mut order = policies.clone();
        order.rotate_left(round % policies.len().max(1));
        for &t in &threads {
            for &p in &order {
                let point = run_point(&args, chunker, p, t, round)?;
                eprintln!(
                    "round {round} {:>6?} threads {t:>3}: {:>8.0} puts/s, mean {:>7.1} us, p99 \
                     {:>7.1} us, p99.9 {:>8.1} us; backlog {:>6} drained in {:.2} s; \
                     migrations {}; bg tasks per core {:?}; connections {:?}; mean load {:.2} \
                     (foreground {:.2})",
                    p,
                    point.puts_per_sec,
                    point.mean_us,
                    point.p99_us,
                    point.p999_us,
                    point.backlog_at_end,
                    point.drain_seconds,
                    point.migrations,
                    point.core_bg_tasks,
                    point.core_connections,
                    point.mean_load,
                    point.mean_fg_load
                );
                points.push(point);
            }
        }
    }
    let medians = medians(&points, &policies, &threads);
    print_tables(&medians, &policies, &threads);
    if let Some(path) = &args.json {
        let doc = RunDoc {
            chunker: Some(chunker),
            cores: args.cores,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            medians,
            num: args.num,
            pin: args.pin,
            points,
            rounds: args.rounds,
            sample_every: args.sample_every,
            threshold: args.threshold,
            value_size: args.value_size,
        };
        std::fs::write(path, serde_json::to_vec_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn run_point(
    args: &Args,
    chunker: Chunker,
    policy: Policy,
    threads: usize,
    round: usize,
) -> Result<Point> {
    let (_dir, local, ns, secret) = start_device(args, chunker, policy)?;
    let dev = &local.device;
    wait_for_no_connection(dev)?;
    let clients: Vec<BlockingNamespace> = (0..threads)
        .map(|_| local_device::client(&local.addr, ns, &secret))
        .collect::<Result<_, _>>()?;
    let (hist, seconds, (core_connections, mean_load, mean_fg_load, fg_queueing_us)) =
        put_load(args, dev, &clients)?;
    let (backlog_at_end, drain_seconds) = drain(dev)?;
    let s = dev.scheduler_stats();
    let fg: u64 = s.cores.iter().map(|c| c.fg_commands).sum();
    let fg_ns: u64 = s.cores.iter().map(|c| c.fg_busy_ns).sum();
    let bg: u64 = s.cores.iter().map(|c| c.bg_tasks).sum();
    let bg_wait: f64 = s
        .cores
        .iter()
        .map(|c| c.bg_mean_wait_ns * c.bg_tasks as f64)
        .sum();
    drop(clients);
    local.device.shutdown().context("stopping the device")?;
    let puts = hist.count();
    Ok(Point {
        round,
        policy,
        threads,
        puts,
        seconds,
        puts_per_sec: puts as f64 / seconds,
        mean_us: hist.mean() / 1e3,
        p99_us: hist.percentile(99.0) / 1e3,
        p999_us: hist.percentile(99.9) / 1e3,
        service_us: if fg == 0 {
            0.0
        } else {
            fg_ns as f64 / fg as f64 / 1e3
        },
        backlog_at_end,
        drain_seconds,
        migrations: s.migrations,
        core_connections,
        mean_load,
        mean_fg_load,
        core_bg_tasks: s.cores.iter().map(|c| c.bg_tasks).collect(),
        core_fg_commands: s.cores.iter().map(|c| c.fg_commands).collect(),
        bg_mean_wait_us: if bg == 0 {
            0.0
        } else {
            bg_wait / bg as f64 / 1e3
        },
        fg_queueing_us,
    })
}

/// A fresh device of the point (its directory under --db, or a temporary one) and a namespace.
fn start_device(
    args: &Args,
    chunker: Chunker,
    policy: Policy,
) -> Result<(tempfile::TempDir, LocalDevice, u32, String)> {
    let dir = match &args.db {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            tempfile::tempdir_in(d)?
        }
        None => tempfile::tempdir()?,
    };
    let mut c = local_device::config(dir.path());
    c.network_threads = args.cores;
    c.max_value_len = (args.value_size as u32).max(1 << 20);
    c.scheduler.policy = policy;
    c.scheduler.sample_every = args.sample_every;
    c.scheduler.pin_cores = args.pin;
    if let Some(t) = args.threshold {
        c.scheduler.load_threshold = t;
    }
    c.dedup.enabled = policy != Policy::Off;
    c.dedup.chunking = chunker.chunking;
    c.dedup.hash = chunker.hash;
    c.dedup.chunk_bytes = chunker.chunk_bytes;
    let local = LocalDevice::start(c)?;
    let (ns, secret) = local.create_namespace("bts")?;
    Ok((dir, local, ns, secret))
}

/// Waits for the admin connection to leave its core, so placement starts from zero.
fn wait_for_no_connection(dev: &cerberus_device::DeviceHandle) -> Result<()> {
    let t = Instant::now();
    while dev
        .scheduler_stats()
        .cores
        .iter()
        .any(|c| c.connections > 0)
    {
        if t.elapsed() > Duration::from_secs(5) {
            bail!("the admin connection did not close");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

type Shape = (Vec<usize>, f64, f64, f64);

/// `--num` puts from one thread per client, one in flight each: their latencies, the seconds
/// they took, and the scheduler's shape at their end.
fn put_load(
    args: &Args,
    dev: &cerberus_device::DeviceHandle,
    clients: &[BlockingNamespace],
) -> Result<(Histogram, f64, Shape)> {
    let threads = clients.len();
    let per = (args.num / threads).max(1);
    let barrier = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|s| -> Result<_> {
        let handles: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(t, client)| {
                let barrier = &barrier;
                let size = args.value_size;
                s.spawn(move || -> Result<Histogram> {
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(t as u64 + 1);
                    let mut h = Histogram::new();
                    let mut buf = vec![0u8; size];
                    barrier.wait();
                    for i in 0..per {
                        rng.fill_bytes(&mut buf);
                        let key = Bytes::from(format!("{t:04}{i:012}"));
                        let value = Bytes::copy_from_slice(&buf);
                        let t0 = Instant::now();
                        client.put(key, value)?;
                        h.record(t0.elapsed().as_nanos() as u64);
                    }
                    Ok(h)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut all = Histogram::new();
        for h in handles {
            let h = h
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
            all.merge(&h);
        }
        let elapsed = start.elapsed().as_secs_f64();
        let s = dev.scheduler_stats();
        let n = s.cores.len().max(1) as f64;
        let shape = (
            s.cores.iter().map(|c| c.connections).collect::<Vec<_>>(),
            s.cores.iter().map(|c| c.load).sum::<f64>() / n,
            s.cores.iter().map(|c| c.fg_load).sum::<f64>() / n,
            // While the puts ran (the drain after them delays no command).
            s.fg_queueing_ns_per_command / 1e3,
        );
        Ok((all, elapsed, shape))
    })
}

/// The dedup backlog when the puts ended, and the seconds it took to drain.
fn drain(dev: &cerberus_device::DeviceHandle) -> Result<(u64, f64)> {
    let backlog_at_end = dev.dedup_stats().map_or(0, |d| d.backlog);
    let t = Instant::now();
    while dev.dedup_stats().map_or(0, |d| d.backlog) > 0 {
        if t.elapsed() > Duration::from_secs(600) {
            bail!("the dedup backlog did not drain in 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let drain_seconds = if backlog_at_end == 0 {
        0.0
    } else {
        t.elapsed().as_secs_f64()
    };
    Ok((backlog_at_end, drain_seconds))
}

/// One spinning thread per CPU at SCHED_IDLE, stopped when dropped.
struct Awake {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Awake {
    fn start() -> Awake {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = (0..cpus)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    // SAFETY: a plain struct for the call; 0 names this thread.
                    let ok = unsafe {
                        let p = libc::sched_param { sched_priority: 0 };
                        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) == 0
                    };
                    if !ok {
                        eprintln!("bts --awake: SCHED_IDLE refused; not spinning");
                        return;
                    }
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Awake { stop, threads }
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
