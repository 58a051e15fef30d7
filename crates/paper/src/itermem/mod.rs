//! `cerberus-paper itermem --tables 10000 --iterators 1000 [--json PATH]`: what open
//! iterators hold when the tree has many tables (IterKVSSD's problem: 2.7 MB per iterator from
//! copying the table list).
//!
//! For each asked table count it builds a Cerberus database on real files (a temporary
//! directory, or `--db`) whose tables are small (`--table-bytes`, Options::target_table_bytes),
//! so that a few hundred thousand small keys make thousands of tables: the keys in order,
//! through write batches, then `flush` and `compact_all`, and a wait for background
//! compactions. How many keys make the asked count is measured first on a small database (keys
//! per table after a compaction). Then it opens `--iterators` iterators on the default
//! namespace, each seeked to a random key and advanced once, all held open together, twice:
//! the first pass opens the tables the seeks land in (a table's reader, file and cached index
//! block stay open after it), the second, measured one makes the same seeks over open tables
//! while the first pass's iterators stay open (2 x `--iterators` open at the end).
//! It reports the tables and levels, each iterator's `memory()` (`state` and `buffers`: max,
//! mean, min), the heap bytes each pass allocated (net of what it freed; the second pass's is
//! the iterators' own) and the process's resident memory before and after each pass (which
//! grows less than the heap when the allocator hands out pages it already holds), and its
//! open files before, after the first pass and after one full scan.

mod args;
mod measurement;
mod report;

use anyhow::{bail, Context, Result};
use args::ItermemArgs;
use cerberus_bench::{count_heap, heap_delta, MemorySample};
use cerberus_engine::Readable;
use cerberus_engine::{Db, Iter, Options, ReadOptions, WriteBatch};
use clap::Parser;
use measurement::{Measurement, Summary};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ffi::OsString;
use std::path::Path;
use std::time::Instant;

/// Keys of the database that measures keys per table.
const CALIBRATION_KEYS: u64 = 20_000;
/// Puts per write batch while building.
const BATCH: u64 = 1_000;

/// `cerberus-paper itermem ...`; `args` starts with `itermem` (taken as the program name).
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = ItermemArgs::parse_from(args);
    let counts = parse_counts(&args.tables)?;
    check(&args)?;
    let temp = match &args.db {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("cerberus-itermem-")
                .tempdir()
                .context("creating a temporary directory")?,
        ),
    };
    let root = match (&args.db, &temp) {
        (Some(db), _) => db.clone(),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => unreachable!("a temporary directory when there is no --db"),
    };
    std::fs::create_dir_all(&root).with_context(|| format!("making {}", root.display()))?;
    println!("{}", report::header(&args));
    let per_table = keys_per_table(&args, &root.join("calibration"))?;
    println!("Calibration: {per_table:.1} keys per table");
    let mut out = Vec::new();
    for &tables in &counts {
        let keys = ((tables as f64 * per_table).ceil() as u64).max(1);
        let dir = root.join(format!("t{tables}"));
        let m = measure(&args, &dir, tables, keys)?;
        println!("\n{}", report::text(&m));
        out.push(m);
        if temp.is_some() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if out.len() > 1 {
        println!("\n{}", report::table(&out));
    }
    if let Some(path) = &args.json {
        let doc = report::doc(&args, per_table, &out);
        let text = serde_json::to_string_pretty(&doc)? + "\n";
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn parse_counts(list: &str) -> Result<Vec<usize>> {
    let mut counts = Vec::new();
    for part in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let n: usize = part
            .parse()
            .with_context(|| format!("--tables: not a count: {part:?}"))?;
        if n == 0 {
            bail!("--tables must be at least 1");
        }
        counts.push(n);
    }
    if counts.is_empty() {
        bail!("--tables: no count given");
    }
    Ok(counts)
}

fn check(args: &ItermemArgs) -> Result<()> {
    if args.iterators == 0 {
        bail!("--iterators must be at least 1");
    }
    if args.table_bytes < 256 {
        bail!("--table-bytes must be at least 256");
    }
    if args.key_size < 8 || args.key_size > 255 {
        bail!("--key-size must be between 8 and 255");
    }
    if args.prefetch_degree.is_some_and(|d| d > 4096) {
        bail!("--prefetch-degree must be at most 4096");
    }
    Ok(())
}

fn options(args: &ItermemArgs) -> Options {
    let mut o = Options::default();
    o.target_table_bytes = args.table_bytes;
    o.cache_bytes = args.cache_bytes.unwrap_or(o.cache_bytes);
    o
}

/// Key `i`, `size` bytes of zero-padded decimal (byte order is numeric order).
fn key(i: u64, size: usize) -> Vec<u8> {
    format!("{i:0size$}").into_bytes()
}

fn value(i: u64, size: usize) -> Vec<u8> {
    let seed = i.to_le_bytes();
    (0..size).map(|j| b'a' + seed[j % 8] % 26).collect()
}

/// Tables of the whole database (all levels and runs).
fn table_count(db: &Db) -> usize {
    let s = db.stats();
    s.levels.iter().map(|l| l.tables).sum::<usize>() + s.runs.tables
}

/// Writes keys `0..keys` (those not there yet), then flush, compact_all and a wait for
/// background compactions.
fn build(db: &Db, args: &ItermemArgs, keys: u64) -> Result<()> {
    let ns = db.default_namespace();
    let last = key(keys - 1, args.key_size);
    if ns.get(&last)?.is_some() {
        return Ok(()); // a --db that has them
    }
    let mut i = 0;
    while i < keys {
        let mut batch = WriteBatch::new();
        for k in i..(i + BATCH).min(keys) {
            batch.put(key(k, args.key_size), value(k, args.value_size));
        }
        ns.write(batch)?;
        i += BATCH;
    }
    db.flush()?;
    db.compact_all()?;
    db.wait_for_compactions()?;
    Ok(())
}

/// Keys per table after a compaction, measured on a small database.
fn keys_per_table(args: &ItermemArgs, dir: &Path) -> Result<f64> {
    let _ = std::fs::remove_dir_all(dir);
    let db = Db::open(dir, options(args))
        .with_context(|| format!("opening cerberus at {}", dir.display()))?;
    build(&db, args, CALIBRATION_KEYS)?;
    let tables = table_count(&db);
    db.close()?;
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
    if tables == 0 {
        bail!("the calibration database has no tables");
    }
    Ok(CALIBRATION_KEYS as f64 / tables as f64)
}

/// Entries in `/proc/self/fd` (None off Linux).
fn open_files() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count())
}

/// Builds the database of `keys` keys in `dir` and measures `args.iterators` iterators on it.
fn measure(args: &ItermemArgs, dir: &Path, tables_asked: usize, keys: u64) -> Result<Measurement> {
    let db = Db::open(dir, options(args))
        .with_context(|| format!("opening cerberus at {}", dir.display()))?;
    let t0 = Instant::now();
    build(&db, args, keys)?;
    let build_seconds = t0.elapsed().as_secs_f64();
    let stats = db.stats();
    let mut levels: Vec<(String, usize, u64)> = stats
        .levels
        .iter()
        .enumerate()
        .filter(|(_, l)| l.tables > 0)
        .map(|(i, l)| (format!("L{i}"), l.tables, l.bytes))
        .collect();
    if stats.runs.tables > 0 {
        levels.push(("runs".into(), stats.runs.tables, stats.runs.bytes));
    }
    let ns = db.default_namespace();
    let opts = ReadOptions {
        prefetch_degree: args
            .prefetch_degree
            .unwrap_or(cerberus_engine::DEFAULT_PREFETCH_DEGREE),
        ..ReadOptions::default()
    };
    let targets: Vec<Vec<u8>> = {
        let mut rng = SmallRng::seed_from_u64(args.seed);
        (0..args.iterators)
            .map(|_| key(rng.gen_range(0..keys), args.key_size))
            .collect()
    };
    let open_all = || -> Result<Vec<Iter>> {
        let mut iters = Vec::with_capacity(targets.len());
        for target in &targets {
            let mut it = ns.iter(opts.clone())?;
            it.seek(target)?;
            it.next()
                .context("an iterator seeked into the key space found nothing")??;
            iters.push(it);
        }
        Ok(iters)
    };
    // First pass: the iterators open the tables they land in (each table's reader, file and
    // index block stay open and cached after them).
    let open_files_before = open_files();
    let cold_before = MemorySample::now();
    count_heap(true);
    let t0 = Instant::now();
    let iters = open_all();
    let cold_seconds = t0.elapsed().as_secs_f64();
    let cold_heap = heap_delta();
    count_heap(false);
    let iters = iters?;
    let cold_after = MemorySample::now();
    let open_files_after = open_files();
    // Second pass, the measured one, while the first pass's iterators stay open (so that the
    // allocator cannot hand their memory out again): the same seeks over tables already open,
    // so the growth is the iterators' own.
    let before = MemorySample::now();
    count_heap(true);
    let t0 = Instant::now();
    let measured = open_all();
    let open_seconds = t0.elapsed().as_secs_f64();
    let heap = heap_delta();
    count_heap(false);
    let measured = measured?;
    let after = MemorySample::now();
    let mem: Vec<_> = measured.iter().map(Iter::memory).collect();
    let state: Vec<usize> = mem.iter().map(|m| m.state).collect();
    let buffers: Vec<usize> = mem.iter().map(|m| m.buffers).collect();
    drop(measured);
    drop(iters);
    let after_drop = MemorySample::now();
    // One full keys-only scan opens every table.
    let scan_opts = ReadOptions {
        keys_only: true,
        ..ReadOptions::default()
    };
    let mut scanned = 0u64;
    for entry in ns.iter(scan_opts)? {
        entry?;
        scanned += 1;
    }
    if scanned != keys {
        bail!("a full scan found {scanned} keys of {keys}");
    }
    let open_files_full_scan = open_files();
    let m = Measurement {
        tables_asked,
        keys,
        iterators: args.iterators,
        tables: table_count(&db),
        levels,
        build_seconds,
        cold_seconds,
        open_seconds,
        state: Summary::of(&state),
        buffers: Summary::of(&buffers),
        cold_before,
        cold_after,
        before,
        after,
        after_drop,
        open_files_before,
        open_files_after,
        open_files_full_scan,
        cold_heap,
        heap,
    };
    db.close()?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> ItermemArgs {
        ItermemArgs::try_parse_from(std::iter::once("itermem").chain(list.iter().copied())).unwrap()
    }

    #[test]
    fn flags_parse_and_are_checked() {
        let a = args(&[]);
        assert_eq!((a.tables.as_str(), a.iterators), ("10000", 1000));
        assert_eq!(parse_counts("100, 1000,10000").unwrap(), [100, 1000, 10000]);
        assert!(parse_counts("0").is_err());
        assert!(parse_counts("x").is_err());
        assert!(parse_counts(",").is_err());
        assert!(check(&args(&["--iterators", "0"])).is_err());
        assert!(check(&args(&["--table-bytes", "10"])).is_err());
        assert!(check(&args(&["--prefetch-degree", "8"])).is_ok());
        assert_eq!(key(42, 8), b"00000042");
        assert_eq!(value(7, 10).len(), 10);
        let s = Summary::of(&[3, 1, 2]);
        assert_eq!((s.max, s.min, s.mean), (3, 1, 2.0));
        assert_eq!(Summary::of(&[]), Summary::default());
    }

    #[test]
    fn a_small_tree_is_measured() {
        let dir = tempfile::tempdir().unwrap();
        let a = args(&[
            "--tables",
            "40",
            "--iterators",
            "50",
            "--table-bytes",
            "1024",
        ]);
        let per = keys_per_table(&a, &dir.path().join("c")).unwrap();
        assert!(per > 1.0, "{per}");
        let keys = (40.0 * per).ceil() as u64;
        let m = measure(&a, &dir.path().join("t"), 40, keys).unwrap();
        assert!(m.tables >= 30 && m.tables <= 60, "{m:?}");
        assert_eq!(m.levels.iter().map(|l| l.1).sum::<usize>(), m.tables);
        assert!(m.state.max > 0 && m.state.max < 4096, "{m:?}");
        assert!(m.buffers.max > 0, "{m:?}");
        let doc = report::doc(&a, per, std::slice::from_ref(&m));
        let v = serde_json::to_value(doc).unwrap();
        assert_eq!(v["runs"][0]["tables"], m.tables);
        assert_eq!(v["config"]["iterators"], 50);
        assert!(v["runs"][0]["state_bytes"]["max"].is_number());
        let text = report::text(&m);
        assert!(text.contains("state"), "{text}");
    }
}
