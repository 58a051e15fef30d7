//! Each workload at a tiny scale on the embedded engine: every operation done, every read of
//! a written record found, the inserts readable after; and a tenants run.

use super::args::Args;
use super::run::{run_all, Target};
use super::workload::{record_key, Op, Workload};
use crate::workload::ValuePool;
use cerberus_bench_engines::{self as engines, Engine, LayoutArg, OpenConfig};
use clap::Parser;

fn args(extra: &[&str]) -> Args {
    let mut v = vec!["ycsb", "--record-count", "400", "--threads", "2"];
    v.extend_from_slice(extra);
    Args::try_parse_from(v).unwrap()
}

fn all_found(target: Target<'_>, records: u64) {
    for n in 0..records {
        assert!(target.get(&record_key(n)).unwrap(), "record {n}");
    }
}

#[test]
fn every_workload_does_its_operations_on_the_embedded_engine() {
    let a = args(&["--operation-count", "600"]);
    for w in Workload::parse_list("a,b,c,d,e,f").unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = a.config(w).unwrap();
        let db = engines::open(
            Engine::Cerberus,
            &OpenConfig::at(dir.path(), LayoutArg::PerNamespace),
        )
        .unwrap();
        let target = Target {
            db: &*db,
            tenant: None,
        };
        let values = ValuePool::new(cfg.record_bytes, 1.0, 1);
        let out = run_all(&[target], &cfg, &values).unwrap().remove(0);
        assert_eq!(out.load.ops[Op::Insert.index()].count, 400, "{w:?}");
        assert_eq!(out.run.total(), 600, "{w:?}");
        assert_eq!(out.run.read_misses, 0, "{w:?}");
        for op in Op::ALL {
            let done = out.run.ops[op.index()].count > 0;
            let in_mix = w.mix().iter().any(|m| m.0 == op);
            assert_eq!(done, in_mix, "{w:?} {op:?}");
        }
        let inserts = out.run.ops[Op::Insert.index()].count;
        assert_eq!(out.records, 400 + inserts, "{w:?}");
        if w == Workload::E {
            assert!(out.run.scanned >= out.run.ops[Op::Scan.index()].count);
        }
        all_found(target, out.records);
        db.close().unwrap();
    }
}

#[test]
fn tenants_each_load_their_share_and_run_at_once() {
    let a = args(&["--tenants", "4", "--operation-count", "150"]);
    let cfg = a.config(Workload::A).unwrap();
    assert_eq!(cfg.record_count, 100);
    assert!(a.config(Workload::E).is_err());
    let dir = tempfile::tempdir().unwrap();
    let db = engines::open(Engine::Cerberus, &a.open_config(dir.path())).unwrap();
    let tenants = db.create_tenants(4).unwrap();
    let targets: Vec<Target<'_>> = tenants
        .iter()
        .map(|t| Target {
            db: &*db,
            tenant: Some(t),
        })
        .collect();
    let values = ValuePool::new(cfg.record_bytes, 1.0, 1);
    let outs = run_all(&targets, &cfg, &values).unwrap();
    assert_eq!(outs.len(), 4);
    for (o, t) in outs.iter().zip(&targets) {
        assert_eq!(o.load.total(), 100);
        assert_eq!(o.run.total(), 150);
        assert_eq!(o.run.read_misses, 0);
        all_found(*t, o.records);
    }
    db.close().unwrap();
}

#[test]
fn the_command_prints_and_writes_every_workload() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ycsb.json");
    let a = args(&[
        "--workload",
        "c,e",
        "--rounds",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    let runs = super::command::run(&a).unwrap();
    assert_eq!(runs.len(), 4);
    let docs: Vec<_> = runs.iter().map(super::report::doc).collect();
    assert_eq!(docs[1]["workload"], "e");
    assert_eq!(docs[0]["run"]["ops"], 400);
    assert!(docs[1]["run"]["by_op"]["scan"]["p99_us"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_markdown_table_has_a_row_per_workload_and_engine_and_the_ratio_of_each_round() {
    let a = args(&[
        "--workload",
        "c",
        "--rounds",
        "2",
        "--operation-count",
        "200",
    ]);
    let mut runs = super::command::run(&a).unwrap();
    // A second engine's runs: the same command again, its runs named after another engine.
    for mut r in super::command::run(&a).unwrap() {
        r.engine = Engine::Floor;
        runs.push(r);
    }
    let rate = |e: Engine, round: usize| {
        runs.iter()
            .find(|r| r.engine == e && r.round == round)
            .unwrap()
            .ops_per_sec()
    };
    let ratios: Vec<f64> = (0..2)
        .map(|round| rate(Engine::Cerberus, round) / rate(Engine::Floor, round))
        .collect();
    let table = super::report::markdown(&runs, &[Engine::Cerberus, Engine::Floor], &[Workload::C]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].ends_with("| cerberus/engine |"), "{table}");
    assert!(lines[2].starts_with("| c (read only"), "{table}");
    assert!(
        lines[2].contains("| cerberus |") && lines[2].ends_with("|  |"),
        "{table}"
    );
    let median = (ratios[0] + ratios[1]) / 2.0;
    assert!(lines[3].contains("| floor |"), "{table}");
    assert!(
        lines[3].ends_with(&format!(
            "**{median:.3}** ({:.3}-{:.3}) |",
            ratios[0].min(ratios[1]),
            ratios[0].max(ratios[1])
        )),
        "{table}"
    );
}
