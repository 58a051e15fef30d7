//! The Cerberus paper's Destroy (section 4.5, Table 2): a tenant removed and its space
//! reclaimed, by per-namespace trees' Destroy against the namespace-unaware baseline, which
//! can only delete the tenant's keys one by one (`cerberus-bench reclaim`). The paper
//! describes the mechanism without a figure: this experiment has figures and no headline.

use super::ctx::{args, Ctx};
use super::experiment::Experiment;
use super::parts::{doc, fig, ours};
use anyhow::{Context, Result};
use cerberus_figures::docs::paper::ExperimentDoc;
use serde_json::Value;

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        name: "cerberus-destroy",
        reproduces: "Cerberus section 4.5: Destroy and space reclamation against deleting a \
                     tenant's keys",
        run: destroy,
    }]
}

const LAYOUTS: [(&str, &str); 2] = [
    ("per_namespace", "Cerberus: Destroy"),
    ("baseline", "baseline: the tenant's keys deleted"),
];

/// (removal s, reclamation s, share of a tenant's bytes freed).
fn point(doc: &Value) -> Result<(f64, f64, f64)> {
    let f = |k: &str| {
        doc.get(k)
            .and_then(Value::as_f64)
            .with_context(|| format!("no {k}"))
    };
    Ok((f("remove_secs")?, f("reclaim_secs")?, f("reclaimed_share")?))
}

fn destroy(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    let tenants: usize = ctx.scale(4, 8);
    let keys: u64 = ctx.scale(2_000, 100_000);
    let mut runs: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); LAYOUTS.len()];
    for round in 0..ctx.rounds {
        for k in 0..LAYOUTS.len() {
            let li = (k + round) % LAYOUTS.len();
            let mut a = args(&["reclaim", "--layout", LAYOUTS[li].0, "--value-size", "1024"]);
            a.extend(["--tenants".into(), tenants.to_string()]);
            a.extend(["--num-per-tenant".into(), keys.to_string()]);
            a.extend(["--seed".into(), (42 + round as u64).to_string()]);
            runs[li].push(point(&ctx.run_json(&a)?)?);
        }
    }
    let categories: Vec<String> = LAYOUTS.iter().map(|(_, n)| n.to_string()).collect();
    let series = |name: &str, pick: fn(&(f64, f64, f64)) -> f64| {
        let per: Vec<Vec<f64>> = runs.iter().map(|r| r.iter().map(pick).collect()).collect();
        ours(name, &per)
    };
    let figures = vec![
        fig(
            "cerberus-destroy-seconds.png",
            format!("Removing one of {tenants} tenants ({keys} keys of 1 KiB each)"),
            "how the tenant goes",
            "seconds (median of the runs)",
            &categories,
            vec![
                series("removal", |p| p.0),
                series("reclamation (flush, compaction, GC)", |p| p.1),
            ],
        )
        .as_bars(),
        fig(
            "cerberus-destroy-space.png",
            "Space freed, over one tenant's share of the files".into(),
            "how the tenant goes",
            "share freed (1.0: all of it)",
            &categories,
            vec![series("freed / share", |p| p.2)],
        )
        .as_bars(),
    ];
    doc(
        ctx,
        "Cerberus (TECS 2023), section 4.5 and Table 2 (Destroy)",
        "A tenant removed by Destroy or by deleting its keys, and its space reclaimed.",
        figures,
        Vec::new(),
        vec![
            "The paper gives no figure for Destroy: no headline to compare.".into(),
            format!("{tenants} tenants x {keys} keys of 1 KiB on this VM's files."),
            "Reclamation here is the engine's own (compaction and value-log GC); the paper \
             invalidates flash pages for the SSD's GC, which this software device does not \
             model."
                .into(),
        ],
    )
}
