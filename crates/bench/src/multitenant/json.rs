//! The JSON document of a multitenant run: its config, phases, tenants and summary.

use super::cost_model::{tenant_cost_model, CostModel};
use super::figures::{mean, tenant_compaction_bytes, tenant_delta, tenant_figures, GetsByLevel};
use super::report::MtRunConfig;
use super::summary::{summary, SummaryDoc};
use super::{MtRun, TenantResult};
use crate::histogram::Histogram;
use crate::memory::MemorySample;
use crate::report::measures::ByPurpose;
use crate::report::{phase_doc, PhaseDoc};
use cerberus_bench_engines::profile::SizeProfile;
use cerberus_bench_engines::Engine;
use serde::Serialize;
use serde_json::Value;

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
    /// The tables a get of its keys consults there, per level (L0 first) and in its runs:
    /// the mean over up to 1,000 of its keys.
    get_path: Option<&'a super::MeanGetPath>,
    /// Table bytes compactions wrote into the namespace's runs and tree over the run.
    compaction_bytes_written: Option<u64>,
    /// Consolidations of its tree over the run (idle periods that rewrote it), and the
    /// table bytes they wrote (part of `compaction_bytes_written`).
    consolidations: Option<u64>,
    consolidation_bytes_written: Option<u64>,
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
                get_path: t.get_path.as_ref(),
                compaction_bytes_written: tenant_compaction_bytes(t),
                consolidations: tenant_delta(t, |s| s.consolidations),
                consolidation_bytes_written: tenant_delta(t, |s| s.consolidation_bytes_written),
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
    use crate::multitenant::fixtures::{mt_config, run};
    use cerberus_bench_engines::LayoutArg;
    use serde_json::json;

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
        assert_eq!(
            t["get_path"],
            json!({"levels": [0.5, 1.0, 0.25], "runs": 0.0})
        );
        assert_eq!(t["compaction_bytes_written"], 10_000);
        assert_eq!(t["consolidations"], 1);
        assert_eq!(t["consolidation_bytes_written"], 3000);
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
            "get_path",
            "compaction_bytes_written",
            "consolidations",
            "consolidation_bytes_written",
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
            "write_terms",
        ] {
            assert!(s[k].is_null(), "{k}");
        }
        assert_eq!(s["mean_measured_get_us"], 20.0);
        assert_eq!(s["peak_rss_bytes"], 150 << 20);
    }
}
