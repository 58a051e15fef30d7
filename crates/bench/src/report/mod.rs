//! Printing results the way db_bench does, Cerberus's counters, and the JSON document.

pub mod measures;
mod seek;

use crate::workload::{BenchConfig, PhaseOutcome};
use cerberus_bench_engines::Engine;
use cerberus_engine::DbStats;
use measures::{latency_doc, latency_line, mib, per, purposes_line, ByPurpose, LatencyDoc};
use serde::Serialize;
use serde_json::Value;

/// One phase with the change of Cerberus's counters over it.
#[derive(Clone)]
pub struct PhaseReport {
    pub outcome: PhaseOutcome,
    /// `after - before` of the engine's counters (Cerberus only).
    pub delta: Option<DbStats>,
}

impl PhaseReport {
    /// The phase without the counters (what the ratio table reads).
    pub fn without_delta(&self) -> PhaseReport {
        PhaseReport {
            outcome: self.outcome.clone(),
            delta: None,
        }
    }
}

/// One engine's run of the whole workload list.
pub struct RunReport {
    pub engine: Engine,
    /// Which of the `--rounds` this run was (0 for the first).
    pub round: usize,
    pub phases: Vec<PhaseReport>,
    /// Whole-run statistics of the engine.
    pub stats: Value,
}

/// What the JSON "config" holds besides the engine.
pub struct RunConfig<'a> {
    pub workload: &'a str,
    pub bench: &'a BenchConfig,
    pub storage: &'a str,
    pub cache_bytes: u64,
    pub sync: bool,
}

/// db_bench's line, e.g.
/// `readrandom   :       3.210 micros/op 311526 ops/sec 0.321 seconds 100000 operations;   341.1 MB/s (63212 of 100000 found)`,
/// and a second one with the latency percentiles.
pub fn phase_lines(o: &PhaseOutcome) -> String {
    let mut line = format!(
        "{:<12} : {:11.3} micros/op {:.0} ops/sec {:.3} seconds {} operations;",
        o.name,
        o.micros_per_op(),
        o.ops_per_sec(),
        o.seconds,
        o.ops,
    );
    if o.bytes > 0 {
        line += &format!(" {:6.1} MB/s", o.mb_per_sec());
    }
    if let Some(found) = o.found {
        line += &format!(" ({found} of {} found)", o.ops);
    }
    if let Some(w) = o.writer_ops {
        line += &format!(" ({w} writes meanwhile)");
    }
    line += "\n";
    line += &latency_line("latency us", &o.latency);
    if let Some(s) = &o.scan {
        line += "\n";
        line += &seek::scan_lines(o, s);
    }
    line
}

/// db_bench's header.
pub fn header(engine: Engine, cfg: &RunConfig<'_>, path: &std::path::Path) -> String {
    let b = cfg.bench;
    let compressed = (b.value_size as f64 * b.compression_ratio).round() as u64;
    let raw_mb = mib(b.num * (b.key_size + b.value_size) as u64);
    let seeks = match &b.scan {
        Some(c) => seek::header_line(engine, c) + "\n",
        None => String::new(),
    };
    format!(
        "Engine:     {}\n\
         Keys:       {} bytes each\n\
         Values:     {} bytes each ({} bytes after compression)\n\
         Entries:    {}\n\
         RawSize:    {:.1} MB (estimated)\n\
         Threads:    {} (pipeline {})\n\
         Storage:    {}\n\
         Cache:      {:.1} MB\n\
         Sync:       {}\n\
         Seed:       {}\n\
         {}\
         DB path:    [{}]\n\
         ------------------------------------------------",
        engine.name(),
        b.key_size,
        b.value_size,
        compressed,
        b.num,
        raw_mb,
        b.threads,
        b.pipeline,
        cfg.storage,
        mib(cfg.cache_bytes),
        cfg.sync,
        b.seed,
        seeks,
        path.display(),
    )
}

/// Gets that the per-get figures of a phase divide by: the engine's count, or the phase's
/// reads when the engine counted none.
fn gets_of(delta: &DbStats, o: &PhaseOutcome) -> u64 {
    if delta.gets > 0 {
        delta.gets
    } else if o.workload.is_read() {
        o.ops
    } else {
        0
    }
}

/// The "stats" of a phase in the JSON: counter deltas and per-get figures (null when the
/// phase made no gets).
#[derive(Serialize)]
pub struct PhaseStatsDoc {
    gets: u64,
    puts: u64,
    gets_memtable: u64,
    gets_by_level: Vec<u64>,
    gets_not_found: u64,
    filter_probes_per_get: Option<f64>,
    filter_loads_per_get: Option<f64>,
    index_loads_per_get: Option<f64>,
    reads_per_get: Option<ByPurpose<f64>>,
    read_bytes_per_get: Option<ByPurpose<f64>>,
    nand_page_reads_per_get: Option<ByPurpose<f64>>,
    nand_read_time_us_per_get: Option<f64>,
    nand_page_programs: Option<ByPurpose<u64>>,
    flushes: u64,
    compactions: u64,
    write_stalls: u64,
    write_slowdowns: u64,
}

pub fn phase_stats(delta: &DbStats, o: &PhaseOutcome) -> PhaseStatsDoc {
    let gets = gets_of(delta, o);
    let g = gets as f64;
    let per_get = |x: u64| (gets > 0).then(|| x as f64 / g);
    let nand = delta.nand.as_ref();
    let nand_per_get = nand.filter(|_| gets > 0);
    PhaseStatsDoc {
        gets: delta.gets,
        puts: delta.puts,
        gets_memtable: delta.gets_memtable,
        gets_by_level: delta.gets_by_level.clone(),
        gets_not_found: delta.gets_not_found,
        filter_probes_per_get: per_get(delta.filter_probes),
        filter_loads_per_get: per_get(delta.filter_loads),
        index_loads_per_get: per_get(delta.index_loads),
        reads_per_get: (gets > 0).then(|| ByPurpose(per(&delta.reads, g))),
        read_bytes_per_get: (gets > 0).then(|| ByPurpose(per(&delta.read_bytes, g))),
        nand_page_reads_per_get: nand_per_get.map(|n| ByPurpose(per(&n.page_reads, g))),
        nand_read_time_us_per_get: nand_per_get.map(|n| n.read_time_ns as f64 / 1e3 / g),
        nand_page_programs: nand.map(|n| ByPurpose(n.page_programs)),
        flushes: delta.flushes,
        compactions: delta.compactions,
        write_stalls: delta.write_stalls,
        write_slowdowns: delta.write_slowdowns,
    }
}

/// The short summary of Cerberus's counters printed after a run: the shape of the tree, then
/// per read phase where its gets were answered and what they read.
pub fn cerberus_summary(stats: &DbStats, phases: &[PhaseReport]) -> String {
    let mut out = String::from("cerberus stats:\n");
    for (i, l) in stats.levels.iter().enumerate() {
        if l.tables > 0 || l.bytes > 0 {
            out += &format!("  L{i}: {:>5} tables {:>10.1} MB\n", l.tables, mib(l.bytes));
        }
    }
    if stats.levels.iter().all(|l| l.tables == 0 && l.bytes == 0) {
        out += "  levels: all empty\n";
    }
    out += &format!(
        "  value log: {:.1} MB in {} segments; flushes {}, compactions {}, write stalls {}, slowdowns {}\n",
        mib(stats.vlog_bytes),
        stats.vlog_segments,
        stats.flushes,
        stats.compactions,
        stats.write_stalls,
        stats.write_slowdowns,
    );
    for p in phases {
        if let (Some(d), Some(s)) = (&p.delta, &p.outcome.scan) {
            out += &seek::summary_lines(d, &p.outcome, s);
            continue;
        }
        let (Some(d), true) = (&p.delta, p.outcome.workload.is_read()) else {
            continue;
        };
        let gets = gets_of(d, &p.outcome);
        if gets == 0 {
            continue;
        }
        let g = gets as f64;
        let levels: Vec<String> = d
            .gets_by_level
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, n)| format!("L{i} {n}"))
            .collect();
        out += &format!(
            "  {}: {} gets: memtable {}, {}{}not found {}\n",
            p.outcome.name,
            gets,
            d.gets_memtable,
            levels.join(", "),
            if levels.is_empty() { "" } else { ", " },
            d.gets_not_found,
        );
        out += &format!(
            "    per get: filter probes {:.3}, filter loads {:.4}, index loads {:.4}\n",
            d.filter_probes as f64 / g,
            d.filter_loads as f64 / g,
            d.index_loads as f64 / g,
        );
        out += &format!(
            "    reads per get:      {}\n",
            purposes_line(&per(&d.reads, g), 3)
        );
        if let Some(n) = &d.nand {
            out += &format!(
                "    nand pages per get: {}\n",
                purposes_line(&per(&n.page_reads, g), 3)
            );
            out += &format!(
                "    nand read time per get: {:.2} us\n",
                n.read_time_ns as f64 / 1e3 / g
            );
        }
    }
    out.pop();
    out
}

/// The JSON document of one engine's run (structs, so that fields keep this order).
#[derive(Serialize)]
pub struct RunDoc<'a> {
    engine: &'static str,
    workload: &'a str,
    config: ConfigDoc<'a>,
    /// Which of `--rounds` (0 for the first).
    round: usize,
    phases: Vec<PhaseDoc>,
    stats: &'a Value,
}

#[derive(Serialize)]
struct ConfigDoc<'a> {
    num: u64,
    key_size: usize,
    value_size: usize,
    threads: usize,
    pipeline: usize,
    storage: &'a str,
    cache_bytes: u64,
    seed: u64,
    sync: bool,
    compression_ratio: f64,
    /// seekrandom's settings, when the list has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    seekrandom: Option<seek::SeekConfigDoc>,
}

#[derive(Serialize)]
pub(crate) struct PhaseDoc {
    name: &'static str,
    ops: u64,
    seconds: f64,
    ops_per_sec: f64,
    micros_per_op: f64,
    mb_per_sec: f64,
    /// Gets that found their key (read phases; null otherwise).
    found: Option<u64>,
    /// Puts of readwhilewriting's writer.
    writer_ops: Option<u64>,
    latency_us: LatencyDoc,
    /// Counter deltas of the phase (Cerberus; null for other engines).
    stats: Option<PhaseStatsDoc>,
    /// seekrandom's own fields (entries, seek and next latencies); absent in other phases.
    #[serde(flatten)]
    scan: Option<seek::ScanDoc>,
}

/// The JSON of one phase.
pub(crate) fn phase_doc(p: &PhaseReport) -> PhaseDoc {
    let o = &p.outcome;
    PhaseDoc {
        name: o.name,
        ops: o.ops,
        seconds: o.seconds,
        ops_per_sec: o.ops_per_sec(),
        micros_per_op: o.micros_per_op(),
        mb_per_sec: o.mb_per_sec(),
        found: o.found,
        writer_ops: o.writer_ops,
        latency_us: latency_doc(&o.latency),
        stats: p.delta.as_ref().map(|d| phase_stats(d, o)),
        scan: o
            .scan
            .as_ref()
            .map(|s| seek::scan_doc(o, s, p.delta.as_ref())),
    }
}

/// The JSON document of one engine's run.
pub fn run_doc<'a>(run: &'a RunReport, cfg: &RunConfig<'a>) -> RunDoc<'a> {
    let b = cfg.bench;
    let phases = run.phases.iter().map(phase_doc).collect();
    RunDoc {
        engine: run.engine.name(),
        workload: cfg.workload,
        round: run.round,
        config: ConfigDoc {
            num: b.num,
            key_size: b.key_size,
            value_size: b.value_size,
            threads: b.threads,
            pipeline: b.pipeline,
            storage: cfg.storage,
            cache_bytes: cfg.cache_bytes,
            seed: b.seed,
            sync: cfg.sync,
            compression_ratio: b.compression_ratio,
            seekrandom: b.scan.as_ref().map(|c| seek::config_doc(run.engine, c)),
        },
        phases,
        stats: &run.stats,
    }
}

/// Ops/s of every engine per phase, and the first engine's over each other's (e.g.
/// cerberus ÷ rocksdb): figures measured in one run, on one machine.
pub fn ratio_table(runs: &[RunReport]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let mut out = String::from("ops/sec by engine");
    let mut head = format!("{:<18}", "phase");
    for r in runs {
        head += &format!(" {:>14}", r.engine.name());
    }
    for r in &runs[1..] {
        head += &format!(
            " {:>18}",
            format!("{}/{}", first.engine.name(), r.engine.name())
        );
    }
    out += "\n";
    out += &head;
    for (i, p) in first.phases.iter().enumerate() {
        let name = p.outcome.name;
        let mut line = format!("{name:<18}");
        let rates: Vec<Option<f64>> = runs
            .iter()
            .map(|r| r.phases.get(i).map(|p| p.outcome.ops_per_sec()))
            .collect();
        for r in &rates {
            match r {
                Some(x) => line += &format!(" {x:>14.0}"),
                None => line += &format!(" {:>14}", "-"),
            }
        }
        for r in &rates[1..] {
            match (rates[0], r) {
                (Some(a), Some(b)) if *b > 0.0 => line += &format!(" {:>18.3}", a / b),
                _ => line += &format!(" {:>18}", "-"),
            }
        }
        out += "\n";
        out += &line;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Histogram;
    use crate::workload::Workload;
    use cerberus_bench_engines::db_stats_json;
    use cerberus_engine::storage::NandStats;
    use serde_json::json;

    fn outcome(workload: Workload, ops: u64, seconds: f64) -> PhaseOutcome {
        PhaseOutcome {
            workload,
            name: workload.name(),
            ops,
            found: workload.is_read().then_some(ops / 2),
            writer_ops: None,
            seconds,
            thread_seconds: seconds,
            bytes: ops * 100,
            latency: Histogram::new(),
            scan: None,
        }
    }

    #[test]
    fn ratio_table_divides_first_engine_by_the_others() {
        let run = |engine, w_secs: f64, r_secs: f64| RunReport {
            engine,
            round: 0,
            phases: vec![
                PhaseReport {
                    outcome: outcome(Workload::FillRandom, 1000, w_secs),
                    delta: None,
                },
                PhaseReport {
                    outcome: outcome(Workload::ReadRandom, 1000, r_secs),
                    delta: None,
                },
            ],
            stats: Value::Null,
        };
        let t = ratio_table(&[
            run(Engine::Cerberus, 1.0, 0.5),
            run(Engine::RocksDb, 2.0, 1.0),
        ]);
        let lines: Vec<_> = t.lines().collect();
        assert!(lines[1].contains("cerberus/rocksdb"), "{t}");
        assert!(lines[2].starts_with("fillrandom"), "{t}");
        assert!(lines[2].trim_end().ends_with("2.000"), "{t}");
        assert!(lines[3].trim_end().ends_with("2.000"), "{t}");
        assert!(lines[3].contains(" 2000 "), "{t}");
    }

    #[test]
    fn json_document_has_the_documented_shape() {
        let bench = BenchConfig {
            num: 1000,
            key_size: 16,
            value_size: 100,
            threads: 1,
            pipeline: 1,
            seed: 1,
            compression_ratio: 0.5,
            scan: None,
        };
        let cfg = RunConfig {
            workload: "fillrandom,readrandom",
            bench: &bench,
            storage: "nand",
            cache_bytes: 1 << 20,
            sync: false,
        };
        let delta = DbStats {
            gets: 1000,
            gets_by_level: vec![0, 400, 100],
            filter_loads: 10,
            reads: [0, 0, 500, 500, 0, 0],
            nand: Some(NandStats {
                page_reads: [0, 0, 500, 600, 0, 0],
                read_time_ns: 80_000_000,
                ..Default::default()
            }),
            ..Default::default()
        };
        let run = RunReport {
            engine: Engine::Cerberus,
            round: 0,
            phases: vec![
                PhaseReport {
                    outcome: outcome(Workload::FillRandom, 1000, 1.0),
                    delta: Some(DbStats::default()),
                },
                PhaseReport {
                    outcome: outcome(Workload::ReadRandom, 1000, 0.5),
                    delta: Some(delta),
                },
            ],
            stats: db_stats_json(&DbStats::default()),
        };
        let text = serde_json::to_string(&run_doc(&run, &cfg)).unwrap();
        assert!(
            text.starts_with(
                r#"{"engine":"cerberus","workload":"fillrandom,readrandom","config":{"num":1000,"#
            ),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["config"]["storage"], "nand");
        assert_eq!(v["round"], 0);
        let read = &v["phases"][1];
        assert_eq!(read["name"], "readrandom");
        assert_eq!(read["ops_per_sec"], 2000.0);
        assert_eq!(read["found"], 500);
        assert!(read["latency_us"]["p999"].is_number());
        let s = &read["stats"];
        assert_eq!(s["gets_by_level"], json!([0, 400, 100]));
        assert_eq!(s["filter_loads_per_get"], 0.01);
        assert_eq!(s["reads_per_get"]["value"], 0.5);
        assert!(text.contains(r#""reads_per_get":{"filter":0.0,"index":0.0,"data":0.5,"value":0.5,"log":0.0,"other":0.0}"#), "{text}");
        assert_eq!(s["nand_page_reads_per_get"]["value"], 0.6);
        assert_eq!(s["nand_read_time_us_per_get"], 80.0);
        let summary = cerberus_summary(
            &DbStats {
                levels: vec![
                    cerberus_engine::LevelStats {
                        tables: 2,
                        bytes: 3 << 20,
                        ..Default::default()
                    },
                    Default::default(),
                ],
                ..Default::default()
            },
            &run.phases,
        );
        assert!(
            summary.contains("L0:     2 tables        3.0 MB"),
            "{summary}"
        );
        assert!(!summary.contains("L1:"), "{summary}");
        assert!(summary.contains("readrandom: 1000 gets"), "{summary}");
        assert!(summary.contains("L1 400, L2 100"), "{summary}");
        assert!(summary.contains("filter loads 0.0100"), "{summary}");
        assert!(summary.contains("value 0.600"), "{summary}");
        assert!(
            summary.contains("nand read time per get: 80.00 us"),
            "{summary}"
        );
        assert!(!summary.contains("fillrandom"), "{summary}");
        let write = &v["phases"][0];
        assert!(write["found"].is_null());
        assert!(write["stats"]["filter_loads_per_get"].is_null());
        assert!(v["stats"]["levels"].is_array());
    }
}
