//! Output of the multitenant workload: db_bench-like phase lines, a table of the tenants, a
//! summary and the cost model as text; the JSON document (`json.rs`) and the summary's
//! figures ([`summary`]) are made in sibling modules.

pub use super::summary::{summary, SummaryDoc};

use super::cost_model::{tenant_cost_model, CostModel, StepTerms};
use super::figures::{mean, tenant_figures};
use super::{MtConfig, MtRun};
use crate::report::measures::mib;
use crate::report::{phase_lines, PhaseReport};
use cerberus_bench_engines::profile::SizeProfile;
use cerberus_bench_engines::Engine;

/// What the JSON "config" holds besides the engine.
pub struct MtRunConfig<'a> {
    pub mt: &'a MtConfig,
    pub storage: &'a str,
    pub cache_bytes: u64,
    pub sync: bool,
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
            "\n  compactions wrote {:.1} MB ({per_key:.2} bytes per put key byte)",
            mib(c)
        );
    }
    if let Some(w) = s.write_terms {
        out += &format!(
            "\n  table bytes per put key byte: flush {:.2} + L0 {:.2} + run merges {:.2} + \
             levels {:.2} + consolidation {:.2} = {:.2}",
            w.flush, w.l0, w.run_merge, w.levels, w.consolidation, w.total
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multitenant::fixtures::{mt_config, run};

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
