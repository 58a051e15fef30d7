//! `cerberus-bench noisy`: the noisy-neighbour experiment. A victim tenant loads its keys, then
//! gets them (one client thread) in three phases: `alone`; `noisy`, while `--neighbours`
//! tenants each put `--write-factor` times the victim's data as fast as they can (the victim
//! gets until they are done); `settled`, after the engine has flushed and finished its
//! compactions. Per storage and layout, each on a fresh database, it reports per phase the
//! victim's gets/s, latency percentiles, filter loads and pages read per get (its namespace
//! counters) and the neighbours' puts/s. The document and its table and charts are the
//! figures crate's (`docs::noisy`, `plot-noisy`).
//!
//! `--device` runs the phases through a device started in this process (loopback, a
//! connection per client thread), once per `--shares` and `--neighbours-niced` value
//! (`device.rs`): the victim's reservation, and its `shares_served` after each phase.

mod args;
mod device;
mod schedstat;

use crate::histogram::Histogram;
use crate::multitenant::{ns_delta, run_threads, tenant_loop, TenantPhase};
use crate::workload::{mix, KeyFormat, ValuePool};
use anyhow::{bail, Context, Result};
use args::{Args, OnOff};
use cerberus_bench_engines::profile::ProfileArg;
use cerberus_bench_engines::{self as engines, BenchDb, Engine, OpenConfig};
use cerberus_bench_engines::{DeviceDb, TenantHandle};
use cerberus_engine::NamespaceStats;
use cerberus_figures::docs::noisy::{
    LatencyUs, NoisyConfig, NoisyDoc, NoisyPhase, NoisyRun, ThreadTimes,
};
use clap::Parser;
use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

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
    if args.victim_gets == Some(0) || args.neighbour_batch == 0 {
        bail!("--victim-gets and --neighbour-batch must be at least 1");
    }
    if !args.device && (args.victim_reservation > 0 || args.shares != [OnOff::On]) {
        bail!("--shares and --victim-reservation are the device's: add --device");
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
    // Shares are the device's: one run without them on the embedded engine.
    let shares: Vec<Option<bool>> = if args.device {
        args.shares.iter().map(|s| Some(s.on())).collect()
    } else {
        vec![None]
    };
    let mut runs = Vec::new();
    for &storage in &args.storages {
        for &layout in &args.layouts {
            for &shares in &shares {
                for niced in args.neighbours_niced.iter().map(|n| n.on()) {
                    let open = OpenConfig {
                        path: base.join(format!("{}-{}", storage.name(), layout.name())),
                        storage,
                        cache_bytes: args.cache_bytes,
                        mmap_reads: true,
                        time_get_steps: false,
                        sync: false,
                        tenants: args.neighbours + 1,
                        layout,
                        profile: profile.map(|p| p.sizes(args.neighbours + 1)),
                        device: args.device.then(|| "local".into()),
                        admin_secret: None,
                        device_prefetch_degree: None,
                        ordered_keys: false,
                        largest_value: args.value_size,
                    };
                    engine.check(&open)?;
                    let run = Run {
                        shares,
                        niced,
                        keys: &keys,
                        values: &values,
                    };
                    runs.push(run.on(engine, &open, args)?);
                }
            }
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
            neighbour_batch: args.neighbour_batch,
            victim_reservation_ops: if args.device {
                args.victim_reservation
            } else {
                0
            },
            network_threads: args.device.then_some(args.network_threads),
            network_nice: if args.device { args.network_nice } else { 0 },
            background_nice: if args.device { args.background_nice } else { 0 },
            victim_nice: args.victim_nice,
            frames_per_turn: match args.device {
                true => {
                    Some(args.frames_per_turn.unwrap_or(
                        cerberus_device::DeviceConfig::default().network_frames_per_turn,
                    ))
                }
                false => None,
            },
        },
        runs,
    })
}

/// One run's settings beyond the storage and layout.
struct Run<'a> {
    /// The device's shares (`None`: the embedded engine).
    shares: Option<bool>,
    /// Whether the neighbours' threads run at nice 19.
    niced: bool,
    keys: &'a KeyFormat,
    values: &'a ValuePool,
}

impl Run<'_> {
    /// Opens a fresh database as `open` says, runs the phases on it and deletes it.
    fn on(&self, engine: Engine, open: &OpenConfig, args: &Args) -> Result<NoisyRun> {
        let (storage, layout) = (open.storage.name(), open.layout.name());
        eprintln!(
            "noisy: {storage} {layout} shares {:?} niced {} ...",
            self.shares, self.niced
        );
        let (db, dev): (Arc<dyn BenchDb>, Option<Arc<DeviceDb>>) = match self.shares {
            None => (engines::open(engine, open)?, None),
            Some(on) => {
                std::fs::create_dir_all(&open.path)?;
                let dev = Arc::new(DeviceDb::open_with(open, |c| {
                    device::configure(c, on, args)
                })?);
                (dev.clone(), Some(dev))
            }
        };
        let phases = self
            .phases(&*db, dev.as_deref(), args)
            .with_context(|| format!("{storage} {layout}"))?;
        for p in &phases {
            for (name, t) in &p.threads {
                eprintln!(
                    "  {:<8} {name:<16} x{:<2} cpu {:>8.1} ms  waiting {:>8.1} ms  slices {}",
                    p.name, t.threads, t.cpu_ms, t.wait_ms, t.slices
                );
            }
        }
        db.close()?;
        drop((db, dev));
        let _ = std::fs::remove_dir_all(&open.path);
        Ok(NoisyRun {
            storage: storage.into(),
            layout: layout.into(),
            counters_shared_by_tenants: open.layout.one_namespace(),
            shares: self.shares,
            neighbours_niced: self.niced,
            phases,
        })
    }

    /// Loads the victim, then runs the three phases on `db` (`dev`: the same, a device).
    fn phases(
        &self,
        db: &dyn BenchDb,
        dev: Option<&DeviceDb>,
        args: &Args,
    ) -> Result<Vec<NoisyPhase>> {
        let keys = self.keys;
        let tenants = db.create_tenants(args.neighbours + 1)?;
        let victim = &tenants[0];
        if let Some(dev) = dev {
            device::reserve(dev, victim, args.victim_reservation)?;
        }
        let mut rng = SmallRng::seed_from_u64(args.seed);
        let mut order: Vec<u64> = (0..args.victim_keys).collect();
        order.shuffle(&mut rng);
        let mut gen = self.values.generator(&mut rng);
        let mut key = vec![0u8; keys.size()];
        for k in order {
            keys.write(k, &mut key);
            db.put_tenant(victim, &key, gen.next())?;
        }
        db.settle()?;
        let gets = args.victim_gets.unwrap_or(args.victim_keys);
        let alone = measured(db, dev, victim, |stop| {
            victim_gets(db, victim, args, keys, gets, stop, 1)
        })?;
        let noisy = measured(db, dev, victim, |stop| {
            self.noisy_phase(db, &tenants, args, stop)
        })?;
        db.settle()?;
        let settled = measured(db, dev, victim, |stop| {
            victim_gets(db, victim, args, keys, gets, stop, 3)
        })?;
        let NoisyOut {
            victim: victim_noisy,
            puts,
            puts_per_sec,
            neighbours,
        } = noisy.out;
        let mut threads = noisy.threads;
        for (name, t) in neighbours {
            schedstat::add(&mut threads, &name, t);
        }
        let noisy = Measured {
            out: victim_noisy,
            delta: noisy.delta,
            shares: noisy.shares,
            threads,
        };
        Ok(vec![
            phase_doc("alone", alone, 0, 0.0),
            phase_doc("noisy", noisy, puts, puts_per_sec),
            phase_doc("settled", settled, 0, 0.0),
        ])
    }

    /// The noisy phase: the neighbours' puts, and the victim's gets until they are done; the
    /// victim's gets, the neighbours' puts and their puts/s.
    fn noisy_phase(
        &self,
        db: &dyn BenchDb,
        tenants: &[TenantHandle],
        args: &Args,
        done: &AtomicBool,
    ) -> Result<NoisyOut> {
        let (keys, batch) = (self.keys, args.neighbour_batch);
        let stop = AtomicBool::new(false);
        let span = args.victim_keys * args.write_factor;
        let hidden = ProgressBar::hidden();
        std::thread::scope(|s| {
            let victim = std::thread::Builder::new().name("victim".into());
            let victim = victim.spawn_scoped(s, || {
                let r = victim_gets(db, &tenants[0], args, keys, u64::MAX, done, 2);
                if r.is_err() {
                    // A failed victim ends the neighbours early.
                    stop.store(true, Ordering::Relaxed);
                }
                r
            })?;
            let puts = run_threads("neighbour", args.neighbours, &stop, |t| {
                if self.niced {
                    device::nice_this_thread(19)?;
                }
                let _cpu = device::OnLastCpu::pin(args.device && args.pin_cores)?;
                let tenant = &tenants[t + 1];
                let mut rng = SmallRng::seed_from_u64(mix(args.seed, 100 + t as u64));
                let mut gen = self.values.generator(&mut rng);
                let mut batch_keys = vec![vec![0u8; keys.size()]; batch as usize];
                let sched = schedstat::Own::start();
                let phase = tenant_loop(&hidden, &stop, span.div_ceil(batch), || {
                    for k in &mut batch_keys {
                        keys.write(rng.gen_range(0..span), k);
                    }
                    if batch == 1 {
                        let start = Instant::now();
                        db.put_tenant(tenant, &batch_keys[0], gen.next())?;
                        return Ok(start.elapsed());
                    }
                    let values: Vec<Vec<u8>> = (0..batch).map(|_| gen.next().to_vec()).collect();
                    let pairs: Vec<(&[u8], &[u8])> = batch_keys
                        .iter()
                        .zip(&values)
                        .map(|(k, v)| (k.as_slice(), v.as_slice()))
                        .collect();
                    let start = Instant::now();
                    db.put_many_tenant(tenant, &pairs)?;
                    Ok(start.elapsed())
                })?;
                Ok((phase, sched.finish()))
            });
            done.store(true, Ordering::Relaxed);
            let victim = victim
                .join()
                .map_err(|_| anyhow::anyhow!("the victim panicked"))??;
            let (puts, wall) = puts?;
            let n: u64 = puts.iter().map(|(p, _)| p.ops).sum::<u64>() * batch;
            let mut neighbours = BTreeMap::new();
            for (_, t) in puts {
                schedstat::add(&mut neighbours, "neighbour", t);
            }
            Ok(NoisyOut {
                victim,
                puts: n,
                puts_per_sec: n as f64 / wall.as_secs_f64().max(1e-9),
                neighbours,
            })
        })
    }
}

/// What the noisy phase measured: the victim's gets, the neighbours' puts and puts/s, and
/// their threads' scheduling (they end before the phase's last look at the process).
struct NoisyOut {
    victim: VictimGets,
    puts: u64,
    puts_per_sec: f64,
    neighbours: BTreeMap<String, ThreadTimes>,
}

/// The victim's gets of one phase, and the misses among them.
struct VictimGets {
    phase: TenantPhase,
    misses: u64,
    /// The victim thread's scheduling over its gets.
    sched: ThreadTimes,
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
    if args.victim_nice != 0 {
        device::nice_this_thread(args.victim_nice)?;
    }
    let _cpu = device::OnLastCpu::pin(args.device && args.pin_cores)?;
    let mut rng = SmallRng::seed_from_u64(mix(args.seed, salt));
    let mut key = vec![0u8; keys.size()];
    let mut latency = Histogram::new();
    let (mut ops, mut misses) = (0, 0);
    let sched = schedstat::Own::start();
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
    let sched = sched.finish();
    Ok(VictimGets {
        phase,
        misses,
        sched,
    })
}

/// What a phase measured: its result, the change of the victim's namespace counters (the
/// embedded engine) and the victim's `shares_served` at its end (the device).
struct Measured<T> {
    out: T,
    delta: Option<NamespaceStats>,
    shares: Option<serde_json::Value>,
    threads: BTreeMap<String, ThreadTimes>,
}

/// Runs `body` between two snapshots of the victim's namespace counters.
fn measured<T>(
    db: &dyn BenchDb,
    dev: Option<&DeviceDb>,
    victim: &TenantHandle,
    body: impl FnOnce(&AtomicBool) -> Result<T>,
) -> Result<Measured<T>> {
    let before = db.tenant_stats(victim)?;
    let stop = AtomicBool::new(false);
    let sched = schedstat::Snapshot::take();
    let out = body(&stop)?;
    let threads = schedstat::Snapshot::take().since(&sched);
    let after = db.tenant_stats(victim)?;
    let delta = match (before, after) {
        (Some(b), Some(a)) => Some(ns_delta(&b, &a)),
        _ => None,
    };
    let shares = dev.map(|d| d.tenant_shares_json(victim)).transpose()?;
    Ok(Measured {
        out,
        delta,
        shares,
        threads,
    })
}

fn phase_doc(
    name: &str,
    m: Measured<VictimGets>,
    neighbour_puts: u64,
    neighbour_puts_per_sec: f64,
) -> NoisyPhase {
    let (gets, delta) = (&m.out, &m.delta);
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
        victim_shares_served: m.shares,
        threads: {
            let mut threads = m.threads;
            threads.insert("victim".into(), m.out.sched);
            threads
        },
    }
}

#[cfg(test)]
mod tests;
