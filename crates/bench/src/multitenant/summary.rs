//! The summary of a multitenant run: means over the tenants, the cost model's ALKA against the
//! measured get latency, the bytes compactions wrote and the process's memory.

use super::cost_model::{measured_mean_get_us, ratio, tenant_cost_model, CostModel};
use super::figures::{mean, tenant_figures, TenantFigures};
use super::{MtConfig, MtRun};
use crate::report::PhaseReport;
pub use cerberus_figures::docs::multitenant::{SummaryDoc, WriteTerms};

/// NAND read time per get over a read phase, from the engine-wide counters.
fn nand_read_time_us_per_get(p: &PhaseReport) -> Option<f64> {
    let d = p.delta.as_ref()?;
    let nand = d.nand.as_ref()?;
    let gets = if d.gets > 0 { d.gets } else { p.outcome.ops };
    (gets > 0).then(|| nand.read_time_ns as f64 / 1e3 / gets as f64)
}

/// The trees' write amplification term by term over both phases (and the settle step
/// between them), per user key byte put.
fn write_terms(run: &MtRun, key_bytes: u64) -> Option<WriteTerms> {
    let (p, g) = (run.put.delta.as_ref()?, run.get.delta.as_ref()?);
    if key_bytes == 0 {
        return None;
    }
    let per = |f: fn(&cerberus_engine::DbStats) -> u64| (f(p) + f(g)) as f64 / key_bytes as f64;
    let mut t = WriteTerms {
        flush: per(|d| d.flush_bytes_written),
        l0: per(|d| d.l0_bytes_written),
        run_merge: per(|d| d.run_merge_bytes_written),
        levels: per(|d| d.level_bytes_written),
        consolidation: per(|d| d.consolidation_bytes_written),
        total: 0.0,
    };
    t.total = t.flush + t.l0 + t.run_merge + t.levels + t.consolidation;
    Some(t)
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
        write_terms: write_terms(run, put_key_bytes),
        rss_bytes: run.get_memory.rss_bytes,
        peak_rss_bytes: run.get_memory.peak_rss_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multitenant::fixtures::{mt_config, run};

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
        // Each term over the 32,000 key bytes put.
        let w = s.write_terms.unwrap();
        assert_eq!(
            [
                w.flush,
                w.l0,
                w.run_merge,
                w.levels,
                w.consolidation,
                w.total
            ],
            [0.5, 0.625, 0.25, 0.0625, 0.0625, 1.5]
        );
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
        assert_eq!(s.write_terms, None);
        // Memory is the process's, whatever the engine.
        assert_eq!(s.peak_rss_bytes, Some(150 << 20));
    }
}
