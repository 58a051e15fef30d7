//! Peak resident memory of value-log GC: `gc_rss DIR [--gc] [--mib N]` loads about N MiB of
//! 1 KiB values (default 1024) into a new database in DIR, overwrites every other key, flushes,
//! then with `--gc` runs `gc_value_log`, closes, and prints the process's peak resident set
//! (VmHWM) along the way. Run it with and without `--gc` on fresh directories (and under
//! `/usr/bin/time -v` for "Maximum resident set size"): the difference is what GC costs.
//! `--memtable-mib M` sets `Options::memtable_bytes` (GC's rewrites fill memtables as writes
//! do), `--cache-mib C` `Options::cache_bytes` (its lookups fill the block cache as gets do). `gc_rss DIR --verify [--mib N]` then opens the database again and checks the values (in a
//! process of its own: reads through memory maps would add mapped pages to the figure).

use cerberus_engine::Readable;
use cerberus_engine::{Db, Options, WriteBatch};
use std::time::Instant;

/// A `/proc/self/status` figure in KiB (`VmHWM`: the peak resident set).
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn memory(stage: &str) {
    println!(
        "{stage}: peak RSS {} KiB; now {} KiB anonymous, {} KiB of mapped files",
        status_kib("VmHWM:"),
        status_kib("RssAnon:"),
        status_kib("RssFile:")
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    let (mut gc, mut verify, mut mib) = (false, false, 1024u64);
    let mut memtable_bytes = Options::default().memtable_bytes;
    let mut cache_bytes = Options::default().cache_bytes;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--gc" => gc = true,
            "--verify" => verify = true,
            "--mib" => mib = args.next().ok_or("--mib needs a number")?.parse()?,
            "--cache-mib" => {
                let n: u64 = args.next().ok_or("--cache-mib needs a number")?.parse()?;
                cache_bytes = n << 20;
            }
            "--memtable-mib" => {
                let n: usize = args
                    .next()
                    .ok_or("--memtable-mib needs a number")?
                    .parse()?;
                memtable_bytes = n << 20;
            }
            _ => dir = Some(a),
        }
    }
    let dir = dir.ok_or("usage: gc_rss DIR [--gc | --verify] [--mib N]")?;
    let mut opts = Options::default();
    // Only gc_value_log collects: the run without --gc must not collect by itself.
    opts.vlog_gc_dead_ratio = 0.0;
    opts.memtable_bytes = memtable_bytes;
    opts.cache_bytes = cache_bytes;
    let db = Db::open(&dir, opts)?;
    let ns = db.default_namespace();
    let keys = mib * 1024;
    let value = |k: u64, round: u64| {
        let mut v = format!("{k:016}-{round}-").into_bytes();
        v.resize(1024, b'a' + (k % 26) as u8);
        v
    };
    if verify {
        // Every other key has its round-1 value.
        for k in 0..keys {
            let got = ns.get(format!("key{k:013}").as_bytes())?;
            if got.as_deref() != Some(&value(k, u64::from(k % 2 == 0))[..]) {
                return Err(format!("key {k} reads wrong").into());
            }
        }
        println!("{keys} keys read back right");
        return Ok(db.close()?);
    }
    let t = Instant::now();
    for round in 0..2 {
        let mut batch = WriteBatch::new();
        // Round 1 overwrites every other key.
        for k in (0..keys).filter(|k| round == 0 || k % 2 == 0) {
            batch.put(format!("key{k:013}"), value(k, round));
            if batch.len() == 1000 {
                ns.write(std::mem::take(&mut batch))?;
            }
        }
        if !batch.is_empty() {
            ns.write(batch)?;
        }
    }
    db.flush()?;
    let stats = db.stats();
    println!(
        "loaded {keys} keys, {:.0} MiB of value log in {} segments, in {:.1} s",
        stats.vlog_bytes as f64 / (1 << 20) as f64,
        stats.vlog_segments,
        t.elapsed().as_secs_f64(),
    );
    memory("loaded");
    if gc {
        let t = Instant::now();
        let g = db.gc_value_log()?;
        println!(
            "gc: {} segments scanned, {} deleted, {} MiB rewritten, in {:.1} s",
            g.segments_scanned,
            g.segments_deleted,
            g.bytes_rewritten >> 20,
            t.elapsed().as_secs_f64()
        );
        memory("after gc");
    }
    db.close()?;
    memory("closed");
    Ok(())
}
