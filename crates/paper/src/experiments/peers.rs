//! The peers of the multi-tenant figures on real files (cargo feature `rocksdb`): per-tenant
//! puts and gets of Cerberus' per-namespace trees against RocksDB with a column family per
//! tenant and with one shared column family and a tenant prefix, over the tenant count, each
//! settled before its gets. The paper has no RocksDB: the headline's reference is the bar a
//! user would set, ours at least the best RocksDB layout (1.0). And range scans against
//! RocksDB's iterator with its automatic readahead and with a set one. Built with the `fjall`
//! feature too, fjall runs beside RocksDB in both (a partition per tenant and one shared; its
//! range iterator), with a headline of its own.

use super::ctx::{args, median_range, Ctx};
use super::experiment::Experiment;
use super::parts::{bar, doc, fig, ours};
use anyhow::{Context, Result};
use cerberus_figures::docs::paper::{ExperimentDoc, SeriesDoc};
use serde_json::Value;

pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "peers-multitenant",
            reproduces: if cfg!(feature = "fjall") {
                "Cerberus Fig. 8 on files, with RocksDB and fjall (a column family or partition \
                 per tenant; one shared, tenant prefix)"
            } else {
                "Cerberus Fig. 8 on files, with RocksDB (a column family per tenant; one \
                 shared, tenant prefix)"
            },
            run: peers,
        },
        Experiment {
            name: "peers-scans",
            reproduces: if cfg!(feature = "fjall") {
                "IterKVSSD range scans on files, with RocksDB's iterator (automatic and 2 MiB \
                 readahead) and fjall's (inline and separated)"
            } else {
                "IterKVSSD range scans on files, with RocksDB's iterator (automatic and \
                 2 MiB readahead)"
            },
            run: scans,
        },
    ]
}

/// (engine, layout, legend): Cerberus, RocksDB's two layouts, then fjall's (`fjall` feature).
const SYSTEMS: &[(&str, &str, &str)] = &[
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
    #[cfg(feature = "fjall")]
    ("fjall", "per_namespace", "fjall, a partition per tenant"),
    #[cfg(feature = "fjall")]
    ("fjall", "shared", "fjall, one partition, tenant prefix"),
];

/// (peer's name, engine, its two systems' indices in `SYSTEMS` or `SCANNERS`): each headline
/// holds ours over the better of the two.
const PEERS: &[(&str, &str, [usize; 2])] = &[
    ("RocksDB", "rocksdb", [1, 2]),
    #[cfg(feature = "fjall")]
    ("fjall", "fjall", [3, 4]),
];

/// The peers by name: `RocksDB` (`RocksDB and fjall`).
fn peer_names() -> String {
    let names: Vec<&str> = PEERS.iter().map(|p| p.0).collect();
    names.join(" and ")
}

/// The peers by name, for titles: `RocksDB as the peer` (`RocksDB and fjall as the peers`).
fn as_the_peers() -> String {
    match PEERS.len() {
        1 => format!("{} as the peer", peer_names()),
        _ => format!("{} as the peers", peer_names()),
    }
}

/// The peers by name, possessive: `RocksDB's` (`RocksDB's and fjall's`).
fn peers_possessive() -> String {
    let names: Vec<String> = PEERS.iter().map(|p| format!("{}'s", p.0)).collect();
    names.join(" and ")
}

/// `cerberus|rocksdb` (`|fjall`): the engines of a command.
fn engine_choice() -> String {
    std::iter::once("cerberus")
        .chain(PEERS.iter().map(|p| p.1))
        .collect::<Vec<_>>()
        .join("|")
}

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
    let tenants: Vec<usize> = ctx.scale(vec![1, 2], vec![1, 2, 8]);
    let keys: u64 = ctx.scale(3_000, 100_000);
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
            format!(
                "{what} per tenant on files, against {} (settled, no cache)",
                peer_names()
            ),
            "tenants",
            &format!("{what}/s per tenant (median of the runs)"),
            &categories,
            series(pick),
        )
        .as_bars()
    };
    let figures = vec![
        figure("peers-multitenant-puts.png", "puts", |r| r.0),
        figure("peers-multitenant-gets.png", "gets", |r| r.1),
    ];
    // At the most tenants: per round, ours over the peer's better layout of that round.
    let last = tenants.len() - 1;
    let t = tenants[last];
    let over_best = |pick: fn(&(f64, f64)) -> f64, [a, b]: [usize; 2]| -> Vec<f64> {
        let per = &runs[last];
        (0..per[0].len())
            .map(|r| pick(&per[0][r]) / pick(&per[a][r]).max(pick(&per[b][r])))
            .collect()
    };
    let command = format!(
        "multitenant --profile paper --storage posix --cache-bytes 0 --tenants {t} \
         --num-per-tenant {keys} --engine {} --layout per_namespace|shared",
        engine_choice()
    );
    let mut headlines = Vec::new();
    for &(peer, _, pair) in PEERS {
        for (what, pick) in [
            ("puts", (|r: &(f64, f64)| r.0) as fn(&(f64, f64)) -> f64),
            ("gets", |r| r.1),
        ] {
            headlines.push(bar(
                format!(
                    "{what} per tenant at {t} tenants, Cerberus over {peer}'s better layout \
                     (the bar: 1.0, not a paper figure)"
                ),
                1.0,
                median_range(&over_best(pick, pair)),
                command.clone(),
            ));
        }
    }
    let mut notes = vec![
        format!("Keys per tenant: {keys}; files on this VM's disk, no block cache."),
        "RocksDB 7.8 (Debian's librocksdb) with the same --profile paper sizes.".into(),
    ];
    if cfg!(feature = "fjall") {
        notes.push(
            "fjall 2.11 with the --profile paper sizes it has (memtable, tables, L0 trigger, \
             level ratio, blocks, bloom bits; its L1 is the L0 trigger's tables)."
                .into(),
        );
    }
    doc(
        ctx,
        &format!(
            "Cerberus (TECS 2023), Fig. 8, with {} on files",
            as_the_peers()
        ),
        &format!(
            "Per-tenant puts and gets on real files: Cerberus' per-namespace trees against \
             {} two ways of holding tenants, each run settled before its gets.",
            peers_possessive()
        ),
        figures,
        headlines,
        notes,
    )
}

/// (engine, readahead bytes, legend) of the range-scan peers (fjall has no readahead of its
/// own: once inline, once with key-value separation).
const SCANNERS: &[(&str, usize, &str)] = &[
    ("cerberus", 0, "Cerberus (value prefetch, index prefetch)"),
    ("rocksdb", 0, "RocksDB, automatic readahead"),
    ("rocksdb", 2 << 20, "RocksDB, 2 MiB readahead"),
    #[cfg(feature = "fjall")]
    ("fjall", 0, "fjall"),
    #[cfg(feature = "fjall")]
    ("fjall-blob", 0, "fjall, key-value separation"),
];

/// Entries a seekrandom run read per second.
fn entries_per_sec(doc: &Value) -> Result<f64> {
    let phases = doc.get("phases").and_then(Value::as_array);
    let p = phases
        .and_then(|ps| {
            ps.iter()
                .find(|p| p.get("name").and_then(Value::as_str) == Some("seekrandom"))
        })
        .context("a document without its seekrandom phase")?;
    let f = |k: &str| {
        p.get(k)
            .and_then(Value::as_f64)
            .with_context(|| format!("no {k}"))
    };
    let (entries, secs) = (f("entries")?, f("seconds")?);
    if entries <= 0.0 || secs <= 0.0 {
        anyhow::bail!("a seekrandom run that read nothing");
    }
    Ok(entries / secs)
}

/// IterKVSSD's range scans on files against RocksDB's iterator with and without a set
/// readahead: each system fills its database once a round, then scans it at each length.
fn scans(ctx: &mut Ctx) -> Result<ExperimentDoc> {
    let num: u64 = ctx.scale(5_000, 400_000);
    let seeks: u64 = ctx.scale(50, 2_000);
    let lengths: Vec<usize> = ctx.scale(vec![10, 100], vec![10, 100, 1000]);
    let common = |a: &mut Vec<String>| {
        a.extend(args(&[
            "--value-size",
            "1024",
            "--key-size",
            "16",
            "--cache-bytes",
            "0",
        ]));
        a.extend(["--num".into(), num.to_string()]);
    };
    // runs[length][system] = entries/s per round.
    let mut runs: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); SCANNERS.len()]; lengths.len()];
    for round in 0..ctx.rounds {
        for k in 0..SCANNERS.len() {
            let si = (k + round) % SCANNERS.len();
            let (engine, readahead, _) = SCANNERS[si];
            let db = ctx.path("db");
            let mut fill = args(&["fillrandom", "--engine", engine, "--db"]);
            fill.push(db.display().to_string());
            common(&mut fill);
            ctx.run(&fill)?;
            for (li, &l) in lengths.iter().enumerate() {
                let mut a = args(&["seekrandom", "--engine", engine, "--db"]);
                a.push(db.display().to_string());
                common(&mut a);
                a.extend(["--seeks".into(), seeks.to_string()]);
                a.extend(["--scan-length".into(), l.to_string()]);
                a.extend(["--readahead-bytes".into(), readahead.to_string()]);
                runs[li][si].push(entries_per_sec(&ctx.run_json(&a)?)?);
            }
            let _ = std::fs::remove_dir_all(&db);
        }
    }
    let categories: Vec<String> = lengths.iter().map(|l| l.to_string()).collect();
    let series: Vec<SeriesDoc> = (SCANNERS.iter().enumerate())
        .map(|(si, (_, _, name))| {
            let per: Vec<Vec<f64>> = runs.iter().map(|r| r[si].clone()).collect();
            ours(*name, &per)
        })
        .collect();
    let figures = vec![fig(
        "peers-scans.png",
        format!("Range scans on files: entries/s over the scan length ({num} keys of 1 KiB)"),
        "entries read per seek",
        "entries/s (median of the runs)",
        &categories,
        series,
    )];
    // At the middle length: per round, ours over the peer's better setting of that round.
    let mid = lengths.len() / 2;
    let r = &runs[mid];
    let l = lengths[mid];
    let headlines = (PEERS.iter())
        .map(|&(peer, engine, [a, b])| {
            let over_best: Vec<f64> = (0..r[0].len())
                .map(|i| r[0][i] / r[a][i].max(r[b][i]))
                .collect();
            let (what, flag) = match engine {
                "rocksdb" => ("readahead", " [--readahead-bytes 2097152]"),
                _ => ("setting (inline or separated)", ""),
            };
            let engines = match engine {
                "fjall" => "cerberus|fjall|fjall-blob",
                _ => "cerberus|rocksdb",
            };
            bar(
                format!(
                    "entries/s of scans of {l}, Cerberus over {peer}'s better {what} (the bar: \
                     1.0, not a paper figure)"
                ),
                1.0,
                median_range(&over_best),
                format!(
                    "fillrandom, then seekrandom --scan-length {l} --seeks {seeks} --engine \
                     {engines}{flag} --num {num} --value-size 1024"
                ),
            )
        })
        .collect();
    doc(
        ctx,
        &format!(
            "IterKVSSD (slides), range scans, with {} iterator{} on files",
            peers_possessive(),
            if PEERS.len() > 1 {
                "s as the peers"
            } else {
                " as the peer"
            }
        ),
        &format!(
            "Range scans (a seek, then N entries) on real files: Cerberus' iterator with its \
             value and index prefetch against RocksDB's iterator with its automatic readahead \
             and with a 2 MiB readahead{}.",
            if cfg!(feature = "fjall") {
                ", and fjall's, inline and with key-value separation"
            } else {
                ""
            }
        ),
        figures,
        headlines,
        vec![
            format!("{num} keys of 16 B with values of 1 KiB on this VM's files, no cache."),
            "The slides compare IterKVSSD with its own baselines on the device, not RocksDB."
                .into(),
        ],
    )
}
