//! Output of the multitenant workload: db_bench-like phase lines, a table of the tenants, a
//! summary, and the JSON document.

use super::{MtConfig, MtRun, TenantResult};
use crate::engine::Engine;
use crate::histogram::Histogram;
use crate::profile::SizeProfile;
use crate::report::{mib, per, phase_doc, phase_lines, ByPurpose, PhaseDoc, PhaseReport};
use cerberus_engine::storage::IoPurpose;
use serde::Serialize;
use serde_json::Value;

/// What the JSON "config" holds besides the engine.
pub struct MtRunConfig<'a> {
    pub mt: &'a MtConfig,
    pub storage: &'a str,
    pub cache_bytes: u64,
    pub sync: bool,
}

/// Gets by where they were answered: the memtable, then each level; serialized as an
/// object `{"memtable", "L0", "L1", ...}` in that order.
#[derive(Clone, Debug, PartialEq)]
pub struct GetsByLevel {
    pub memtable: u64,
    /// L0 first.
    pub levels: Vec<u64>,
}

impl Serialize for GetsByLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1 + self.levels.len()))?;
        m.serialize_entry("memtable", &self.memtable)?;
        for (i, n) in self.levels.iter().enumerate() {
            m.serialize_entry(&format!("L{i}"), n)?;
        }
        m.end()
    }
}

impl GetsByLevel {
    /// `mem 12.5 L1 80.0 ...`: percentages of `gets`, levels that answered none left out.
    fn percentages(&self, gets: u64) -> String {
        if gets == 0 {
            return "-".into();
        }
        let pct = |n: u64| 100.0 * n as f64 / gets as f64;
        let mut parts = vec![format!("mem {:.1}", pct(self.memtable))];
        for (i, &n) in self.levels.iter().enumerate() {
            if n > 0 {
                parts.push(format!("L{i} {:.1}", pct(n)));
            }
        }
        parts.join(" ")
    }
}

/// A tenant's namespace figures over the get phase (Cerberus only).
#[derive(Clone, Debug, PartialEq)]
pub struct TenantFigures {
    /// What the per-get figures divide by: the namespace's gets, or the tenant's get ops
    /// when the namespace counted none.
    pub gets: u64,
    pub gets_by_level: GetsByLevel,
    pub gets_not_found: u64,
    pub filter_probes_per_get: Option<f64>,
    pub filter_loads_per_get: Option<f64>,
    pub index_loads_per_get: Option<f64>,
    pub page_reads_per_get: Option<f64>,
    pub page_reads_per_get_by_purpose: Option<[f64; IoPurpose::COUNT]>,
}

/// The get-phase figures of one tenant, `None` when the engine keeps no namespace counters.
pub fn tenant_figures(t: &TenantResult) -> Option<TenantFigures> {
    let d = t.get_delta()?;
    let gets = if d.gets > 0 { d.gets } else { t.get.ops };
    let g = gets as f64;
    let per_get = |x: u64| (gets > 0).then(|| x as f64 / g);
    Some(TenantFigures {
        gets,
        gets_by_level: GetsByLevel {
            memtable: d.gets_memtable,
            levels: d.gets_by_level.clone(),
        },
        gets_not_found: d.gets_not_found,
        filter_probes_per_get: per_get(d.filter_probes),
        filter_loads_per_get: per_get(d.filter_loads),
        index_loads_per_get: per_get(d.index_loads),
        page_reads_per_get: per_get(d.pages.iter().sum()),
        page_reads_per_get_by_purpose: (gets > 0).then(|| per(&d.pages, g)),
    })
}

/// The mean of the values present; `None` if there are none.
fn mean(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .flatten()
        .fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

/// Means over the tenants, and the engine-wide NAND read time per get.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryDoc {
    pub tenants: usize,
    pub mean_put_ops_per_sec: f64,
    pub mean_get_ops_per_sec: f64,
    /// Null when the engine keeps no namespace counters (RocksDB).
    pub mean_filter_loads_per_get: Option<f64>,
    pub mean_page_reads_per_get: Option<f64>,
    /// All tenants together: ops over the phase's wall time.
    pub put_ops_per_sec: f64,
    pub get_ops_per_sec: f64,
    pub get_misses: u64,
    /// Modeled NAND read time of the get phase over its gets (`--storage nand`; else null).
    pub nand_read_time_us_per_get: Option<f64>,
}

/// NAND read time per get over a read phase, from the engine-wide counters.
fn nand_read_time_us_per_get(p: &PhaseReport) -> Option<f64> {
    let d = p.delta.as_ref()?;
    let nand = d.nand.as_ref()?;
    let gets = if d.gets > 0 { d.gets } else { p.outcome.ops };
    (gets > 0).then(|| nand.read_time_ns as f64 / 1e3 / gets as f64)
}

pub fn summary(run: &MtRun) -> SummaryDoc {
    let figures: Vec<Option<TenantFigures>> = run.tenants.iter().map(tenant_figures).collect();
    let n = run.tenants.len();
    SummaryDoc {
        tenants: n,
        mean_put_ops_per_sec: mean(run.tenants.iter().map(|t| Some(t.put.ops_per_sec())))
            .unwrap_or(0.0),
        mean_get_ops_per_sec: mean(run.tenants.iter().map(|t| Some(t.get.ops_per_sec())))
            .unwrap_or(0.0),
        mean_filter_loads_per_get: mean(
            figures
                .iter()
                .map(|f| f.as_ref().and_then(|f| f.filter_loads_per_get)),
        ),
        mean_page_reads_per_get: mean(
            figures
                .iter()
                .map(|f| f.as_ref().and_then(|f| f.page_reads_per_get)),
        ),
        put_ops_per_sec: run.put.outcome.ops_per_sec(),
        get_ops_per_sec: run.get.outcome.ops_per_sec(),
        get_misses: run.tenants.iter().map(|t| t.get_misses).sum(),
        nand_read_time_us_per_get: nand_read_time_us_per_get(&run.get),
    }
}

/// The run's header, as db_bench's.
pub fn header(
    engine: Engine,
    cfg: &MtRunConfig<'_>,
    profile: Option<&SizeProfile>,
    path: &std::path::Path,
) -> String {
    let m = cfg.mt;
    let compressed = (m.value_size as f64 * m.compression_ratio).round() as u64;
    let total = m.num_per_tenant * m.tenants as u64;
    format!(
        "Engine:     {}\n\
         Workload:   multitenant\n\
         Tenants:    {} (one thread each)\n\
         Keys:       {} bytes each\n\
         Values:     {} bytes each ({} bytes after compression)\n\
         Entries:    {} per tenant ({} in all)\n\
         RawSize:    {:.1} MB (estimated)\n\
         Layout:     {}\n\
         Profile:    {}\n\
         Storage:    {}\n\
         Cache:      {:.1} MB\n\
         Sync:       {}\n\
         Seed:       {}\n\
         DB path:    [{}]\n\
         ------------------------------------------------",
        engine.name(),
        m.tenants,
        m.key_size,
        m.value_size,
        compressed,
        m.num_per_tenant,
        total,
        mib(total * (m.key_size + m.value_size) as u64),
        m.layout.name(),
        match (m.profile, profile) {
            (Some(p), Some(s)) => format!("{}: {}", p.name(), s.describe()),
            _ => "none (engine defaults)".into(),
        },
        cfg.storage,
        mib(cfg.cache_bytes),
        cfg.sync,
        m.seed,
        path.display(),
    )
}

/// The phase's db_bench lines plus one with the ops/s of the tenants.
pub fn mt_phase_lines(p: &PhaseReport, per_tenant: &[f64]) -> String {
    let mut out = phase_lines(&p.outcome);
    let mean = mean(per_tenant.iter().map(|&x| Some(x))).unwrap_or(0.0);
    let min = per_tenant.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per_tenant.iter().copied().fold(0.0, f64::max);
    out += &format!(
        "\n{:<12}   per tenant: mean {:.0} ops/sec (min {:.0}, max {:.0})",
        "",
        mean,
        if min.is_finite() { min } else { 0.0 },
        max,
    );
    out
}

fn opt(v: Option<f64>, width: usize, digits: usize) -> String {
    match v {
        Some(v) => format!("{v:>width$.digits$}"),
        None => format!("{:>width$}", "-"),
    }
}

/// One line per tenant: its ops/s, get latency and, for Cerberus, where its gets were
/// answered and what they read (get phase).
pub fn tenant_table(run: &MtRun) -> String {
    let mut out = format!(
        "{:<10} {:>6} {:>11} {:>11} {:>9} {:>9} {:>8} {:>9} {:>6}  gets by level (%)",
        "tenant",
        "nsid",
        "put ops/s",
        "get ops/s",
        "p50 us",
        "p99 us",
        "filt/get",
        "pages/get",
        "misses",
    );
    for t in &run.tenants {
        let f = tenant_figures(t);
        let h = &t.get.latency;
        out += &format!(
            "\n{:<10} {:>6} {:>11.0} {:>11.0} {:>9.2} {:>9.2} {} {} {:>6}  {}",
            t.handle.name,
            t.handle.id,
            t.put.ops_per_sec(),
            t.get.ops_per_sec(),
            h.percentile(50.0) / 1e3,
            h.percentile(99.0) / 1e3,
            opt(f.as_ref().and_then(|f| f.filter_loads_per_get), 8, 4),
            opt(f.as_ref().and_then(|f| f.page_reads_per_get), 9, 3),
            t.get_misses,
            f.as_ref()
                .map_or("-".into(), |f| f.gets_by_level.percentages(f.gets)),
        );
    }
    out
}

/// The summary line(s) after the table.
pub fn summary_text(s: &SummaryDoc) -> String {
    let mut out = format!(
        "summary (mean over {} tenant{}): put {:.0} ops/sec, get {:.0} ops/sec",
        s.tenants,
        if s.tenants == 1 { "" } else { "s" },
        s.mean_put_ops_per_sec,
        s.mean_get_ops_per_sec
    );
    if let Some(f) = s.mean_filter_loads_per_get {
        out += &format!(", filter loads/get {f:.4}");
    }
    if let Some(p) = s.mean_page_reads_per_get {
        out += &format!(", page reads/get {p:.3}");
    }
    if let Some(t) = s.nand_read_time_us_per_get {
        out += &format!("\n  nand read time per get (all tenants): {t:.2} us");
    }
    if s.get_misses > 0 {
        out += &format!(
            "\n  ERROR: {} gets did not find a key their tenant had written",
            s.get_misses
        );
    }
    out
}

#[derive(Serialize)]
struct ConfigDoc<'a> {
    tenants: usize,
    num_per_tenant: u64,
    key_size: usize,
    value_size: usize,
    layout: &'static str,
    profile: Option<&'static str>,
    /// The engine sizes the profile set (null without one).
    profile_options: Option<&'a SizeProfile>,
    storage: &'a str,
    cache_bytes: u64,
    seed: u64,
    sync: bool,
    compression_ratio: f64,
}

#[derive(Serialize)]
struct MtPhaseDoc {
    #[serde(flatten)]
    phase: PhaseDoc,
    mean_ops_per_sec_per_tenant: f64,
}

#[derive(Serialize)]
struct LatencyUs {
    mean: f64,
    p50: f64,
    p99: f64,
    p999: f64,
}

impl LatencyUs {
    fn of(h: &Histogram) -> LatencyUs {
        LatencyUs {
            mean: h.mean() / 1e3,
            p50: h.percentile(50.0) / 1e3,
            p99: h.percentile(99.0) / 1e3,
            p999: h.percentile(99.9) / 1e3,
        }
    }
}

#[derive(Serialize)]
struct LevelDoc {
    tables: usize,
    bytes: u64,
}

#[derive(Serialize)]
struct TenantDoc<'a> {
    name: &'a str,
    nsid: u32,
    put_ops_per_sec: f64,
    get_ops_per_sec: f64,
    put_latency_us: LatencyUs,
    get_latency_us: LatencyUs,
    distinct_keys: u64,
    get_misses: u64,
    // Get phase, Cerberus only (null otherwise):
    gets_by_level: Option<GetsByLevel>,
    gets_not_found: Option<u64>,
    filter_probes_per_get: Option<f64>,
    filter_loads_per_get: Option<f64>,
    index_loads_per_get: Option<f64>,
    page_reads_per_get: Option<f64>,
    page_reads_per_get_by_purpose: Option<ByPurpose<f64>>,
    /// The tenant's tree at the end of the run.
    levels: Option<Vec<LevelDoc>>,
}

/// The JSON document of one engine's multitenant run (structs, so that fields keep this
/// order).
#[derive(Serialize)]
pub struct MtRunDoc<'a> {
    engine: &'static str,
    workload: &'static str,
    config: ConfigDoc<'a>,
    phases: Vec<MtPhaseDoc>,
    tenants: Vec<TenantDoc<'a>>,
    summary: SummaryDoc,
    stats: &'a Value,
}

pub fn run_doc<'a>(
    engine: Engine,
    run: &'a MtRun,
    cfg: &MtRunConfig<'a>,
    profile: Option<&'a SizeProfile>,
    stats: &'a Value,
) -> MtRunDoc<'a> {
    let m = cfg.mt;
    let mean_of = |f: &dyn Fn(&TenantResult) -> f64| {
        mean(run.tenants.iter().map(|t| Some(f(t)))).unwrap_or(0.0)
    };
    let phases = vec![
        MtPhaseDoc {
            phase: phase_doc(&run.put),
            mean_ops_per_sec_per_tenant: mean_of(&|t| t.put.ops_per_sec()),
        },
        MtPhaseDoc {
            phase: phase_doc(&run.get),
            mean_ops_per_sec_per_tenant: mean_of(&|t| t.get.ops_per_sec()),
        },
    ];
    let tenants = run
        .tenants
        .iter()
        .map(|t| {
            let f = tenant_figures(t);
            TenantDoc {
                name: &t.handle.name,
                nsid: t.handle.id,
                put_ops_per_sec: t.put.ops_per_sec(),
                get_ops_per_sec: t.get.ops_per_sec(),
                put_latency_us: LatencyUs::of(&t.put.latency),
                get_latency_us: LatencyUs::of(&t.get.latency),
                distinct_keys: t.distinct_keys,
                get_misses: t.get_misses,
                gets_not_found: f.as_ref().map(|f| f.gets_not_found),
                filter_probes_per_get: f.as_ref().and_then(|f| f.filter_probes_per_get),
                filter_loads_per_get: f.as_ref().and_then(|f| f.filter_loads_per_get),
                index_loads_per_get: f.as_ref().and_then(|f| f.index_loads_per_get),
                page_reads_per_get: f.as_ref().and_then(|f| f.page_reads_per_get),
                page_reads_per_get_by_purpose: f
                    .as_ref()
                    .and_then(|f| f.page_reads_per_get_by_purpose.map(ByPurpose)),
                gets_by_level: f.map(|f| f.gets_by_level),
                levels: t.stats.as_ref().map(|[_, _, after]| {
                    after
                        .levels
                        .iter()
                        .map(|l| LevelDoc {
                            tables: l.tables,
                            bytes: l.bytes,
                        })
                        .collect()
                }),
            }
        })
        .collect();
    MtRunDoc {
        engine: engine.name(),
        workload: "multitenant",
        config: ConfigDoc {
            tenants: m.tenants,
            num_per_tenant: m.num_per_tenant,
            key_size: m.key_size,
            value_size: m.value_size,
            layout: m.layout.name(),
            profile: m.profile.map(|p| p.name()),
            profile_options: profile,
            storage: cfg.storage,
            cache_bytes: cfg.cache_bytes,
            seed: m.seed,
            sync: cfg.sync,
            compression_ratio: m.compression_ratio,
        },
        phases,
        tenants,
        summary: summary(run),
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{LayoutArg, TenantHandle};
    use crate::multitenant::TenantPhase;
    use crate::profile::ProfileArg;
    use crate::workload::{PhaseOutcome, Workload};
    use cerberus_engine::storage::NandStats;
    use cerberus_engine::{DbStats, LevelStats, NamespaceStats};
    use serde_json::json;

    fn phase(ops: u64, seconds: f64, micros: u64) -> TenantPhase {
        let mut latency = Histogram::new();
        for _ in 0..ops {
            latency.record(micros * 1000);
        }
        TenantPhase {
            ops,
            seconds,
            latency,
        }
    }

    fn ns(
        gets: u64,
        memtable: u64,
        by_level: Vec<u64>,
        filter_loads: u64,
        pages: [u64; 6],
    ) -> NamespaceStats {
        NamespaceStats {
            nsid: 0,
            levels: vec![
                LevelStats {
                    tables: 1,
                    bytes: 100,
                },
                LevelStats {
                    tables: 3,
                    bytes: 3000,
                },
            ],
            gets,
            gets_memtable: memtable,
            gets_by_level: by_level,
            filter_loads,
            pages,
            ..Default::default()
        }
    }

    fn tenant(index: usize, put_secs: f64, get_secs: f64, stats: bool) -> TenantResult {
        let before = ns(0, 0, vec![0, 0, 0], 0, [0; 6]);
        // 1000 gets: 100 memtable, 200 L0, 700 L1; filter loads 10 * (index + 1);
        // pages: 500 data + 1000 value (+ index).
        let after = ns(
            1000,
            100,
            vec![200, 700, 0],
            10 * (index as u64 + 1),
            [0, index as u64, 500, 1000, 0, 0],
        );
        TenantResult {
            handle: TenantHandle {
                index,
                id: index as u32 + 1,
                name: TenantHandle::name_of(index),
            },
            put: phase(1000, put_secs, 5),
            get: phase(1000, get_secs, 20),
            distinct_keys: 632,
            get_misses: 0,
            stats: stats.then(|| [before.clone(), before, after]),
        }
    }

    fn outcome(read: bool, ops: u64, seconds: f64) -> PhaseOutcome {
        PhaseOutcome {
            workload: if read {
                Workload::ReadRandom
            } else {
                Workload::FillRandom
            },
            name: if read { "get" } else { "put" },
            ops,
            found: read.then_some(ops),
            writer_ops: None,
            seconds,
            thread_seconds: seconds,
            bytes: ops * 100,
            latency: Histogram::new(),
        }
    }

    fn run(stats: bool) -> MtRun {
        let get_delta = DbStats {
            gets: 2000,
            nand: Some(NandStats {
                read_time_ns: 100_000_000,
                ..Default::default()
            }),
            ..Default::default()
        };
        MtRun {
            put: PhaseReport {
                outcome: outcome(false, 2000, 1.0),
                delta: stats.then(DbStats::default),
            },
            get: PhaseReport {
                outcome: outcome(true, 2000, 0.5),
                delta: stats.then_some(get_delta),
            },
            tenants: vec![tenant(0, 0.5, 0.25, stats), tenant(1, 1.0, 0.5, stats)],
        }
    }

    fn mt_config() -> MtConfig {
        MtConfig {
            tenants: 2,
            num_per_tenant: 1000,
            key_size: 16,
            value_size: 100,
            seed: 1,
            compression_ratio: 0.5,
            layout: LayoutArg::Shared,
            profile: Some(ProfileArg::Paper),
            settle: true,
        }
    }

    #[test]
    fn summary_takes_means_over_tenants() {
        let s = summary(&run(true));
        assert_eq!(s.tenants, 2);
        // 1000 / 0.5 and 1000 / 1.0.
        assert_eq!(s.mean_put_ops_per_sec, 1500.0);
        // 1000 / 0.25 and 1000 / 0.5.
        assert_eq!(s.mean_get_ops_per_sec, 3000.0);
        // 10/1000 and 20/1000.
        assert!((s.mean_filter_loads_per_get.unwrap() - 0.015).abs() < 1e-12);
        // 1500/1000 and 1501/1000.
        assert!((s.mean_page_reads_per_get.unwrap() - 1.5005).abs() < 1e-12);
        assert_eq!(s.put_ops_per_sec, 2000.0);
        assert_eq!(s.get_ops_per_sec, 4000.0);
        assert_eq!(s.nand_read_time_us_per_get, Some(50.0));
        assert_eq!(s.get_misses, 0);

        let s = summary(&run(false));
        assert_eq!(s.mean_get_ops_per_sec, 3000.0);
        assert_eq!(s.mean_filter_loads_per_get, None);
        assert_eq!(s.mean_page_reads_per_get, None);
        assert_eq!(s.nand_read_time_us_per_get, None);
    }

    #[test]
    fn mean_skips_missing_values() {
        assert_eq!(mean([Some(1.0), None, Some(3.0)]), Some(2.0));
        assert_eq!(mean([None, None]), None);
        assert_eq!(mean(std::iter::empty()), None);
    }

    #[test]
    fn json_document_has_the_documented_shape() {
        let run = run(true);
        let mt = mt_config();
        let cfg = MtRunConfig {
            mt: &mt,
            storage: "nand",
            cache_bytes: 1 << 20,
            sync: false,
        };
        let sizes = mt.sizes();
        let stats = json!({ "levels": [] });
        let doc = run_doc(Engine::Cerberus, &run, &cfg, sizes.as_ref(), &stats);
        let text = serde_json::to_string(&doc).unwrap();
        assert!(
            text.starts_with(
                r#"{"engine":"cerberus","workload":"multitenant","config":{"tenants":2,"num_per_tenant":1000,"#
            ),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let c = &v["config"];
        assert_eq!(c["layout"], "shared");
        assert_eq!(c["profile"], "paper");
        assert_eq!(c["profile_options"]["memtable_bytes"], 2 << 20);
        assert_eq!(c["storage"], "nand");

        let phases = v["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 2);
        assert_eq!(phases[0]["name"], "put");
        assert_eq!(phases[0]["ops_per_sec"], 2000.0);
        assert_eq!(phases[0]["mean_ops_per_sec_per_tenant"], 1500.0);
        assert_eq!(phases[1]["name"], "get");
        assert_eq!(phases[1]["found"], 2000);
        assert_eq!(phases[1]["mean_ops_per_sec_per_tenant"], 3000.0);
        assert_eq!(phases[1]["stats"]["nand_read_time_us_per_get"], 50.0);
        assert!(phases[1]["latency_us"]["p99"].is_number());

        let t = &v["tenants"][1];
        assert_eq!(t["name"], "tenant-1");
        assert_eq!(t["nsid"], 2);
        assert_eq!(t["put_ops_per_sec"], 1000.0);
        assert_eq!(t["get_ops_per_sec"], 2000.0);
        assert!((t["get_latency_us"]["p50"].as_f64().unwrap() - 20.0).abs() < 0.2);
        for k in ["mean", "p50", "p99", "p999"] {
            assert!(t["get_latency_us"][k].is_number(), "{k}");
        }
        assert_eq!(t["filter_loads_per_get"], 0.02);
        assert_eq!(t["page_reads_per_get"], 1.501);
        assert_eq!(t["page_reads_per_get_by_purpose"]["data"], 0.5);
        assert_eq!(t["page_reads_per_get_by_purpose"]["value"], 1.0);
        assert_eq!(t["levels"][1]["tables"], 3);
        // Levels in order, after the memtable.
        assert!(
            text.contains(r#""gets_by_level":{"memtable":100,"L0":200,"L1":700,"L2":0}"#),
            "{text}"
        );
        let s = &v["summary"];
        assert_eq!(s["mean_put_ops_per_sec"], 1500.0);
        assert_eq!(s["mean_get_ops_per_sec"], 3000.0);
        assert_eq!(s["mean_filter_loads_per_get"], 0.015);
        assert!(s["mean_page_reads_per_get"].is_number());
        assert_eq!(s["nand_read_time_us_per_get"], 50.0);
        assert!(v["stats"]["levels"].is_array());
    }

    #[test]
    fn json_without_namespace_counters_has_nulls() {
        let run = run(false);
        let mut mt = mt_config();
        mt.profile = None;
        let cfg = MtRunConfig {
            mt: &mt,
            storage: "posix",
            cache_bytes: 1 << 20,
            sync: false,
        };
        let stats = Value::Null;
        let v = serde_json::to_value(run_doc(Engine::RocksDb, &run, &cfg, None, &stats)).unwrap();
        assert_eq!(v["engine"], "rocksdb");
        assert!(v["config"]["profile"].is_null());
        assert!(v["config"]["profile_options"].is_null());
        assert!(v["phases"][1]["stats"].is_null());
        let t = &v["tenants"][0];
        assert_eq!(t["get_ops_per_sec"], 4000.0);
        for k in [
            "gets_by_level",
            "filter_loads_per_get",
            "page_reads_per_get",
            "page_reads_per_get_by_purpose",
            "levels",
        ] {
            assert!(t[k].is_null(), "{k}");
        }
        assert!(v["summary"]["mean_filter_loads_per_get"].is_null());
        assert!(v["summary"]["nand_read_time_us_per_get"].is_null());
    }

    #[test]
    fn text_output_has_a_line_per_tenant() {
        let table = tenant_table(&run(true));
        let lines: Vec<_> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].contains("gets by level"), "{table}");
        assert!(lines[1].starts_with("tenant-0"), "{table}");
        assert!(lines[1].contains("mem 10.0 L0 20.0 L1 70.0"), "{table}");
        assert!(lines[2].contains("0.0200"), "{table}");
        let table = tenant_table(&run(false));
        assert!(
            table.lines().nth(1).unwrap().trim_end().ends_with('-'),
            "{table}"
        );

        let r = run(true);
        let lines = mt_phase_lines(&r.get, &[4000.0, 2000.0]);
        assert!(lines.starts_with("get          :"), "{lines}");
        assert!(lines.contains("(2000 of 2000 found)"), "{lines}");
        assert!(
            lines.contains("per tenant: mean 3000 ops/sec (min 2000, max 4000)"),
            "{lines}"
        );

        let s = summary_text(&summary(&r));
        assert!(s.contains("put 1500 ops/sec, get 3000 ops/sec"), "{s}");
        assert!(s.contains("filter loads/get 0.0150"), "{s}");
        assert!(
            s.contains("nand read time per get (all tenants): 50.00 us"),
            "{s}"
        );
        assert!(!s.contains("ERROR"), "{s}");
    }
}
