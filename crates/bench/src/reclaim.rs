//! `cerberus-bench reclaim --tenants T --num-per-tenant K --layout per_namespace|baseline`:
//! removing one tenant and getting its space back (the Cerberus paper's Destroy, section 4.5).
//!
//! T tenants each put K random keys with values of `--value-size` bytes into a Cerberus
//! database on real files; the database is flushed and settled, and its files' bytes are
//! counted. Then tenant 0 goes: with per-namespace trees by `destroy_namespace` (its tables
//! go at once, its value-log records become garbage), in the namespace-unaware baseline (one
//! namespace, keys suffixed by the tenant, as `multitenant --layout baseline`) by deleting
//! each of its keys, the only way a tenant leaves a device without namespaces. Then the space
//! is reclaimed: flush, compactions, a full compaction and value-log GC until it collects
//! nothing more; the files are counted again. Every other tenant's sampled keys must still
//! read back their values, and tenant 0's must be gone; else the run fails.

use anyhow::{bail, Context, Result};
use cerberus_engine::{Db, Namespace, Options, Readable, WriteBatch};
use clap::Parser;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench reclaim",
    about = "Removes a tenant and reclaims its space"
)]
struct Args {
    /// Tenants (at least 2: one goes, the others are checked).
    #[arg(long, default_value_t = 4)]
    tenants: usize,
    /// Keys each tenant puts.
    #[arg(long, default_value_t = 50_000)]
    num_per_tenant: u64,
    /// Bytes of each value.
    #[arg(long, default_value_t = 1024)]
    value_size: usize,
    /// per_namespace (Destroy) or baseline (one namespace: the tenant's keys deleted).
    #[arg(long, default_value = "per_namespace")]
    layout: String,
    /// Database directory (default: a temporary one, deleted at the end).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Seed of the keys and values.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Writes the result as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Puts per write batch.
const BATCH: u64 = 1_000;
/// Keys of each tenant read back after the removal.
const CHECKED: u64 = 200;
/// GC passes at most (each collects what the previous one's rewrites left).
const GC_PASSES: usize = 4;

#[derive(Serialize)]
struct ReclaimDoc {
    layout: String,
    tenants: usize,
    num_per_tenant: u64,
    value_size: usize,
    /// Bytes of the database's files once filled and settled.
    disk_bytes_before: u64,
    /// After the removal and the reclamation.
    disk_bytes_after: u64,
    /// Seconds the removal took (Destroy, or the deletes).
    remove_secs: f64,
    /// Seconds the reclamation took (flush, compactions, GC).
    reclaim_secs: f64,
    /// What was freed over one tenant's share of the files before (1.0: all of it).
    reclaimed_share: f64,
    gc_bytes_reclaimed: u64,
    keys_checked: u64,
}

pub fn main(args: Vec<OsString>) -> Result<()> {
    let args = Args::parse_from(args);
    if args.tenants < 2 || args.num_per_tenant == 0 {
        bail!("--tenants must be at least 2 and --num-per-tenant at least 1");
    }
    let per_ns = match args.layout.as_str() {
        "per_namespace" => true,
        "baseline" => false,
        other => bail!("--layout is per_namespace or baseline, not {other}"),
    };
    let tmp;
    let dir = match &args.db {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().context("making a temporary directory")?;
            tmp.path().join("db")
        }
    };
    let db = Db::open(&dir, Options::default())
        .with_context(|| format!("opening cerberus at {}", dir.display()))?;
    let spaces: Vec<Namespace> = match per_ns {
        true => (0..args.tenants)
            .map(|t| db.create_namespace(&format!("tenant{t}")))
            .collect::<Result<_, _>>()?,
        false => vec![db.default_namespace()],
    };
    let space = |t: usize| &spaces[if per_ns { t } else { 0 }];
    let key = |t: usize, k: u64| tenant_key(per_ns, t, k);
    for t in 0..args.tenants {
        let mut i = 0;
        while i < args.num_per_tenant {
            let mut batch = WriteBatch::new();
            for k in i..(i + BATCH).min(args.num_per_tenant) {
                batch.put(key(t, k), value(args.seed, t, k, args.value_size));
            }
            space(t).write(batch)?;
            i += BATCH;
        }
    }
    db.flush()?;
    db.wait_for_compactions()?;
    let before = disk_bytes(&dir)?;

    let began = Instant::now();
    if per_ns {
        db.destroy_namespace(spaces[0].id())?;
    } else {
        let mut i = 0;
        while i < args.num_per_tenant {
            let mut batch = WriteBatch::new();
            for k in i..(i + BATCH).min(args.num_per_tenant) {
                batch.delete(key(0, k));
            }
            spaces[0].write(batch)?;
            i += BATCH;
        }
    }
    let remove_secs = began.elapsed().as_secs_f64();

    let began = Instant::now();
    let gc_bytes = reclaim(&db)?;
    let reclaim_secs = began.elapsed().as_secs_f64();
    let after = disk_bytes(&dir)?;
    let checked = check(&db, &args, per_ns, &spaces)?;
    db.close()?;

    let share = before as f64 / args.tenants as f64;
    let doc = ReclaimDoc {
        layout: args.layout.clone(),
        tenants: args.tenants,
        num_per_tenant: args.num_per_tenant,
        value_size: args.value_size,
        disk_bytes_before: before,
        disk_bytes_after: after,
        remove_secs,
        reclaim_secs,
        reclaimed_share: (before as f64 - after as f64) / share,
        gc_bytes_reclaimed: gc_bytes,
        keys_checked: checked,
    };
    println!(
        "reclaim {}: {} tenants x {} keys: {:.1} MB before, {:.1} MB after; removal {:.3} s, \
         reclamation {:.3} s; {:.0} % of a tenant's share freed; {} keys checked",
        doc.layout,
        doc.tenants,
        doc.num_per_tenant,
        before as f64 / 1e6,
        after as f64 / 1e6,
        remove_secs,
        reclaim_secs,
        doc.reclaimed_share * 100.0,
        checked
    );
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Flush, compactions, a full compaction, then value-log GC until it collects nothing;
/// returns the bytes GC collected.
fn reclaim(db: &Db) -> Result<u64> {
    db.flush()?;
    db.wait_for_compactions()?;
    db.compact_all()?;
    db.wait_for_compactions()?;
    let mut gc_bytes = 0;
    for _ in 0..GC_PASSES {
        let g = db.gc_value_log()?;
        gc_bytes += g.bytes_reclaimed;
        if g.bytes_reclaimed == 0 {
            break;
        }
    }
    db.wait_for_compactions()?;
    Ok(gc_bytes)
}

/// The other tenants keep every value (sampled); tenant 0 is gone. Returns the keys read.
fn check(db: &Db, args: &Args, per_ns: bool, spaces: &[Namespace]) -> Result<u64> {
    let space = |t: usize| &spaces[if per_ns { t } else { 0 }];
    let key = |t: usize, k: u64| tenant_key(per_ns, t, k);
    let step = (args.num_per_tenant / CHECKED).max(1);
    let mut checked = 0;
    for t in 1..args.tenants {
        for k in (0..args.num_per_tenant).step_by(step as usize) {
            let got = space(t).get(&key(t, k))?;
            if got.as_deref() != Some(&value(args.seed, t, k, args.value_size)[..]) {
                bail!("tenant {t}'s key {k} did not read back after tenant 0 was removed");
            }
            checked += 1;
        }
    }
    if per_ns {
        if db
            .list_namespaces()
            .iter()
            .any(|n| n.nsid == spaces[0].id())
        {
            bail!("the destroyed namespace is still listed");
        }
    } else if space(0).get(&key(0, 0))?.is_some() {
        bail!("tenant 0's key 0 is still there after its deletes");
    }
    Ok(checked)
}

/// Tenant `t`'s key `k`: the same bytes in its own namespace, suffixed by the tenant in the
/// baseline's one namespace.
fn tenant_key(per_ns: bool, t: usize, k: u64) -> Vec<u8> {
    let mut key = format!("{:016x}", k.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes();
    if !per_ns {
        key.extend_from_slice(format!("-{t:04}").as_bytes());
    }
    key
}

/// A value that is random (the value log cannot compress it) and the same for the same key.
fn value(seed: u64, t: usize, k: u64, size: usize) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed ^ ((t as u64) << 48) ^ k);
    (0..size).map(|_| rng.gen()).collect()
}

/// Bytes of every file under `dir` (one background work deletes while this looks counts
/// as gone).
fn disk_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let e = e?;
        let meta = match e.metadata() {
            Ok(m) => m,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err.into()),
        };
        total += if meta.is_dir() {
            disk_bytes(&e.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_tenants_own() {
        assert_eq!(tenant_key(true, 0, 7), tenant_key(true, 3, 7));
        assert_ne!(tenant_key(false, 0, 7), tenant_key(false, 3, 7));
        assert!(tenant_key(false, 3, 7).ends_with(b"-0003"));
        assert_eq!(value(1, 2, 3, 64), value(1, 2, 3, 64));
        assert_ne!(value(1, 2, 3, 64), value(1, 2, 4, 64));
    }
}
