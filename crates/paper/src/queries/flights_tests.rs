//! The flights query set on a small stand-in with the flights' schema (written here, no
//! download): every query kind gives the same answer on the engine and on SQLite, before and
//! after the mutations.

use super::flights::{self, Config};
use super::flights_main::even_sample;
use super::flights_query::{self, Kind};
use cerberus_engine::IndexKind;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// `n` records like scripts/dataset-flights' lines, drawn so that each query of the set
/// finds some (the set's values among few others), with nulls where the flights have them.
pub(super) fn stand_in(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = StdRng::seed_from_u64(33);
    let carriers = ["UA", "DL", "AA", "B6", "MQ"];
    let airports = ["JFK", "LGA", "EWR"];
    let dests = ["LAX", "ATL", "ORD", "MIA", "BHM"];
    let tails = ["N725MQ", "N14228", "N512UA", "N5CAAA", "N619AA", "N0EGMQ"];
    let mut out = Vec::new();
    for i in 0..n {
        let pick = |rng: &mut StdRng, v: &[&str]| v[rng.gen_range(0..v.len())].to_string();
        // One in 20 null.
        let maybe = |rng: &mut StdRng, v: Value| match rng.gen_range(0..20) {
            0 => Value::Null,
            _ => v,
        };
        let v = json!(rng.gen_range(-20..420));
        let dep_delay = maybe(&mut rng, v);
        let v = json!(rng.gen_range(-60..500));
        let arr_delay = maybe(&mut rng, v);
        let v = json!(pick(&mut rng, &tails));
        let tailnum = maybe(&mut rng, v);
        let v = json!(rng.gen_range(20.0..600.0f64));
        let air_time = maybe(&mut rng, v);
        let doc = json!({
            "id": format!("{i:06}"),
            "year": 2013,
            "month": rng.gen_range(1..=12),
            "day": rng.gen_range(1..=28),
            "dep_delay": dep_delay,
            "arr_delay": arr_delay,
            "carrier": pick(&mut rng, &carriers),
            "flight": rng.gen_range(1..5000),
            "tailnum": tailnum,
            "origin": pick(&mut rng, &airports),
            "dest": pick(&mut rng, &dests),
            "air_time": air_time,
            "time_hour": "2013-01-01T10:00:00Z",
        });
        out.push((
            format!("{i:06}").into_bytes(),
            serde_json::to_vec(&doc).expect("a JSON value"),
        ));
    }
    out
}

#[test]
fn ours_equals_sqlite_on_every_query_kind() {
    equals_sqlite_on_every_query_kind(false);
}

#[test]
fn through_a_device_ours_equals_sqlite_on_every_query_kind() {
    equals_sqlite_on_every_query_kind(true);
}

/// A run of the stand-in `records` in `dir`: one round, one timed run, embedded, settled,
/// k = 50, every query timed; a test changes what it is about.
pub(super) fn stand_in_run<'a>(
    records: &'a [(Vec<u8>, Vec<u8>)],
    dir: &'a std::path::Path,
) -> Config<'a> {
    Config {
        dataset: std::path::Path::new("stand-in"),
        records,
        kind: IndexKind::Vas,
        rounds: 1,
        runs: 1,
        dir,
        device: false,
        reference: None,
        postgres: false,
        fresh: false,
        top_k: &[50],
        only: None,
    }
}

/// Top-K at the reference's k and at one that is not a multiple of any batch.
const TOP_K: [usize; 2] = [50, 7];

fn equals_sqlite_on_every_query_kind(device: bool) {
    let records = stand_in(3_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = flights::run(&Config {
        device,
        // Through the device right after the load (compactions running beside the
        // queries), embedded settled: the answers must not depend on it.
        fresh: device,
        top_k: &TOP_K,
        ..stand_in_run(&records, dir.path())
    })
    .expect("ours and SQLite give the same answers");
    assert_eq!(report.through, if device { "device" } else { "engine" });
    assert_eq!(report.fresh, device);
    // The peer at its best: SQLite answers keys-only finds and counts of one attribute from
    // its index alone (two attributes need the row: one index per attribute on both sides).
    let one_attr = |name: &str| !name.contains("two-attrs");
    let covered = |name: &str| name.ends_with(" keys") || name.ends_with("count");
    for r in report
        .rows
        .iter()
        .filter(|r| one_attr(&r.name) && covered(&r.name))
    {
        assert!(
            r.sqlite_plan.contains("COVERING INDEX"),
            "{}: {}",
            r.name,
            r.sqlite_plan
        );
    }
    // Every query in both phases, the load and the mutations; each query kind finds some.
    let set = flights_query::queries(&TOP_K);
    assert_eq!(report.rows.len(), 2 * set.len() + 2);
    assert_eq!(set.iter().filter(|q| q.name.starts_with("top")).count(), 4);
    for q in &set {
        for name in [q.name.clone(), format!("mut {}", q.name)] {
            let row = report
                .rows
                .iter()
                .find(|r| r.name == name)
                .expect("its row");
            assert!(row.count > 0, "{name} finds nothing on the stand-in");
            if let Kind::Top { k, .. } = q.kind {
                assert_eq!(row.count, k as u64, "{name}");
            }
        }
    }
    // The mutations move index entries: UA loses records to ZZ.
    let count = |name: &str| report.rows.iter().find(|r| r.name == name).map(|r| r.count);
    assert!(count("mut eq-large") < count("eq-large"));
}

/// `--only`: the queries whose name holds it are timed, in both phases; the load and the
/// mutations still run, and no other query gets a row.
#[test]
fn only_the_queries_named_are_timed() {
    let records = stand_in(1_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = flights::run(&Config {
        runs: 2,
        top_k: &[3],
        only: Some("top"),
        ..stand_in_run(&records, dir.path())
    })
    .expect("ours and SQLite give the same answers");
    let names: Vec<&str> = report.rows.iter().map(|r| r.name.as_str()).collect();
    let mut want = vec!["load", "top3 indexed", "top3 other", "mutate"];
    want.extend(["mut top3 indexed", "mut top3 other"]);
    assert_eq!(names, want);
    // Each query twice a round (--runs), the load and the mutations once.
    for r in &report.rows {
        let runs = if r.name.contains("top") { 2 } else { 1 };
        assert_eq!(r.ours_ms.len(), runs, "{}", r.name);
    }
}

#[test]
fn filters_become_sql() {
    let w = |f: Value| super::flights_sql::where_sql(&f).expect("SQL");
    assert_eq!(w(json!({"a": "x'y"})), "json_extract(doc, '$.a') = 'x''y'");
    assert_eq!(
        w(json!({"a": {"$prefix": "N5"}})),
        "json_extract(doc, '$.a') >= 'N5' AND json_extract(doc, '$.a') < 'N6'"
    );
    assert!(super::flights_sql::where_sql(&json!({"a": {"$in": [1]}})).is_err());
}

#[test]
fn an_even_sample_spans_the_records() {
    let records = |n: u8| (0..n).map(|i| (vec![i], vec![])).collect::<Vec<_>>();
    let keys = |d: Vec<(Vec<u8>, Vec<u8>)>| d.into_iter().map(|(k, _)| k[0]).collect::<Vec<_>>();
    assert_eq!(keys(even_sample(records(10), 3)), [0, 3, 6]);
    assert_eq!(
        keys(even_sample(records(10), 9)),
        [0, 1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(keys(even_sample(records(5), 5)), [0, 1, 2, 3, 4]);
    assert_eq!(keys(even_sample(records(5), 50)), [0, 1, 2, 3, 4]);
    assert!(even_sample(records(5), 0).is_empty());
}
