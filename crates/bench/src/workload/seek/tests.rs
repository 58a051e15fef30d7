use super::*;
use crate::histogram::Histogram;
use crate::report::{self, PhaseReport, RunConfig, RunReport};
use crate::workload::run::run_phase;
use crate::workload::ValuePool;
use cerberus_bench_engines::{self as engine, Engine, LayoutArg, OpenConfig};
use clap::Parser;
use std::collections::BTreeMap;

pub(crate) type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const NUM: u64 = 3000;

pub(crate) fn open_config(path: &std::path::Path) -> OpenConfig {
    OpenConfig {
        cache_bytes: 1 << 20,
        ..OpenConfig::at(path, LayoutArg::PerNamespace)
    }
}

pub(crate) fn bench_config(threads: usize, scan: ScanConfig) -> BenchConfig {
    BenchConfig {
        num: NUM,
        key_size: 16,
        value_size: 200,
        threads,
        pipeline: 1,
        seed: 5,
        compression_ratio: 0.5,
        scan: Some(scan),
    }
}

/// Two keys in three of 0..NUM, values below and above Cerberus's inline threshold, written
/// in two rounds around a compaction (so that scans merge tables and the memtable), some
/// overwritten in the second: what the database holds.
pub(crate) fn fill(db: &dyn BenchDb) -> Model {
    fill_with(db, true)
}

/// As [`fill`], with the compaction between the rounds only if `compact` (the device has no
/// compaction command).
pub(crate) fn fill_with(db: &dyn BenchDb, compact: bool) -> Model {
    let keys = KeyFormat::new(16, NUM).unwrap();
    let mut model = Model::new();
    let mut put = |i: u64, len: usize| {
        let key = keys.key(i);
        let value = vec![b'a' + (i % 26) as u8; len];
        db.put(&key, &value).unwrap();
        model.insert(key, value);
    };
    for i in (0..NUM).filter(|i| i % 3 != 0) {
        put(i, if i % 5 == 0 { 20 } else { 200 });
    }
    if compact {
        db.compact().unwrap();
    }
    for i in (0..NUM).filter(|i| i % 3 != 0 && i % 7 == 0) {
        put(i, if i % 2 == 0 { 10 } else { 300 });
    }
    model
}

/// What a seekrandom phase should return, from the model: `(found, entries, bytes)`.
pub(crate) fn expected(model: &Model, config: &BenchConfig, index: usize) -> (u64, u64, u64) {
    let scan = config.scan.unwrap();
    let keys = KeyFormat::new(config.key_size, config.num).unwrap();
    let (mut found, mut entries, mut bytes) = (0, 0, 0);
    for (t, (from, to)) in split(scan.seeks, config.threads).into_iter().enumerate() {
        let mut rng = seek_rng(config, index, t);
        for _ in from..to {
            let key = keys.key(rng.gen_range(0..config.num));
            found += u64::from(model.contains_key(&key));
            for (k, v) in model.range(key..).take(scan.scan_length) {
                entries += 1;
                bytes += (k.len() + if scan.keys_only { 0 } else { v.len() }) as u64;
            }
        }
    }
    (found, entries, bytes)
}

/// Runs seekrandom as phase 1 and checks it against the model.
pub(crate) fn check_seekrandom(db: &dyn BenchDb, model: &Model, threads: usize, scan: ScanConfig) {
    let config = bench_config(threads, scan);
    let values = ValuePool::new(config.value_size, 0.5, 1);
    let o = run_phase(db, Workload::SeekRandom, 1, &config, &values).unwrap();
    let (found, entries, bytes) = expected(model, &config, 1);
    let s = o.scan.as_ref().unwrap();
    assert_eq!(o.ops, scan.seeks, "{scan:?}");
    assert_eq!(o.found, Some(found), "{scan:?}");
    assert_eq!(s.entries, entries, "{scan:?}");
    assert_eq!(o.bytes, bytes, "{scan:?}");
    assert_eq!(o.latency.count(), scan.seeks);
    assert_eq!(s.seek_latency.count(), scan.seeks);
    // Every entry but each seek's first is a next (no seek here lands past the last key).
    assert_eq!(s.next_latency.count(), entries - scan.seeks, "{scan:?}");
    assert!(o.mb_per_sec() > 0.0);
    assert_eq!(s.config, scan);
}

pub(crate) fn scan(
    seeks: u64,
    scan_length: usize,
    keys_only: bool,
    prefetch_degree: usize,
) -> ScanConfig {
    ScanConfig {
        seeks,
        scan_length,
        keys_only,
        prefetch_degree,
        index_prefetch: prefetch_degree.is_multiple_of(2),
        readahead_bytes: 0,
    }
}

#[test]
fn seekrandom_on_cerberus_returns_what_the_database_holds() {
    let dir = tempfile::tempdir().unwrap();
    let db = engine::open(Engine::Cerberus, &open_config(dir.path())).unwrap();
    let model = fill(&*db);
    // A direct count: one cursor over everything yields the model.
    let mut cursor = db.cursor(&CursorOptions::default()).unwrap();
    cursor.seek(b"").unwrap();
    let mut all = Model::new();
    while let Some((k, v)) = cursor.next().unwrap() {
        all.insert(k.to_vec(), v.to_vec());
    }
    drop(cursor);
    assert_eq!(all.len(), 2000);
    assert!(all == model);

    check_seekrandom(&*db, &model, 1, scan(300, 50, false, 0));
    check_seekrandom(&*db, &model, 3, scan(301, 7, false, 4));
    check_seekrandom(&*db, &model, 2, scan(200, 100, true, 0));
    check_seekrandom(&*db, &model, 1, scan(50, 1, false, 16));
    db.close().unwrap();
}

#[test]
fn a_seek_past_the_last_key_returns_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = engine::open(Engine::Cerberus, &open_config(dir.path())).unwrap();
    db.put(b"0000000000000001", b"v").unwrap();
    let mut cursor = db.cursor(&CursorOptions::default()).unwrap();
    cursor.seek(b"0000000000000002").unwrap();
    assert!(cursor.next().unwrap().is_none());
    cursor.seek(b"0").unwrap();
    assert_eq!(
        cursor.next().unwrap(),
        Some((&b"0000000000000001"[..], &b"v"[..]))
    );
    assert!(cursor.next().unwrap().is_none());
}

#[test]
fn engines_without_an_iterator_say_so() {
    let db = crate::workload::run::tests::MemDb::default();
    let err = db
        .cursor(&CursorOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no iterator"), "{err}");
    let config = bench_config(1, scan(10, 10, false, 0));
    let values = ValuePool::new(config.value_size, 0.5, 1);
    assert!(run_phase(&db, Workload::SeekRandom, 0, &config, &values).is_err());
}

#[test]
fn seekrandom_flags_and_engines_parse() {
    assert_eq!(
        crate::cli::parse_engines("cerberus,rocksdb,rocksdb-blob").unwrap(),
        vec![Engine::Cerberus, Engine::RocksDb, Engine::RocksDbBlob]
    );
    let a = crate::cli::Args::try_parse_from([
        "cerberus-bench",
        "fillrandom,seekrandom",
        "--seeks",
        "2000",
        "--scan-length",
        "50",
        "--prefetch-degree",
        "4",
        "--keys-only",
    ])
    .unwrap();
    let scan = a.seek.config(&Workload::parse_list(&a.workloads).unwrap());
    let scan = scan.unwrap().unwrap();
    assert_eq!((scan.seeks, scan.scan_length), (2000, 50));
    assert_eq!((scan.prefetch_degree, scan.keys_only), (4, true));
    // Refused before anything runs: seek flags without seekrandom, seek flags with
    // multitenant.
    let run_err = |args: &[&str]| {
        let a = crate::cli::Args::try_parse_from(args).unwrap();
        crate::runner::run(a).unwrap_err().to_string()
    };
    let err = run_err(&["cerberus-bench", "fillrandom", "--seeks", "5"]);
    assert!(err.contains("seekrandom"), "{err}");
    let err = run_err(&["cerberus-bench", "multitenant", "--prefetch-degree", "2"]);
    assert!(err.contains("seekrandom"), "{err}");
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    seek: SeekArgs,
}

fn parse(args: &[&str]) -> SeekArgs {
    Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
        .unwrap()
        .seek
}

#[test]
fn flags_parse_with_their_defaults_and_only_with_seekrandom() {
    let with = [Workload::FillRandom, Workload::SeekRandom];
    let without = [Workload::FillRandom, Workload::ReadRandom];
    let none = parse(&[]);
    assert!(!none.given());
    assert_eq!(none.config(&without).unwrap(), None);
    assert_eq!(
        none.config(&with).unwrap(),
        Some(scan(
            DEFAULT_SEEKS,
            DEFAULT_SCAN_LENGTH,
            false,
            cerberus_engine::DEFAULT_PREFETCH_DEGREE
        ))
    );
    let a = parse(&[
        "--seeks",
        "2000",
        "--scan-length",
        "10",
        "--keys-only",
        "--prefetch-degree",
        "16",
    ]);
    assert_eq!(a.config(&with).unwrap(), Some(scan(2000, 10, true, 16)));
    for flags in [
        &["--seeks", "5"][..],
        &["--scan-length", "5"],
        &["--keys-only"],
        &["--prefetch-degree", "0"],
    ] {
        let err = parse(flags).config(&without).unwrap_err().to_string();
        assert!(err.contains("seekrandom"), "{flags:?}: {err}");
    }
    for (flags, name) in [
        (&["--seeks", "0"][..], "--seeks"),
        (&["--scan-length", "0"], "--scan-length"),
        (&["--prefetch-degree", "100000"], "--prefetch-degree"),
    ] {
        let err = parse(flags).config(&with).unwrap_err().to_string();
        assert!(err.contains(name), "{err}");
    }
    assert!(Cli::try_parse_from(["t", "--seeks", "-1"]).is_err());
    assert!(Cli::try_parse_from(["t", "--prefetch-degree", "x"]).is_err());
}

fn seek_outcome(engine_delta: bool) -> PhaseReport {
    let mut seek = Histogram::new();
    let mut next = Histogram::new();
    for _ in 0..10 {
        seek.record(20_000);
    }
    for _ in 0..900 {
        next.record(1_500);
    }
    PhaseReport {
        outcome: PhaseOutcome {
            workload: Workload::SeekRandom,
            name: "seekrandom",
            ops: 10,
            found: Some(6),
            writer_ops: None,
            seconds: 0.5,
            thread_seconds: 0.5,
            bytes: 910 * 1040,
            latency: seek.clone(),
            scan: Some(ScanOutcome {
                config: scan(10, 100, false, 4),
                entries: 910,
                seek_latency: seek,
                next_latency: next,
            }),
        },
        delta: engine_delta.then(|| cerberus_engine::DbStats {
            reads: [0, 0, 20, 900, 0, 0],
            ..Default::default()
        }),
    }
}

#[test]
fn json_and_text_have_the_seek_fields() {
    let bench = bench_config(1, scan(10, 100, false, 4));
    let cfg = RunConfig {
        workload: "fillrandom,seekrandom",
        bench: &bench,
        storage: "posix",
        cache_bytes: 0,
        sync: false,
    };
    let fill = || PhaseReport {
        outcome: PhaseOutcome {
            workload: Workload::FillRandom,
            name: "fillrandom",
            ops: 10,
            found: None,
            writer_ops: None,
            seconds: 1.0,
            thread_seconds: 1.0,
            bytes: 100,
            latency: Histogram::new(),
            scan: None,
        },
        delta: None,
    };
    for engine in [Engine::Cerberus, Engine::RocksDbBlob] {
        let run = RunReport {
            engine,
            round: 0,
            phases: vec![fill(), seek_outcome(engine == Engine::Cerberus)],
            stats: serde_json::Value::Null,
        };
        let v = serde_json::to_value(report::run_doc(&run, &cfg)).unwrap();
        let c = &v["config"]["seekrandom"];
        assert_eq!(c["seeks"], 10);
        assert_eq!(c["scan_length"], 100);
        assert_eq!(c["keys_only"], false);
        let p = &v["phases"][1];
        assert_eq!(p["name"], "seekrandom");
        assert_eq!(p["ops"], 10);
        assert_eq!(p["found"], 6);
        assert_eq!(p["entries"], 910);
        assert_eq!(p["entries_per_seek"], 91.0);
        let mb = 910.0 * 1040.0 / 1_048_576.0 / 0.5;
        assert!((p["mb_per_sec"].as_f64().unwrap() - mb).abs() < 1e-9);
        assert_eq!(p["seek_latency_us"]["samples"], 10);
        assert_eq!(p["seek_latency_us"]["mean"], 20.0);
        assert_eq!(p["next_latency_us"]["samples"], 900);
        assert_eq!(p["next_latency_us"]["mean"], 1.5);
        assert!(p["next_latency_us"]["p99"].is_number());
        if engine == Engine::Cerberus {
            assert_eq!(c["prefetch_degree"], 4);
            assert_eq!(p["reads_per_seek"]["value"], 90.0);
            assert_eq!(p["reads_per_seek"]["data"], 2.0);
        } else {
            assert!(c["prefetch_degree"].is_null());
            assert!(p["reads_per_seek"].is_null());
            assert!(p["stats"].is_null());
        }
        // Other phases keep exactly their fields.
        let fill = v["phases"][0].as_object().unwrap();
        let mut keys: Vec<&str> = fill.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "found",
                "latency_us",
                "mb_per_sec",
                "micros_per_op",
                "name",
                "ops",
                "ops_per_sec",
                "seconds",
                "stats",
                "writer_ops",
            ]
        );
        let text = report::phase_lines(&run.phases[1].outcome);
        assert!(text.contains("(6 of 10 found)"), "{text}");
        assert!(text.contains("entries: 910 (91.0 per seek"), "{text}");
        assert!(text.contains("seek latency us: mean 20.00"), "{text}");
        assert!(text.contains("next latency us: mean 1.50"), "{text}");
        let header = report::header(engine, &cfg, std::path::Path::new("/x"));
        assert!(
            header.contains("Seeks:      10, scan length 100"),
            "{header}"
        );
        assert_eq!(
            header.contains("prefetch degree 4"),
            engine == Engine::Cerberus
        );
    }
    // Without seekrandom the config has no seekrandom entry.
    let mut plain = bench.clone();
    plain.scan = None;
    let cfg = RunConfig {
        bench: &plain,
        ..cfg
    };
    let run = RunReport {
        engine: Engine::Cerberus,
        round: 0,
        phases: vec![],
        stats: serde_json::Value::Null,
    };
    let v = serde_json::to_value(report::run_doc(&run, &cfg)).unwrap();
    assert!(v["config"].get("seekrandom").is_none());
    let summary =
        report::cerberus_summary(&cerberus_engine::DbStats::default(), &[seek_outcome(true)]);
    assert!(
        summary.contains("seekrandom: 10 seeks, 910 entries"),
        "{summary}"
    );
    assert!(summary.contains("value 90.00"), "{summary}");
}
