//! itermem's text report and JSON document.

use super::args::ItermemArgs;
use super::measurement::{Measurement, Summary};
use cerberus_bench::MemorySample;
use cerberus_figures::Table;
use serde::Serialize;

fn mib(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1} MiB", b as f64 / 1_048_576.0))
}

/// Bytes the process grew by from `a` to `b`, per iterator.
fn per_iterator(a: &MemorySample, b: &MemorySample, iterators: usize) -> Option<f64> {
    let (a, b) = (a.rss_bytes?, b.rss_bytes?);
    Some((b as f64 - a as f64) / iterators.max(1) as f64)
}

pub fn header(a: &ItermemArgs) -> String {
    format!(
        "itermem: posix storage, target_table_bytes {}, keys {} B, values {} B, {} iterators \
         (prefetch degree {}), cache {} bytes",
        a.table_bytes,
        a.key_size,
        a.value_size,
        a.iterators,
        a.prefetch_degree
            .unwrap_or(cerberus_engine::DEFAULT_PREFETCH_DEGREE),
        a.cache_bytes
            .unwrap_or(cerberus_engine::Options::default().cache_bytes),
    )
}

fn levels_line(m: &Measurement) -> String {
    m.levels
        .iter()
        .map(|(name, tables, bytes)| {
            format!(
                "{name} {tables} tables {:.1} MiB",
                *bytes as f64 / 1_048_576.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn text(m: &Measurement) -> String {
    let iterators = m.iterators.max(1) as f64;
    let growth = |g: Option<f64>| g.map_or("-".into(), |b| format!("{b:.0} bytes"));
    let files = |f: Option<usize>| f.map_or("-".into(), |n| n.to_string());
    format!(
        "{} tables asked: {} keys, {} tables ({}), built in {:.1} s\n\
         first pass: {} iterators opened, seeked and advanced in {:.3} s ({:.1} us each), \
         heap +{:.0} bytes per iterator (tables opened included), RSS {} -> {} ({} per iterator)\n\
         measured pass (first pass still open): the same in {:.3} s ({:.1} us each), \
         heap +{:.0} bytes per iterator, RSS {} -> {} ({} per iterator), {} after all close\n\
         per iterator: state max {} mean {:.0} min {} bytes; buffers max {} mean {:.0} min {} bytes\n\
         open files: {} before, {} after the first pass, {} after a full scan",
        m.tables_asked,
        m.keys,
        m.tables,
        levels_line(m),
        m.build_seconds,
        m.iterators,
        m.cold_seconds,
        m.cold_seconds * 1e6 / iterators,
        m.cold_heap as f64 / iterators,
        mib(m.cold_before.rss_bytes),
        mib(m.cold_after.rss_bytes),
        growth(m.cold_growth_per_iterator()),
        m.open_seconds,
        m.open_seconds * 1e6 / iterators,
        m.heap as f64 / iterators,
        mib(m.before.rss_bytes),
        mib(m.after.rss_bytes),
        growth(m.rss_growth_per_iterator()),
        mib(m.after_drop.rss_bytes),
        m.state.max,
        m.state.mean,
        m.state.min,
        m.buffers.max,
        m.buffers.mean,
        m.buffers.min,
        files(m.open_files_before),
        files(m.open_files_after),
        files(m.open_files_full_scan),
    )
}

fn opt0(x: Option<f64>) -> String {
    x.map_or("-".into(), |b| format!("{b:.0}"))
}

/// A markdown table of several table counts.
pub fn table(ms: &[Measurement]) -> String {
    let mut t = Table::new(&[
        "tables",
        "levels",
        "state max / mean (B)",
        "buffers max / mean (B)",
        "heap per iterator, first / measured pass (B)",
        "RSS growth per iterator, first / measured pass (B)",
        "open files after a full scan",
    ]);
    for m in ms {
        let per = |bytes: i64| bytes as f64 / m.iterators.max(1) as f64;
        t.row([
            m.tables.to_string(),
            levels_line(m),
            format!("{} / {:.0}", m.state.max, m.state.mean),
            format!("{} / {:.0}", m.buffers.max, m.buffers.mean),
            format!("{:.0} / {:.0}", per(m.cold_heap), per(m.heap)),
            format!(
                "{} / {}",
                opt0(m.cold_growth_per_iterator()),
                opt0(m.rss_growth_per_iterator())
            ),
            m.open_files_full_scan.map_or("-".into(), |n| n.to_string()),
        ]);
    }
    t.render().to_string()
}

impl Measurement {
    /// Resident bytes the process grew by in the measured pass, per iterator.
    pub fn rss_growth_per_iterator(&self) -> Option<f64> {
        per_iterator(&self.before, &self.after, self.iterators)
    }

    /// The same over the first pass, which also opened the tables.
    pub fn cold_growth_per_iterator(&self) -> Option<f64> {
        per_iterator(&self.cold_before, &self.cold_after, self.iterators)
    }
}

#[derive(Serialize)]
pub struct Doc {
    workload: &'static str,
    config: ConfigDoc,
    /// Keys per table the calibration measured.
    keys_per_table: f64,
    runs: Vec<RunDoc>,
}

#[derive(Serialize)]
struct ConfigDoc {
    storage: &'static str,
    iterators: usize,
    target_table_bytes: u64,
    key_size: usize,
    value_size: usize,
    prefetch_degree: usize,
    cache_bytes: u64,
    seed: u64,
}

#[derive(Serialize)]
struct LevelDoc {
    level: String,
    tables: usize,
    bytes: u64,
}

#[derive(Serialize)]
struct SummaryDoc {
    max: usize,
    mean: f64,
    min: usize,
}

impl From<Summary> for SummaryDoc {
    fn from(s: Summary) -> SummaryDoc {
        SummaryDoc {
            max: s.max,
            mean: s.mean,
            min: s.min,
        }
    }
}

#[derive(Serialize)]
struct RunDoc {
    tables_asked: usize,
    keys: u64,
    tables: usize,
    levels: Vec<LevelDoc>,
    build_seconds: f64,
    /// First pass (tables opened on the way) and measured pass: opening, seeking and
    /// advancing all iterators.
    first_pass_seconds: f64,
    open_seconds: f64,
    /// Iter::memory().state per iterator.
    state_bytes: SummaryDoc,
    /// Iter::memory().buffers per iterator.
    buffers_bytes: SummaryDoc,
    /// Heap bytes allocated minus freed per iterator, over the first and the measured pass.
    first_pass_heap_per_iterator_bytes: f64,
    heap_per_iterator_bytes: f64,
    first_pass_rss_before_bytes: Option<u64>,
    first_pass_rss_after_bytes: Option<u64>,
    first_pass_rss_growth_per_iterator_bytes: Option<f64>,
    /// The measured pass.
    rss_before_bytes: Option<u64>,
    rss_after_bytes: Option<u64>,
    rss_after_close_bytes: Option<u64>,
    rss_growth_per_iterator_bytes: Option<f64>,
    open_files_before: Option<usize>,
    open_files_after_first_pass: Option<usize>,
    open_files_after_full_scan: Option<usize>,
}

pub fn doc(a: &ItermemArgs, keys_per_table: f64, ms: &[Measurement]) -> Doc {
    Doc {
        workload: "itermem",
        config: ConfigDoc {
            storage: "posix",
            iterators: a.iterators,
            target_table_bytes: a.table_bytes,
            key_size: a.key_size,
            value_size: a.value_size,
            prefetch_degree: a
                .prefetch_degree
                .unwrap_or(cerberus_engine::DEFAULT_PREFETCH_DEGREE),
            cache_bytes: a
                .cache_bytes
                .unwrap_or(cerberus_engine::Options::default().cache_bytes),
            seed: a.seed,
        },
        keys_per_table,
        runs: ms
            .iter()
            .map(|m| RunDoc {
                tables_asked: m.tables_asked,
                keys: m.keys,
                tables: m.tables,
                levels: m
                    .levels
                    .iter()
                    .map(|(level, tables, bytes)| LevelDoc {
                        level: level.clone(),
                        tables: *tables,
                        bytes: *bytes,
                    })
                    .collect(),
                build_seconds: m.build_seconds,
                first_pass_seconds: m.cold_seconds,
                open_seconds: m.open_seconds,
                state_bytes: m.state.into(),
                buffers_bytes: m.buffers.into(),
                first_pass_heap_per_iterator_bytes: m.cold_heap as f64 / m.iterators.max(1) as f64,
                heap_per_iterator_bytes: m.heap as f64 / m.iterators.max(1) as f64,
                first_pass_rss_before_bytes: m.cold_before.rss_bytes,
                first_pass_rss_after_bytes: m.cold_after.rss_bytes,
                first_pass_rss_growth_per_iterator_bytes: m.cold_growth_per_iterator(),
                rss_before_bytes: m.before.rss_bytes,
                rss_after_bytes: m.after.rss_bytes,
                rss_after_close_bytes: m.after_drop.rss_bytes,
                rss_growth_per_iterator_bytes: m.rss_growth_per_iterator(),
                open_files_before: m.open_files_before,
                open_files_after_first_pass: m.open_files_after,
                open_files_after_full_scan: m.open_files_full_scan,
            })
            .collect(),
    }
}
