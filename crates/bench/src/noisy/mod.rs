//! `cerberus-bench noisy`: the noisy-neighbour experiment. A victim tenant loads its keys, then
//! gets them (one client thread) in three phases: `alone`; `noisy`, while `--neighbours`
//! tenants each put `--write-factor` times the victim's data as fast as they can (the victim
//! gets until they are done); `settled`, after the engine has flushed and finished its
//! compactions. Per storage and layout, each on a fresh database, it reports per phase the
//! victim's gets/s, latency percentiles, filter loads and pages read per get (its namespace
//! counters) and the neighbours' puts/s. The document and its table and charts are the
//! figures crate's (`docs::noisy`, `plot-noisy`).

use crate::histogram::Histogram;
use crate::multitenant::{ns_delta, run_threads, tenant_loop, TenantPhase};
use crate::workload::{mix, KeyFormat, ValuePool};
use anyhow::{bail, Context, Result};
use cerberus_bench_engines::profile::ProfileArg;
use cerberus_bench_engines::{self as engines, BenchDb, Engine, LayoutArg, OpenConfig};
use cerberus_bench_engines::{StorageArg, TenantHandle};
use cerberus_engine::NamespaceStats;
use cerberus_figures::docs::noisy::{LatencyUs, NoisyConfig, NoisyDoc, NoisyPhase, NoisyRun};
use clap::Parser;
use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench noisy",
    bin_name = "cerberus-bench noisy",
    about = "A victim tenant's gets alone, beside writing neighbours, and after settling"
)]
struct Args {
    /// Neighbour tenants, one writing thread each.
    #[arg(long, default_value_t = 7)]
    neighbours: usize,
    /// Keys the victim loads (random order) before the phases.
    #[arg(long, default_value_t = 50_000)]
    victim_keys: u64,
    /// Each neighbour puts this many times the victim's keys in the noisy phase.
    #[arg(long, default_value_t = 2)]
    write_factor: u64,
    /// Gets of the victim in the alone and settled phases [default: --victim-keys].
    #[arg(long)]
    victim_gets: Option<u64>,
    /// Layouts, each on a fresh database (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "per_namespace,shared,baseline"
    )]
    layouts: Vec<LayoutArg>,
    /// Storages, each on a fresh database (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "nand,posix")]
    storages: Vec<StorageArg>,
    /// Cache bytes (filters and indexes); 0 as the multitenant grid's nand0 and posix.
    #[arg(long, default_value_t = 0)]
    cache_bytes: u64,
    /// Keep the engine's own sizes instead of `--profile paper`'s (small memtable and
    /// levels, so that the neighbours' writes flush and compact within the phase).
    #[arg(long)]
    no_profile: bool,
    /// Through a device started in this process on a loopback port instead of the embedded
    /// engine, with the device's own sizes (no profile) and no namespace counters (filter
    /// loads and pages are null).
    #[arg(long)]
    device: bool,
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    #[arg(long, default_value_t = 1024)]
    value_size: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Directory for the databases (default: a temporary one; each run deletes its own).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Writes the document here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `cerberus-bench noisy ...`; `args` starts with `noisy`.
pub fn main(args: Vec<OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    let doc = run(&args)?;
    print!("{}", cerberus_figures::noisy_table(&doc));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&doc)? + "\n";
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let misses: u64 = doc
        .runs
        .iter()
        .flat_map(|r| &r.phases)
        .map(|p| p.victim_misses)
        .sum();
    if misses > 0 {
        bail!("{misses} victim gets did not find a key it had written");
    }
    Ok(())
}

fn run(args: &Args) -> Result<NoisyDoc> {
    if args.neighbours == 0 || args.victim_keys == 0 || args.write_factor == 0 {
        bail!("--neighbours, --victim-keys and --write-factor must be at least 1");
    }
    if args.victim_gets == Some(0) {
        bail!("--victim-gets must be at least 1");
    }
    let keys = KeyFormat::new(args.key_size, args.victim_keys * args.write_factor)?;
    let engine = if args.device {
        Engine::Device
    } else {
        Engine::Cerberus
    };
    // The device takes no engine sizes from the bench.
    let profile = (!args.no_profile && !args.device).then_some(ProfileArg::Paper);
    let temp = tempfile::Builder::new()
        .prefix("cerberus-noisy-")
        .tempdir()?;
    let base = args.db.clone().unwrap_or_else(|| temp.path().into());
    let values = ValuePool::new(args.value_size, 0.5, args.seed);
    let mut runs = Vec::new();
    for &storage in &args.storages {
        for &layout in &args.layouts {
            let path = base.join(format!("{}-{}", storage.name(), layout.name()));
            let open = OpenConfig {
                path: path.clone(),
                storage,
                cache_bytes: args.cache_bytes,
                mmap_reads: true,
                sync: false,
                tenants: args.neighbours + 1,
                layout,
                profile: profile.map(|p| p.sizes(args.neighbours + 1)),
                device: args.device.then(|| "local".into()),
                admin_secret: None,
                device_prefetch_degree: None,
            };
            engine.check(&open)?;
            eprintln!("noisy: {} {} ...", storage.name(), layout.name());
            let db = engines::open(engine, &open)?;
            let phases = phases(&*db, args, &keys, &values)
                .with_context(|| format!("{} {}", storage.name(), layout.name()))?;
            db.close()?;
            drop(db);
            let _ = std::fs::remove_dir_all(&path);
            runs.push(NoisyRun {
                storage: storage.name().into(),
                layout: layout.name().into(),
                counters_shared_by_tenants: layout.one_namespace(),
                phases,
            });
        }
    }
    Ok(NoisyDoc {
        engine: engine.name().into(),
        workload: "noisy".into(),
        config: NoisyConfig {
            neighbours: args.neighbours,
            victim_keys: args.victim_keys,
            write_factor: args.write_factor,
            victim_gets: args.victim_gets.unwrap_or(args.victim_keys),
            key_size: args.key_size,
            value_size: args.value_size,
            profile: profile.map(|p| p.name().into()),
            cache_bytes: args.cache_bytes,
            seed: args.seed,
        },
        runs,
    })
}

/// The victim's gets of one phase, and the misses among them.
struct VictimGets {
    phase: TenantPhase,
    misses: u64,
}

/// The victim's gets of keys picked uniformly in `0..victim_keys`: `count`, or (at least one)
/// until `stop` is set.
fn victim_gets(
    db: &dyn BenchDb,
    victim: &TenantHandle,
    args: &Args,
    keys: &KeyFormat,
    count: u64,
    stop: &AtomicBool,
    salt: u64,
) -> Result<VictimGets> {
    let mut rng = SmallRng::seed_from_u64(mix(args.seed, salt));
    let mut key = vec![0u8; keys.size()];
    let mut latency = Histogram::new();
    let (mut ops, mut misses) = (0, 0);
    let t0 = Instant::now();
    while ops < count && (ops == 0 || !stop.load(Ordering::Relaxed)) {
        keys.write(rng.gen_range(0..args.victim_keys), &mut key);
        let start = Instant::now();
        misses += u64::from(!db.get_tenant(victim, &key)?);
        latency.record(start.elapsed().as_nanos() as u64);
        ops += 1;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let phase = TenantPhase {
        ops,
        seconds,
        latency,
    };
    Ok(VictimGets { phase, misses })
}

/// Loads the victim, then runs the three phases on `db`.
fn phases(
    db: &dyn BenchDb,
    args: &Args,
    keys: &KeyFormat,
    values: &ValuePool,
) -> Result<Vec<NoisyPhase>> {
    let tenants = db.create_tenants(args.neighbours + 1)?;
    let victim = &tenants[0];
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut order: Vec<u64> = (0..args.victim_keys).collect();
    order.shuffle(&mut rng);
    let mut gen = values.generator(&mut rng);
    let mut key = vec![0u8; keys.size()];
    for k in order {
        keys.write(k, &mut key);
        db.put_tenant(victim, &key, gen.next())?;
    }
    db.settle()?;
    let gets = args.victim_gets.unwrap_or(args.victim_keys);
    let alone = measured(db, victim, |stop| {
        victim_gets(db, victim, args, keys, gets, stop, 1)
    })?;
    let noisy = measured(db, victim, |stop| {
        noisy_phase(db, &tenants, args, keys, values, stop)
    })?;
    db.settle()?;
    let settled = measured(db, victim, |stop| {
        victim_gets(db, victim, args, keys, gets, stop, 3)
    })?;
    let ((victim_noisy, (puts, puts_per_sec)), noisy_delta) = noisy;
    Ok(vec![
        phase_doc("alone", alone, 0, 0.0),
        phase_doc("noisy", (victim_noisy, noisy_delta), puts, puts_per_sec),
        phase_doc("settled", settled, 0, 0.0),
    ])
}

/// What a phase measured: the victim's gets and its namespace counters' change.
type Measured<T> = (T, Option<NamespaceStats>);

/// Runs `body` between two snapshots of the victim's namespace counters.
fn measured<T>(
    db: &dyn BenchDb,
    victim: &TenantHandle,
    body: impl FnOnce(&AtomicBool) -> Result<T>,
) -> Result<Measured<T>> {
    let before = db.tenant_stats(victim)?;
    let stop = AtomicBool::new(false);
    let out = body(&stop)?;
    let after = db.tenant_stats(victim)?;
    let delta = match (before, after) {
        (Some(b), Some(a)) => Some(ns_delta(&b, &a)),
        _ => None,
    };
    Ok((out, delta))
}

/// The noisy phase: the neighbours' puts, and the victim's gets until they are done; the
/// victim's gets, the neighbours' puts and their puts/s.
fn noisy_phase(
    db: &dyn BenchDb,
    tenants: &[TenantHandle],
    args: &Args,
    keys: &KeyFormat,
    values: &ValuePool,
    done: &AtomicBool,
) -> Result<(VictimGets, (u64, f64))> {
    let stop = AtomicBool::new(false);
    let span = args.victim_keys * args.write_factor;
    let hidden = ProgressBar::hidden();
    std::thread::scope(|s| {
        let victim = s.spawn(|| {
            let r = victim_gets(db, &tenants[0], args, keys, u64::MAX, done, 2);
            if r.is_err() {
                // A failed victim ends the neighbours early.
                stop.store(true, Ordering::Relaxed);
            }
            r
        });
        let puts = run_threads("neighbour", args.neighbours, &stop, |t| {
            let mut rng = SmallRng::seed_from_u64(mix(args.seed, 100 + t as u64));
            let mut gen = values.generator(&mut rng);
            let mut key = vec![0u8; keys.size()];
            tenant_loop(&hidden, &stop, span, || {
                keys.write(rng.gen_range(0..span), &mut key);
                let value = gen.next();
                let start = Instant::now();
                db.put_tenant(&tenants[t + 1], &key, value)?;
                Ok(start.elapsed())
            })
        });
        done.store(true, Ordering::Relaxed);
        let victim = victim
            .join()
            .map_err(|_| anyhow::anyhow!("the victim panicked"))??;
        let (puts, wall) = puts?;
        let n: u64 = puts.iter().map(|p| p.ops).sum();
        Ok((victim, (n, n as f64 / wall.as_secs_f64().max(1e-9))))
    })
}

fn phase_doc(
    name: &str,
    (gets, delta): Measured<VictimGets>,
    neighbour_puts: u64,
    neighbour_puts_per_sec: f64,
) -> NoisyPhase {
    let h = &gets.phase.latency;
    let per_get = |n: u64| {
        let d = delta.as_ref()?;
        (d.gets > 0).then(|| n as f64 / d.gets as f64)
    };
    NoisyPhase {
        name: name.into(),
        seconds: gets.phase.seconds,
        victim_gets: gets.phase.ops,
        victim_gets_per_sec: gets.phase.ops_per_sec(),
        victim_latency_us: LatencyUs {
            mean: h.mean() / 1e3,
            p50: h.percentile(50.0) / 1e3,
            p99: h.percentile(99.0) / 1e3,
            p999: h.percentile(99.9) / 1e3,
        },
        victim_misses: gets.misses,
        filter_loads_per_get: per_get(delta.as_ref().map_or(0, |d| d.filter_loads)),
        page_reads_per_get: per_get(delta.as_ref().map_or(0, |d| d.pages.iter().sum())),
        neighbour_puts,
        neighbour_puts_per_sec,
    }
}

#[cfg(test)]
mod tests;
