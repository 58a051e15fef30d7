//! seekrandom's part of the text report and of the JSON document.

use super::measures::{latency_doc, latency_line, per, purposes_line, ByPurpose, LatencyDoc};
use crate::workload::scan::{ScanConfig, ScanOutcome};
use crate::workload::PhaseOutcome;
use cerberus_bench_engines::Engine;
use cerberus_engine::DbStats;
use serde::Serialize;

fn what(c: &ScanConfig) -> &'static str {
    if c.keys_only {
        "keys only"
    } else {
        "keys and values"
    }
}

/// The lines that follow db_bench's line of a seekrandom phase: entries returned, then the
/// latency of the seeks and of the nexts.
pub fn scan_lines(o: &PhaseOutcome, s: &ScanOutcome) -> String {
    format!(
        "{:<12}   entries: {} ({:.1} per seek, scan length {}, {})\n{}\n{}",
        "",
        s.entries,
        s.entries_per_seek(o.ops),
        s.config.scan_length,
        what(&s.config),
        latency_line("seek latency us", &s.seek_latency),
        latency_line("next latency us", &s.next_latency),
    )
}

/// The header line of a run with seekrandom (the prefetch degree is Cerberus's only).
pub fn header_line(engine: Engine, c: &ScanConfig) -> String {
    let mut line = format!(
        "Seeks:      {}, scan length {}, {}",
        c.seeks,
        c.scan_length,
        what(c)
    );
    if engine == Engine::Cerberus {
        line += &format!(
            ", prefetch degree {}, index prefetch {}",
            c.prefetch_degree,
            if c.index_prefetch { "on" } else { "off" }
        );
    }
    line
}

/// Cerberus's counters over a seekrandom phase, for the summary after the run: storage reads
/// per seek by purpose (and NAND pages and read time per seek on the NAND model).
pub fn summary_lines(d: &DbStats, o: &PhaseOutcome, s: &ScanOutcome) -> String {
    let mut out = format!("  {}: {} seeks, {} entries\n", o.name, o.ops, s.entries);
    if o.ops == 0 {
        return out;
    }
    let seeks = o.ops as f64;
    out += &format!(
        "    reads per seek:      {}\n",
        purposes_line(&per(&d.reads, seeks), 2)
    );
    out += &format!(
        "    read KiB per seek:   {}\n",
        purposes_line(&per(&d.read_bytes, seeks * 1024.0), 1)
    );
    if let Some(n) = &d.nand {
        out += &format!(
            "    nand pages per seek: {}\n",
            purposes_line(&per(&n.page_reads, seeks), 2)
        );
        out += &format!(
            "    nand read time per seek: {:.2} us\n",
            n.read_time_ns as f64 / 1e3 / seeks
        );
    }
    out
}

/// The fields a seekrandom phase adds to its JSON phase (flattened into it).
#[derive(Serialize)]
pub struct ScanDoc {
    scan_length: usize,
    keys_only: bool,
    /// Entries returned over all seeks (`mb_per_sec` is their key and value bytes).
    entries: u64,
    entries_per_seek: f64,
    /// Cursor made, seek, first entry read.
    seek_latency_us: LatencyDoc,
    /// Each entry read after the first.
    next_latency_us: LatencyDoc,
    /// Cerberus: storage reads per seek by purpose over the phase; null for other engines.
    reads_per_seek: Option<ByPurpose<f64>>,
}

pub fn scan_doc(o: &PhaseOutcome, s: &ScanOutcome, delta: Option<&DbStats>) -> ScanDoc {
    let seeks = o.ops as f64;
    ScanDoc {
        scan_length: s.config.scan_length,
        keys_only: s.config.keys_only,
        entries: s.entries,
        entries_per_seek: s.entries_per_seek(o.ops),
        seek_latency_us: latency_doc(&s.seek_latency),
        next_latency_us: latency_doc(&s.next_latency),
        reads_per_seek: delta
            .filter(|_| o.ops > 0)
            .map(|d| ByPurpose(per(&d.reads, seeks))),
    }
}

/// `config.seekrandom` of the JSON document.
#[derive(Serialize)]
pub struct SeekConfigDoc {
    seeks: u64,
    scan_length: usize,
    keys_only: bool,
    /// Cerberus's; null for other engines.
    prefetch_degree: Option<usize>,
    index_prefetch: Option<bool>,
    /// RocksDB's; null for other engines.
    readahead_bytes: Option<usize>,
}

pub fn config_doc(engine: Engine, c: &ScanConfig) -> SeekConfigDoc {
    SeekConfigDoc {
        seeks: c.seeks,
        scan_length: c.scan_length,
        keys_only: c.keys_only,
        prefetch_degree: (engine == Engine::Cerberus).then_some(c.prefetch_degree),
        index_prefetch: (engine == Engine::Cerberus).then_some(c.index_prefetch),
        readahead_bytes: matches!(engine, Engine::RocksDb | Engine::RocksDbBlob)
            .then_some(c.readahead_bytes),
    }
}
