//! The engine's, the scheduler's and the dedup service's numbers at a scrape, as series.

use crate::dedup::DedupStats;
use crate::scheduler::stats::{CoreStats, SchedulerStats};
use crate::shares::ShareReport;
use cerberus_engine::storage::IoPurpose;
use cerberus_engine::{DbStats, LevelStats};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// What the series of one scrape are read from.
pub struct Snapshot {
    pub db: DbStats,
    pub scheduler: SchedulerStats,
    /// `None` when the dedup service is off: its series are left out.
    pub dedup: Option<DedupStats>,
    /// The namespaces known to the shares, and what each got.
    pub shares: Vec<(u32, ShareReport)>,
    /// Bytes held for clients on every wire now (`max_held_bytes` bounds them).
    pub held_bytes: u64,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").finish_non_exhaustive()
    }
}

/// A per-core series: name (a counter's without `_total`), type, help, and its value for a
/// core.
type CoreSeries = (
    &'static str,
    MetricType,
    &'static str,
    fn(&CoreStats) -> Value,
);

/// A sample's value: counts are integers, loads and ratios fractions.
enum Value {
    Int(u64),
    Float(f64),
}

/// Encodes one unlabelled sample or one of a family, counter or gauge as `kind` says.
fn sample(enc: MetricEncoder, kind: MetricType, v: Value) -> Result<(), std::fmt::Error> {
    match (kind, v) {
        (MetricType::Counter, Value::Int(n)) => ConstCounter::new(n).encode(enc),
        (MetricType::Counter, Value::Float(x)) => ConstCounter::new(x).encode(enc),
        (_, Value::Int(n)) => ConstGauge::new(n).encode(enc),
        (_, Value::Float(x)) => ConstGauge::new(x).encode(enc),
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_engine(&self.db, &mut encoder)?;
        encode_cores(&self.scheduler, &mut encoder)?;
        if let Some(d) = &self.dedup {
            encode_dedup(d, &mut encoder)?;
        }
        encode_shares(&self.shares, &mut encoder)?;
        ConstGauge::new(self.held_bytes).encode(encoder.encode_descriptor(
            "cerberus_held_bytes",
            "Bytes held for clients on every wire (replies not yet written, large frames, \
             NVMe/TCP commands' data and vendor responses), within max_held_bytes.",
            None,
            MetricType::Gauge,
        )?)?;
        Ok(())
    }
}

/// Counters without labels, each `(name, help, value)`.
fn encode_counters(
    counters: &[(&str, &str, u64)],
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    for &(name, help, v) in counters {
        ConstCounter::new(v).encode(encoder.encode_descriptor(
            name,
            help,
            None,
            MetricType::Counter,
        )?)?;
    }
    Ok(())
}

fn encode_engine(db: &DbStats, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let by_purpose = [
        ("cerberus_reads", "Storage reads, by purpose.", &db.reads),
        (
            "cerberus_read_bytes",
            "Bytes read from storage, by purpose.",
            &db.read_bytes,
        ),
        (
            "cerberus_page_reads",
            "Pages read (NAND pages on the NAND model, 4 KiB otherwise), by purpose.",
            &db.pages,
        ),
    ];
    for (name, help, values) in by_purpose {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for p in IoPurpose::ALL {
            let labels = [("purpose", p.name())];
            ConstCounter::new(values[p as usize]).encode(family.encode_family(&labels)?)?;
        }
    }
    let counters: [(&str, &str, u64); 13] = [
        ("cerberus_gets", "Gets served.", db.gets),
        ("cerberus_puts", "Puts applied.", db.puts),
        ("cerberus_deletes", "Deletes applied.", db.deletes),
        (
            "cerberus_filter_loads",
            "Table filters read from storage.",
            db.filter_loads,
        ),
        (
            "cerberus_index_loads",
            "Table indexes read from storage.",
            db.index_loads,
        ),
        ("cerberus_flushes", "Memtable flushes.", db.flushes),
        ("cerberus_compactions", "Compactions.", db.compactions),
        (
            "cerberus_compaction_read_bytes",
            "Bytes compactions read.",
            db.compaction_bytes_read,
        ),
        (
            "cerberus_compaction_written_bytes",
            "Bytes compactions wrote.",
            db.compaction_bytes_written,
        ),
        (
            "cerberus_gc_segments_deleted",
            "Value-log segments collected.",
            db.gc_segments_deleted,
        ),
        (
            "cerberus_gc_rewritten_bytes",
            "Live value-log bytes moved by GC.",
            db.gc_bytes_rewritten,
        ),
        (
            "cerberus_write_stalls",
            "Writes that waited for background work.",
            db.write_stalls,
        ),
        (
            "cerberus_write_slowdowns",
            "Writes delayed to let background work catch up.",
            db.write_slowdowns,
        ),
    ];
    encode_counters(&counters, encoder)?;
    ConstGauge::new(db.vlog_bytes).encode(encoder.encode_descriptor(
        "cerberus_vlog_bytes",
        "Bytes in value-log segments.",
        None,
        MetricType::Gauge,
    )?)?;
    ConstGauge::new(db.point_index_memory_bytes).encode(encoder.encode_descriptor(
        "cerberus_point_index_memory_bytes",
        "Bytes of point indexes the open tables keep (within engine.point_index_memory_bytes).",
        None,
        MetricType::Gauge,
    )?)?;
    encode_row_cache(db, encoder)?;
    for (name, help, of) in [
        (
            "cerberus_level_tables",
            "Tables per level, all trees.",
            (|l| l.tables as u64) as fn(&LevelStats) -> u64,
        ),
        ("cerberus_level_bytes", "Bytes per level, all trees.", |l| {
            l.bytes
        }),
    ] {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        let levels = db
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| (format!("L{i}"), l));
        // Namespace runs sit between L0 and L1.
        for (level, l) in levels.chain([("runs".to_string(), &db.runs)]) {
            let labels = [("level", level)];
            ConstGauge::new(of(l)).encode(family.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

/// The row cache's counters and gauges (`DbStats::row_cache`).
fn encode_row_cache(db: &DbStats, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let rc = &db.row_cache;
    let counters: [(&str, &str, u64); 5] = [
        (
            "cerberus_row_cache_hits",
            "Gets the row cache answered.",
            rc.hits,
        ),
        (
            "cerberus_row_cache_misses",
            "Gets at the latest state the row cache could not answer.",
            rc.misses,
        ),
        (
            "cerberus_row_cache_inserts",
            "Values put into the row cache.",
            rc.inserts,
        ),
        (
            "cerberus_row_cache_deferred",
            "Values read and not cached: their key's first miss (cached at the second).",
            rc.deferred,
        ),
        (
            "cerberus_row_cache_evictions",
            "Row cache entries evicted to make room.",
            rc.evictions,
        ),
    ];
    encode_counters(&counters, encoder)?;
    for (name, help, v) in [
        (
            "cerberus_row_cache_bytes",
            "Bytes the row cache holds (keys, values, per-entry overhead).",
            rc.bytes,
        ),
        (
            "cerberus_row_cache_capacity_bytes",
            "The row cache's budget (0: off).",
            rc.capacity_bytes,
        ),
    ] {
        ConstGauge::new(v).encode(encoder.encode_descriptor(
            name,
            help,
            None,
            MetricType::Gauge,
        )?)?;
    }
    Ok(())
}

fn encode_cores(
    s: &SchedulerStats,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    use MetricType::{Counter, Gauge};
    let series: [CoreSeries; 10] = [
        (
            "cerberus_core_load",
            Gauge,
            "Share of time a core ran commands and tasks, at the last sample.",
            |c| Value::Float(c.load),
        ),
        (
            "cerberus_core_connections",
            Gauge,
            "Connections served by a core.",
            |c| Value::Int(c.connections as u64),
        ),
        (
            "cerberus_core_commands",
            Counter,
            "Commands a core ran.",
            |c| Value::Int(c.fg_commands),
        ),
        (
            "cerberus_core_background_tasks",
            Counter,
            "Background service tasks a core ran.",
            |c| Value::Int(c.bg_tasks),
        ),
        (
            "cerberus_core_background_queued",
            Gauge,
            "Background service tasks queued on a core.",
            |c| Value::Int(c.bg_queued as u64),
        ),
        (
            "cerberus_core_migrations_in",
            Counter,
            "Tasks and engine jobs made on another core and run on this one.",
            |c| Value::Int(c.migrated_in),
        ),
        (
            "cerberus_core_flushes",
            Counter,
            "Engine flushes on a core's lane.",
            |c| Value::Int(c.flushes),
        ),
        (
            "cerberus_core_compactions",
            Counter,
            "Engine compactions on a core's lane.",
            |c| Value::Int(c.compactions),
        ),
        (
            "cerberus_core_gcs",
            Counter,
            "Value-log GC jobs on a core's lane.",
            |c| Value::Int(c.gcs),
        ),
        (
            "cerberus_core_backfills",
            Counter,
            "Index backfills on a core's lane.",
            |c| Value::Int(c.backfills),
        ),
    ];
    for (name, kind, help, f) in series {
        let mut family = encoder.encode_descriptor(name, help, None, kind)?;
        for c in &s.cores {
            let labels = [("core", c.core.to_string())];
            sample(family.encode_family(&labels)?, kind, f(c))?;
        }
    }
    Ok(())
}

fn encode_dedup(d: &DedupStats, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    ConstGauge::new(d.backlog).encode(encoder.encode_descriptor(
        "cerberus_dedup_backlog",
        "Dedup tasks queued and not yet run.",
        None,
        MetricType::Gauge,
    )?)?;
    ConstCounter::new(d.shed_tasks).encode(encoder.encode_descriptor(
        "cerberus_dedup_shed",
        "Writes whose task found the backlog full (their namespace rescanned instead).",
        None,
        MetricType::Counter,
    )?)?;
    let mut family = encoder.encode_descriptor(
        "cerberus_dedup_ratio",
        "Logical bytes over the bytes of distinct chunks.",
        None,
        MetricType::Gauge,
    )?;
    for (ns, n) in &d.namespaces {
        let labels = [("nsid", ns.to_string())];
        ConstGauge::new(n.dedup_ratio).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

type ShareSeries = (&'static str, &'static str, fn(&ShareReport) -> Value);

fn encode_shares(
    shares: &[(u32, ShareReport)],
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let series: [ShareSeries; 6] = [
        (
            "cerberus_shares_served_ops",
            "Commands that went through the shares' tags (contended core or limit).",
            |r| Value::Int(r.stats.served_ops),
        ),
        (
            "cerberus_shares_served_bytes",
            "Request bytes of those commands.",
            |r| Value::Int(r.stats.served_bytes),
        ),
        (
            "cerberus_shares_waited_seconds",
            "Time commands waited at the gate for their turn or their limit.",
            |r| Value::Float(r.stats.waited_ns as f64 / 1e9),
        ),
        (
            "cerberus_shares_limit_waited_seconds",
            "Time commands waited for their namespace's limit.",
            |r| Value::Float(r.stats.limit_waited_ns as f64 / 1e9),
        ),
        (
            "cerberus_shares_charged_bytes",
            "Bytes of background work (compactions) charged to the namespace.",
            |r| Value::Int(r.stats.charged_bytes),
        ),
        (
            "cerberus_shares_contended_turns",
            "Turns the namespace won among commands of two or more namespaces at a core.",
            |r| Value::Int(r.stats.contended_turns),
        ),
    ];
    for (name, help, f) in series {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (ns, r) in shares {
            let labels = [("nsid", ns.to_string())];
            sample(family.encode_family(&labels)?, MetricType::Counter, f(r))?;
        }
    }
    Ok(())
}
