//! Output of the multitenant workload: db_bench-like phase lines, a table of the tenants, a
//! summary, and the JSON document.

use super::{MtConfig, MtRun, TenantResult};
use crate::engine::Engine;
use crate::histogram::Histogram;
use crate::memory::MemorySample;
use crate::profile::SizeProfile;
use crate::report::{mib, per, phase_doc, phase_lines, ByPurpose, PhaseDoc, PhaseReport};
use cerberus_engine::storage::IoPurpose;
use cerberus_engine::StepCost;
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

/// The cost-model terms of one search step over the get phase (Eq. 1 of the Cerberus paper).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepTerms {
    pub step: String,
    /// HR: gets answered at this step over the gets that reached it (null if none did).
    pub hr: Option<f64>,
    /// HT: mean time of a get answered here, in this step, value read included (null if no
    /// hit).
    pub ht_us: Option<f64>,
    /// MP: mean time a get that went on spent in this step (null if no miss).
    pub mp_us: Option<f64>,
    /// Gets that searched this step: its hits plus its misses.
    pub gets_reaching: u64,
}

/// The terms of every step, in search order.
pub fn step_terms(search: &[StepCost]) -> Vec<StepTerms> {
    search
        .iter()
        .map(|s| {
            let reaching = s.hits + s.misses;
            let mean_us = |nanos: u64, n: u64| (n > 0).then(|| nanos as f64 / n as f64 / 1e3);
            StepTerms {
                step: s.step.clone(),
                hr: (reaching > 0).then(|| s.hits as f64 / reaching as f64),
                ht_us: mean_us(s.hit_nanos, s.hits),
                mp_us: mean_us(s.miss_nanos, s.misses),
                gets_reaching: reaching,
            }
        })
        .collect()
}

/// ALKA (average latency of a key-value access) by Eq. 1, from the last step up:
/// `ALKA_i = HR_i*HT_i + (1 - HR_i)*(MP_i + ALKA_{i+1})`, and `ALKA_n = HR_n*HT_n` for the
/// last step n that answered any get. A step no get reached adds nothing. In microseconds;
/// `None` when no step answered a get.
pub fn alka_us(steps: &[StepTerms]) -> Option<f64> {
    let last = steps.iter().rposition(|s| s.ht_us.is_some())?;
    let hit = |s: &StepTerms| s.hr.unwrap_or(0.0) * s.ht_us.unwrap_or(0.0);
    let mut alka = hit(&steps[last]);
    for s in steps[..last].iter().rev() {
        if let Some(hr) = s.hr {
            alka = hit(s) + (1.0 - hr) * (s.mp_us.unwrap_or(0.0) + alka);
        }
    }
    Some(alka)
}

/// A tenant's cost model over the get phase, next to its measured mean get latency.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostModel {
    pub steps: Vec<StepTerms>,
    pub alka_us: Option<f64>,
    /// The mean of the tenant's get latencies (its thread's clock).
    pub measured_mean_get_us: Option<f64>,
    /// `alka_us / measured_mean_get_us`.
    pub ratio: Option<f64>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub fn cost_model(search: &[StepCost], measured_mean_get_us: Option<f64>) -> CostModel {
    let steps = step_terms(search);
    let alka_us = alka_us(&steps);
    CostModel {
        steps,
        alka_us,
        measured_mean_get_us,
        ratio: ratio(alka_us, measured_mean_get_us),
    }
}

/// The tenant's mean get latency in microseconds (`None` without gets).
fn measured_mean_get_us(t: &TenantResult) -> Option<f64> {
    (t.get.latency.count() > 0).then(|| t.get.latency.mean() / 1e3)
}

/// The cost model of a tenant's get phase, `None` when the engine keeps no namespace
/// counters.
pub fn tenant_cost_model(t: &TenantResult) -> Option<CostModel> {
    let d = t.get_delta()?;
    Some(cost_model(&d.search, measured_mean_get_us(t)))
}

/// Table bytes compactions wrote into the tenant's namespace over the run (Cerberus only).
fn tenant_compaction_bytes(t: &TenantResult) -> Option<u64> {
    t.stats.as_ref().map(|[before, _, after]| {
        after
            .compaction_bytes_written
            .saturating_sub(before.compaction_bytes_written)
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

/// Means over the tenants, the engine-wide NAND read time per get, compaction bytes and
/// memory.
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
    /// Cost model: the mean over tenants of ALKA (null without search counters) and of the
    /// measured mean get latency, and ALKA over measured (summed over the tenants that have
    /// both: the ratio of the means when all do).
    pub mean_alka_us: Option<f64>,
    pub mean_measured_get_us: Option<f64>,
    pub alka_ratio: Option<f64>,
    /// Table bytes all compactions wrote over the run (both phases and the settle step
    /// between them; Cerberus only). The engine does not count the bytes flushes write, so
    /// there is no write amplification proper: instead these bytes over the user key bytes
    /// put (put ops x key size).
    pub compaction_bytes_written: Option<u64>,
    pub compaction_bytes_written_per_put_key_byte: Option<f64>,
    /// The process's resident memory at the end of the get phase, and its peak over the
    /// engine's run.
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}

/// NAND read time per get over a read phase, from the engine-wide counters.
fn nand_read_time_us_per_get(p: &PhaseReport) -> Option<f64> {
    let d = p.delta.as_ref()?;
    let nand = d.nand.as_ref()?;
    let gets = if d.gets > 0 { d.gets } else { p.outcome.ops };
    (gets > 0).then(|| nand.read_time_ns as f64 / 1e3 / gets as f64)
}

pub fn summary(run: &MtRun, cfg: &MtConfig) -> SummaryDoc {
    let figures: Vec<Option<TenantFigures>> = run.tenants.iter().map(tenant_figures).collect();
    let models: Vec<Option<CostModel>> = run.tenants.iter().map(tenant_cost_model).collect();
    let n = run.tenants.len();
    let alka = |m: &Option<CostModel>| m.as_ref().and_then(|m| m.alka_us);
    let both: Vec<(f64, f64)> = models
        .iter()
        .zip(&run.tenants)
        .filter_map(|(m, t)| Some((alka(m)?, measured_mean_get_us(t)?)))
        .collect();
    let (alka_sum, measured_sum) = both
        .iter()
        .fold((0.0, 0.0), |(a, m), (x, y)| (a + x, m + y));
    let compaction = match (&run.put.delta, &run.get.delta) {
        (Some(p), Some(g)) => Some(p.compaction_bytes_written + g.compaction_bytes_written),
        _ => None,
    };
    let put_key_bytes = run.put.outcome.ops * cfg.key_size as u64;
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
        mean_alka_us: mean(models.iter().map(alka)),
        mean_measured_get_us: mean(run.tenants.iter().map(measured_mean_get_us)),
        // 0 / 0 (no tenant with both) is None.
        alka_ratio: ratio(Some(alka_sum), Some(measured_sum)),
        compaction_bytes_written: compaction,
        compaction_bytes_written_per_put_key_byte: compaction
            .and_then(|c| (put_key_bytes > 0).then(|| c as f64 / put_key_bytes as f64)),
        rss_bytes: run.get_memory.rss_bytes,
        peak_rss_bytes: run.get_memory.peak_rss_bytes,
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
         Gets:       {} per tenant\n\
         RawSize:    {:.1} MB (estimated)\n\
         Layout:     {}{}\n\
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
        m.gets_per_tenant,
        mib(total * (m.key_size + m.value_size) as u64),
        m.layout.name(),
        if m.layout.one_namespace() {
            " (one key space, keys suffixed by the tenant index)"
        } else {
            ""
        },
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
        "{:<10} {:>6} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>6}  gets by level (%)",
        "tenant",
        "nsid",
        "put ops/s",
        "get ops/s",
        "mean us",
        "p50 us",
        "p99 us",
        "alka us",
        "filt/get",
        "pages/get",
        "misses",
    );
    for t in &run.tenants {
        let f = tenant_figures(t);
        let h = &t.get.latency;
        out += &format!(
            "\n{:<10} {:>6} {:>11.0} {:>11.0} {:>9.2} {:>9.2} {:>9.2} {} {} {} {:>6}  {}",
            t.handle.name,
            t.handle.id,
            t.put.ops_per_sec(),
            t.get.ops_per_sec(),
            h.mean() / 1e3,
            h.percentile(50.0) / 1e3,
            h.percentile(99.0) / 1e3,
            opt(tenant_cost_model(t).and_then(|m| m.alka_us), 9, 2),
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
    if let (Some(c), Some(per_key)) = (
        s.compaction_bytes_written,
        s.compaction_bytes_written_per_put_key_byte,
    ) {
        out += &format!(
            "\n  compactions wrote {:.1} MB ({per_key:.2} bytes per put key byte; flush bytes \
             are not counted)",
            mib(c)
        );
    }
    if let (Some(rss), Some(peak)) = (s.rss_bytes, s.peak_rss_bytes) {
        out += &format!(
            "\n  memory: rss {:.1} MB at the end, peak {:.1} MB",
            mib(rss),
            mib(peak)
        );
    }
    if s.get_misses > 0 {
        out += &format!(
            "\n  ERROR: {} gets did not find a key their tenant had written",
            s.get_misses
        );
    }
    out
}

/// The cost model of the get phase: the terms of each step (means over the tenants), then
/// ALKA against the measured mean get latency. `None` when the engine keeps no namespace
/// counters.
pub fn cost_model_text(run: &MtRun, s: &SummaryDoc, shared: bool) -> Option<String> {
    let models: Vec<CostModel> = run.tenants.iter().filter_map(tenant_cost_model).collect();
    let first = models.first()?;
    let measured = opt(s.mean_measured_get_us, 0, 2);
    // Steps up to the deepest one any tenant's gets reached.
    let depth = models
        .iter()
        .filter_map(|m| m.steps.iter().rposition(|t| t.gets_reaching > 0))
        .max();
    let Some(depth) = depth else {
        return Some(format!(
            "cost model (Eq. 1): the engine counted no search steps; measured mean get {measured} us"
        ));
    };
    let mut out = format!(
        "cost model (Eq. 1), get phase, {}:\n{:<10} {:>12} {:>8} {:>10} {:>10}",
        if shared {
            "the tenants' shared namespace"
        } else {
            "means over tenants"
        },
        "step",
        "reaching",
        "HR",
        "HT us",
        "MP us",
    );
    for (i, step) in first.steps.iter().enumerate().take(depth + 1) {
        let term = |f: &dyn Fn(&StepTerms) -> Option<f64>| {
            mean(models.iter().map(|m| m.steps.get(i).and_then(f)))
        };
        out += &format!(
            "\n{:<10} {} {} {} {}",
            step.step,
            opt(term(&|t| Some(t.gets_reaching as f64)), 12, 1),
            opt(term(&|t| t.hr), 8, 4),
            opt(term(&|t| t.ht_us), 10, 2),
            opt(term(&|t| t.mp_us), 10, 2),
        );
    }
    out += &format!(
        "\nALKA {} us vs measured {measured} us (ratio {})",
        opt(s.mean_alka_us, 0, 2),
        opt(s.alka_ratio, 0, 3),
    );
    Some(out)
}

#[derive(Serialize)]
struct ConfigDoc<'a> {
    tenants: usize,
    num_per_tenant: u64,
    gets_per_tenant: u64,
    key_size: usize,
    value_size: usize,
    layout: &'static str,
    /// Baseline layout: one namespace for all tenants, so each tenant's counter figures are
    /// that namespace's.
    counters_shared_by_tenants: bool,
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
    /// The process's memory when the phase's threads ended.
    #[serde(flatten)]
    memory: MemorySample,
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
    /// Table bytes compactions wrote into the namespace's runs and tree over the run.
    compaction_bytes_written: Option<u64>,
    cost_model: Option<CostModel>,
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
            memory: run.put_memory,
        },
        MtPhaseDoc {
            phase: phase_doc(&run.get),
            mean_ops_per_sec_per_tenant: mean_of(&|t| t.get.ops_per_sec()),
            memory: run.get_memory,
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
                compaction_bytes_written: tenant_compaction_bytes(t),
                cost_model: tenant_cost_model(t),
            }
        })
        .collect();
    MtRunDoc {
        engine: engine.name(),
        workload: "multitenant",
        config: ConfigDoc {
            tenants: m.tenants,
            num_per_tenant: m.num_per_tenant,
            gets_per_tenant: m.gets_per_tenant,
            key_size: m.key_size,
            value_size: m.value_size,
            layout: m.layout.name(),
            counters_shared_by_tenants: m.layout.one_namespace(),
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
        summary: summary(run, m),
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
    use cerberus_engine::{DbStats, LevelStats, NamespaceStats, StepCost};
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
        // The search: 100 memtable hits of 2 us, 900 misses of 1 us; L0: 200 hits of 5 us,
        // 700 misses of 4 us; runs: none; L1: 700 hits of 10 us. ALKA: L1 10; L0 (200 * 5 +
        // 700 * (4 + 10)) / 900 = 12; memtable 0.1 * 2 + 0.9 * (1 + 12) = 11.9 (= the time of
        // all steps over the gets: 11900 us / 1000).
        let after = NamespaceStats {
            search: vec![
                step("memtable", 100, 2, 900, 1),
                step("L0", 200, 5, 700, 4),
                step("runs", 0, 0, 0, 0),
                step("L1", 700, 10, 0, 0),
                step("L2", 0, 0, 0, 0),
            ],
            compaction_bytes_written: 5000 * (index as u64 + 1),
            ..after
        };
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

    /// A step with `hits` of `hit_us` each and `misses` of `miss_us` each.
    fn step(name: &str, hits: u64, hit_us: u64, misses: u64, miss_us: u64) -> StepCost {
        StepCost {
            step: name.into(),
            hits,
            hit_nanos: hits * hit_us * 1000,
            misses,
            miss_nanos: misses * miss_us * 1000,
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
        let put_delta = DbStats {
            compaction_bytes_written: 30_000,
            ..Default::default()
        };
        let get_delta = DbStats {
            gets: 2000,
            compaction_bytes_written: 2_000,
            nand: Some(NandStats {
                read_time_ns: 100_000_000,
                ..Default::default()
            }),
            ..Default::default()
        };
        MtRun {
            put: PhaseReport {
                outcome: outcome(false, 2000, 1.0),
                delta: stats.then_some(put_delta),
            },
            get: PhaseReport {
                outcome: outcome(true, 2000, 0.5),
                delta: stats.then_some(get_delta),
            },
            tenants: vec![tenant(0, 0.5, 0.25, stats), tenant(1, 1.0, 0.5, stats)],
            put_memory: MemorySample {
                rss_bytes: Some(100 << 20),
                peak_rss_bytes: Some(120 << 20),
            },
            get_memory: MemorySample {
                rss_bytes: Some(110 << 20),
                peak_rss_bytes: Some(150 << 20),
            },
        }
    }

    fn mt_config() -> MtConfig {
        MtConfig {
            tenants: 2,
            num_per_tenant: 1000,
            gets_per_tenant: 1000,
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
        let s = summary(&run(true), &mt_config());
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
        assert!((s.mean_alka_us.unwrap() - 11.9).abs() < 1e-9);
        assert_eq!(s.mean_measured_get_us, Some(20.0));
        assert!((s.alka_ratio.unwrap() - 0.595).abs() < 1e-9);
        // 30000 + 2000 bytes over 2000 puts of 16-byte keys.
        assert_eq!(s.compaction_bytes_written, Some(32_000));
        assert_eq!(s.compaction_bytes_written_per_put_key_byte, Some(1.0));
        assert_eq!(s.rss_bytes, Some(110 << 20));
        assert_eq!(s.peak_rss_bytes, Some(150 << 20));

        let s = summary(&run(false), &mt_config());
        assert_eq!(s.mean_get_ops_per_sec, 3000.0);
        assert_eq!(s.mean_filter_loads_per_get, None);
        assert_eq!(s.mean_page_reads_per_get, None);
        assert_eq!(s.nand_read_time_us_per_get, None);
        assert_eq!(s.mean_alka_us, None);
        assert_eq!(s.mean_measured_get_us, Some(20.0));
        assert_eq!(s.alka_ratio, None);
        assert_eq!(s.compaction_bytes_written, None);
        assert_eq!(s.compaction_bytes_written_per_put_key_byte, None);
        // Memory is the process's, whatever the engine.
        assert_eq!(s.peak_rss_bytes, Some(150 << 20));
    }

    #[test]
    fn alka_follows_the_recurrence_from_the_last_step_up() {
        // memtable: 10 hits of 2 us, 90 misses of 1 us; L0: 90 misses of 5 us; runs: not
        // reached; L1: 60 hits of 100 us, 30 misses of 10 us; L2: 30 hits of 200 us; L3: none.
        let search = [
            step("memtable", 10, 2, 90, 1),
            step("L0", 0, 0, 90, 5),
            step("runs", 0, 0, 0, 0),
            step("L1", 60, 100, 30, 10),
            step("L2", 30, 200, 0, 0),
            step("L3", 0, 0, 0, 0),
        ];
        let steps = step_terms(&search);
        assert_eq!(steps[0].hr, Some(0.1));
        assert_eq!(steps[0].ht_us, Some(2.0));
        assert_eq!(steps[0].mp_us, Some(1.0));
        assert_eq!(steps[0].gets_reaching, 100);
        assert_eq!(steps[1].hr, Some(0.0));
        assert_eq!(steps[1].ht_us, None);
        assert_eq!(steps[2].hr, None);
        assert_eq!(steps[2].gets_reaching, 0);
        assert!((steps[3].hr.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(steps[4].hr, Some(1.0));
        assert_eq!(steps[5].hr, None);
        // By hand: ALKA_L2 = 1 * 200 = 200; ALKA_L1 = 2/3 * 100 + 1/3 * (10 + 200) =
        // 136.667; runs (not reached) passes it on; ALKA_L0 = 0 + 1 * (5 + 136.667) =
        // 141.667; ALKA_memtable = 0.1 * 2 + 0.9 * (1 + 141.667) = 128.6. That is all the
        // time spent in steps over the gets: (20 + 90 + 450 + 6000 + 300 + 6000) / 100.
        let alka = alka_us(&steps).unwrap();
        assert!((alka - 128.6).abs() < 1e-9, "{alka}");

        let m = cost_model(&search, Some(160.75));
        assert_eq!(m.alka_us, Some(alka));
        assert!((m.ratio.unwrap() - 0.8).abs() < 1e-9);
        assert_eq!(cost_model(&search, None).ratio, None);
        assert_eq!(cost_model(&search, Some(0.0)).ratio, None);

        // The last step that answered gets adds its hit term only: gets that went on from it
        // found nothing (HR < 1) and count as no time.
        let last = [step("memtable", 5, 2, 5, 1), step("L0", 0, 0, 0, 0)];
        assert_eq!(alka_us(&step_terms(&last)), Some(1.0));
        // Nothing counted yet (the engine before its search counters): no ALKA, no NaN.
        let zero = [step("memtable", 0, 0, 0, 0), step("L0", 0, 0, 0, 0)];
        let m = cost_model(&zero, Some(3.0));
        assert_eq!(m.alka_us, None);
        assert_eq!(m.ratio, None);
        assert!(m.steps.iter().all(|s| s.hr.is_none() && s.mp_us.is_none()));
        assert_eq!(cost_model(&[], Some(3.0)).alka_us, None);
        let text = serde_json::to_string(&m).unwrap();
        assert!(
            !text.contains("NaN") && text.contains(r#""alka_us":null"#),
            "{text}"
        );
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
                r#"{"engine":"cerberus","workload":"multitenant","config":{"tenants":2,"num_per_tenant":1000,"gets_per_tenant":1000,"#
            ),
            "{text}"
        );
        assert!(!text.contains("NaN"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        let c = &v["config"];
        assert_eq!(c["layout"], "shared");
        assert_eq!(c["counters_shared_by_tenants"], false);
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
        assert_eq!(phases[0]["rss_bytes"], 100 << 20);
        assert_eq!(phases[0]["peak_rss_bytes"], 120 << 20);
        assert_eq!(phases[1]["rss_bytes"], 110 << 20);
        assert_eq!(phases[1]["peak_rss_bytes"], 150 << 20);

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
        assert_eq!(t["compaction_bytes_written"], 10_000);
        let m = &t["cost_model"];
        let steps = m["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 5);
        assert_eq!(
            steps[1],
            json!({"step": "L0", "hr": 200.0 / 900.0, "ht_us": 5.0, "mp_us": 4.0, "gets_reaching": 900})
        );
        assert_eq!(
            steps[2],
            json!({"step": "runs", "hr": null, "ht_us": null, "mp_us": null, "gets_reaching": 0})
        );
        assert!((m["alka_us"].as_f64().unwrap() - 11.9).abs() < 1e-9);
        assert_eq!(m["measured_mean_get_us"], 20.0);
        assert!((m["ratio"].as_f64().unwrap() - 0.595).abs() < 1e-9);
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
        assert!((s["mean_alka_us"].as_f64().unwrap() - 11.9).abs() < 1e-9);
        assert_eq!(s["mean_measured_get_us"], 20.0);
        assert!(s["alka_ratio"].is_number());
        assert_eq!(s["compaction_bytes_written"], 32_000);
        assert_eq!(s["compaction_bytes_written_per_put_key_byte"], 1.0);
        assert_eq!(s["rss_bytes"], 110 << 20);
        assert_eq!(s["peak_rss_bytes"], 150 << 20);
        assert!(v["stats"]["levels"].is_array());

        // The baseline layout says its tenants share their counters.
        let mut mt = mt_config();
        mt.layout = LayoutArg::Baseline;
        let cfg = MtRunConfig { mt: &mt, ..cfg };
        let v = serde_json::to_value(run_doc(Engine::Cerberus, &run, &cfg, None, &stats)).unwrap();
        assert_eq!(v["config"]["layout"], "baseline");
        assert_eq!(v["config"]["counters_shared_by_tenants"], true);
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
            "compaction_bytes_written",
            "cost_model",
        ] {
            assert!(t[k].is_null(), "{k}");
        }
        let s = &v["summary"];
        for k in [
            "mean_filter_loads_per_get",
            "nand_read_time_us_per_get",
            "mean_alka_us",
            "alka_ratio",
            "compaction_bytes_written",
            "compaction_bytes_written_per_put_key_byte",
        ] {
            assert!(s[k].is_null(), "{k}");
        }
        assert_eq!(s["mean_measured_get_us"], 20.0);
        assert_eq!(s["peak_rss_bytes"], 150 << 20);
    }

    #[test]
    fn text_output_has_a_line_per_tenant() {
        let table = tenant_table(&run(true));
        let lines: Vec<_> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].contains("gets by level"), "{table}");
        assert!(lines[1].starts_with("tenant-0"), "{table}");
        assert!(lines[1].contains("mem 10.0 L0 20.0 L1 70.0"), "{table}");
        assert!(lines[0].contains("alka us"), "{table}");
        // Mean 20 us (= p50 = p99 here), then ALKA.
        assert!(lines[1].contains("20.00     11.90"), "{table}");
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

        let s = summary_text(&summary(&r, &mt_config()));
        assert!(s.contains("put 1500 ops/sec, get 3000 ops/sec"), "{s}");
        assert!(s.contains("filter loads/get 0.0150"), "{s}");
        assert!(
            s.contains("nand read time per get (all tenants): 50.00 us"),
            "{s}"
        );
        assert!(
            s.contains("compactions wrote 0.0 MB (1.00 bytes per put key byte"),
            "{s}"
        );
        assert!(
            s.contains("memory: rss 110.0 MB at the end, peak 150.0 MB"),
            "{s}"
        );
        assert!(!s.contains("ERROR"), "{s}");
    }

    #[test]
    fn cost_model_text_has_a_line_per_step_reached() {
        let r = run(true);
        let s = summary(&r, &mt_config());
        let text = cost_model_text(&r, &s, false).unwrap();
        let lines: Vec<_> = text.lines().collect();
        // Title, header, memtable, L0, runs, L1 (L2 no get reached), the ALKA line.
        assert_eq!(lines.len(), 7, "{text}");
        assert!(lines[0].contains("means over tenants"), "{text}");
        assert!(lines[1].starts_with("step"), "{text}");
        assert!(lines[2].starts_with("memtable"), "{text}");
        assert!(
            lines[2].contains("1000.0   0.1000       2.00       1.00"),
            "{text}"
        );
        assert!(lines[4].starts_with("runs"), "{text}");
        assert!(lines[4].ends_with('-'), "{text}");
        assert!(lines[5].starts_with("L1"), "{text}");
        assert_eq!(lines[6], "ALKA 11.90 us vs measured 20.00 us (ratio 0.595)");
        let text = cost_model_text(&r, &s, true).unwrap();
        assert!(text.contains("shared namespace"), "{text}");

        // Counters all zero: one line, no table.
        let mut r = run(true);
        for t in &mut r.tenants {
            for n in t.stats.as_mut().unwrap() {
                n.search.clear();
            }
        }
        let s = summary(&r, &mt_config());
        let text = cost_model_text(&r, &s, false).unwrap();
        assert_eq!(
            text,
            "cost model (Eq. 1): the engine counted no search steps; measured mean get 20.00 us"
        );
        // No namespace counters (RocksDB): nothing.
        let r = run(false);
        assert!(cost_model_text(&r, &summary(&r, &mt_config()), false).is_none());
    }
}
