//! The peers of the multi-tenant figures on real files (cargo feature `rocksdb`): per-tenant
//! puts and gets of Cerberus' per-namespace trees against RocksDB with a column family per
//! tenant and with one shared column family and a tenant prefix, over the tenant count, each
//! settled before its gets. The paper has no RocksDB: the headline's reference is the bar a
//! user would set, ours at least the best RocksDB layout (1.0).

use super::ctx::{args, median_range, Ctx};
use super::parts::{doc, fig, headline, ours};
use super::Experiment;
use anyhow::{Context, Result};
use cerberus_figures::docs::paper::{ExperimentDoc, SeriesDoc};
use serde_json::Value;

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        name: "peers-multitenant",
        reproduces: "Cerberus Fig. 8 on files, with RocksDB (a column family per tenant; one \
                     shared, tenant prefix)",
        run: peers,
    }]
}

/// (engine, layout, legend).
const SYSTEMS: [(&str, &str, &str); 3] = [
    (
        "cerberus",
        "per_namespace",
        "Cerberus (per-namespace trees)",
    ),
    (
        "rocksdb",
        "per_namespace",
        "RocksDB, a column family per tenant",
    ),
    (
        "rocksdb",
        "shared",
        "RocksDB, one column family, tenant prefix",
    ),
];

fn ops(doc: &Value) -> Result<(f64, f64)> {
    let s = doc
        .get("summary")
        .context("a multitenant document without its summary")?;
    let f = |k: &str| {
        s.get(k)
            .and_then(Value::as_f64)
            .with_context(|| format!("no {k}"))
    };
    Ok((f("mean_put_ops_per_sec")?, f("mean_get_ops_per_sec")?))
}

fn peers(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    let tenants: Vec<usize> = ctx.scale(vec![1, 2], vec![1, 2, 4, 8]);
    let keys: u64 = ctx.scale(3_000, 200_000);
    // runs[t][system] = (puts, gets) per round.
    let mut runs: Vec<Vec<Vec<(f64, f64)>>> = vec![vec![Vec::new(); SYSTEMS.len()]; tenants.len()];
    for round in 0..ctx.rounds {
        for (ti, &t) in tenants.iter().enumerate() {
            for k in 0..SYSTEMS.len() {
                let si = (k + round) % SYSTEMS.len();
                let (engine, layout, _) = SYSTEMS[si];
                let mut a = args(&["multitenant", "--profile", "paper", "--storage", "posix"]);
                a.extend(args(&[
                    "--cache-bytes",
                    "0",
                    "--engine",
                    engine,
                    "--layout",
                    layout,
                ]));
                a.extend(["--tenants".into(), t.to_string()]);
                a.extend(["--num-per-tenant".into(), keys.to_string()]);
                a.extend(["--seed".into(), (42 + round as u64).to_string()]);
                runs[ti][si].push(ops(&ctx.run_json(&a)?)?);
            }
        }
    }
    let categories: Vec<String> = tenants.iter().map(|t| t.to_string()).collect();
    let series = |pick: fn(&(f64, f64)) -> f64| -> Vec<SeriesDoc> {
        (SYSTEMS.iter().enumerate())
            .map(|(si, (_, _, name))| {
                let per: Vec<Vec<f64>> = (runs.iter())
                    .map(|p| p[si].iter().map(pick).collect())
                    .collect();
                ours(*name, &per)
            })
            .collect()
    };
    let figure = |file: &str, what: &str, pick: fn(&(f64, f64)) -> f64| {
        fig(
            file,
            format!("{what} per tenant on files, against RocksDB (settled, no cache)"),
            "tenants",
            &format!("{what}/s per tenant (median of the runs)"),
            &categories,
            series(pick),
        )
    };
    let figures = vec![
        figure("peers-multitenant-puts.png", "puts", |r| r.0),
        figure("peers-multitenant-gets.png", "gets", |r| r.1),
    ];
    // At the most tenants: per round, ours over the better RocksDB layout of that round.
    let last = tenants.len() - 1;
    let t = tenants[last];
    let over_best = |pick: fn(&(f64, f64)) -> f64| -> Vec<f64> {
        let per = &runs[last];
        (0..per[0].len())
            .map(|r| pick(&per[0][r]) / pick(&per[1][r]).max(pick(&per[2][r])))
            .collect()
    };
    let command = format!(
        "multitenant --profile paper --storage posix --cache-bytes 0 --tenants {t} \
         --num-per-tenant {keys} --engine cerberus|rocksdb --layout per_namespace|shared"
    );
    let mut headlines = Vec::new();
    for (what, pick) in [
        ("puts", (|r: &(f64, f64)| r.0) as fn(&(f64, f64)) -> f64),
        ("gets", |r| r.1),
    ] {
        headlines.push(headline(
            format!(
                "{what} per tenant at {t} tenants, Cerberus over RocksDB's better layout \
                 (reference: the bar 1.0, not a paper figure)"
            ),
            1.0,
            median_range(&over_best(pick)),
            command.clone(),
            "",
        ));
    }
    doc(
        ctx,
        "Cerberus (TECS 2023), Fig. 8, with RocksDB as the peer on files",
        "Per-tenant puts and gets on real files: Cerberus' per-namespace trees against \
         RocksDB's two ways of holding tenants, each run settled before its gets.",
        figures,
        headlines,
        vec![
            format!("Keys per tenant: {keys}; files on this VM's disk, no block cache."),
            "RocksDB 7.8 (Debian's librocksdb) with the same --profile paper sizes.".into(),
        ],
    )
}
