//! Timings of queries that need little of each record: `query_timing DIR [--records N]`
//! loads N (default 50,000) JSON records of about 1 KiB into a new database in DIR, with a
//! classic index on `dist` (a number, null in 1 record of 20), flushes, waits for compactions,
//! then runs each query 3 times and prints each time and the median:
//! - `avg(dist)` over every record (a scan), and over `dist >= 0` (through the index), and
//!   `avg(delay)` over `dist >= 0` (through the index, each record read for `delay`);
//! - `count` of a range of `dist` through the index;
//! - the pks of a range of `dist` through the index (about 10,000 records): a find of whole
//!   records, and a keys-only find (`FindOptions::keys_only`, from the index entries alone).
//!
//! The whole-record find runs first, so that no query before it warmed what it reads.
//!
//! Build it with `cargo run --release -p cerberus-engine --example query_timing -- DIR`. DIR
//! must not hold a database; delete it afterwards.

use cerberus_engine::Readable;
use cerberus_engine::{Aggregate, Db, Filter, FindOptions, IndexKind, Namespace, Options};
use std::time::Instant;

/// A record of about 1 KiB: a few attributes a query reads, and padding it skips.
fn record(i: u64) -> Vec<u8> {
    let dist = match i % 20 {
        0 => "null".to_string(),
        _ => ((i * 7919) % 5000).to_string(),
    };
    let pad: String = (0..19)
        .map(|j| format!("\"note{j}\": \"{:032x}\", ", i.wrapping_mul(j + 1)))
        .collect();
    format!(
        "{{\"carrier\": \"C{}\", \"flight\": {i}, {pad}\"origin\": \"O{}\", \"dist\": {dist}, \"delay\": {}}}",
        i % 13,
        i % 97,
        (i % 300) as f64 / 4.0 - 10.0
    )
    .into_bytes()
}

/// Runs `f` 3 times; prints each time in ms and the median, with what `f` returned.
fn time(what: &str, mut f: impl FnMut() -> String) {
    let mut ms = Vec::new();
    let mut said = String::new();
    for _ in 0..3 {
        let t = Instant::now();
        said = f();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let runs: Vec<String> = ms.iter().map(|m| format!("{m:.1}")).collect();
    ms.sort_by(f64::total_cmp);
    println!(
        "{what}: median {:.1} ms (runs {}) -> {said}",
        ms[1],
        runs.join(", ")
    );
}

fn find_all(ns: &Namespace, filter: &Filter, opts: FindOptions) -> (usize, u64, u64) {
    let mut opts = opts;
    let (mut n, mut reads, mut lookups) = (0, 0, 0);
    loop {
        let page = ns.find(filter, &opts).expect("find");
        n += page.value.len();
        reads += page.stats.value_reads;
        lookups += page.stats.primary_lookups;
        match page.continuation {
            Some(c) => opts.continuation = Some(c),
            None => return (n, reads, lookups),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: query_timing DIR [--records N]")?;
    let mut records = 50_000u64;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--records" => records = args.next().ok_or("--records needs N")?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let db = Db::open(&dir, Options::default())?;
    let ns = db.create_namespace("flights")?;
    ns.create_index("dist", IndexKind::Classic)?;
    let t = Instant::now();
    let mut batch = cerberus_engine::WriteBatch::new();
    let mut bytes = 0;
    for i in 0..records {
        let v = record(i);
        bytes += v.len();
        batch.put(format!("f{i:08}").into_bytes(), v);
        if batch.len() == 1000 {
            ns.write(std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        ns.write(batch)?;
    }
    db.flush()?;
    db.wait_for_compactions()?;
    println!(
        "loaded {records} records, {} bytes each on average, in {:.1} s",
        bytes / records as usize,
        t.elapsed().as_secs_f64()
    );

    // First, so that no query before it has read the records it reads.
    // About a fifth of the records: dist is spread over 0..5000.
    let range = Filter::parse_str(r#"{"dist": {"$gte": 1000, "$lt": 2000}}"#)?;
    time("find whole records, 1000 <= dist < 2000", || {
        let (n, reads, lookups) = find_all(&ns, &range, FindOptions::default());
        format!("{n} records ({reads} values read, {lookups} lookups)")
    });
    let every = Filter::default();
    let avg = Aggregate::parse("avg", Some("dist"))?;
    time("avg(dist), no filter (scan)", || {
        let r = ns.aggregate(&every, &avg).expect("avg");
        format!("{} ({} values read)", r.value, r.stats.value_reads)
    });
    let nonneg = Filter::parse_str(r#"{"dist": {"$gte": 0}}"#)?;
    time("avg(dist), dist >= 0 (index)", || {
        let r = ns.aggregate(&nonneg, &avg).expect("avg");
        format!("{} ({} values read)", r.value, r.stats.value_reads)
    });
    let avg_delay = Aggregate::parse("avg", Some("delay"))?;
    time("avg(delay), dist >= 0 (index, each record read)", || {
        let r = ns.aggregate(&nonneg, &avg_delay).expect("avg");
        format!("{} ({} values read)", r.value, r.stats.value_reads)
    });
    time("count, 1000 <= dist < 2000 (index)", || {
        let r = ns.aggregate(&range, &Aggregate::Count).expect("count");
        format!("{} ({} values read)", r.value, r.stats.value_reads)
    });
    let keys_only = FindOptions {
        keys_only: true,
        ..FindOptions::default()
    };
    time("find keys only, 1000 <= dist < 2000", || {
        let (n, reads, lookups) = find_all(&ns, &range, keys_only.clone());
        format!("{n} records ({reads} values read, {lookups} lookups)")
    });
    db.close()?;
    Ok(())
}
