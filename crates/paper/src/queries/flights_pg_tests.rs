//! PostgreSQL as the third side of the flights run: on the stand-in records, every query kind
//! gives the same answer on PostgreSQL as through the device (and so as on SQLite), before
//! and after the mutations; selective queries use their index.

use super::flights::{self, Config};
use super::flights_query;
use super::flights_tests::{stand_in, stand_in_run};
use serde_json::json;

#[test]
fn postgres_equals_the_device_and_sqlite_on_every_query_kind() {
    let Some(bin) = super::postgres_server::bin_dir() else {
        // Not silent: the reason is printed (run with --nocapture to see it).
        eprintln!(
            "SKIPPED: PostgreSQL's initdb is neither on PATH nor in /usr/lib/postgresql/15/bin \
             (scripts/install-peers installs it)"
        );
        return;
    };
    eprintln!("PostgreSQL from {}", bin.display());
    let records = stand_in(3_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = flights::run(&Config {
        device: true,
        postgres: true,
        ..stand_in_run(&records, dir.path())
    })
    .expect("ours, SQLite and PostgreSQL give the same answers");
    let set = flights_query::queries(&[50]);
    assert_eq!(report.rows.len(), 2 * set.len() + 2);
    for r in &report.rows {
        assert_eq!(r.postgres_ms.len(), 1, "{}: one timed run", r.name);
        assert!(r.postgres_ratio.is_some(), "{}", r.name);
    }
    assert_eq!(report.postgres_analyze_ms.len(), 1);
    let settings = report.postgres_settings.as_deref().unwrap_or_default();
    assert!(settings.contains("synchronous_commit = off"), "{settings}");
    // A selective filter finds its records through its expression index.
    for name in ["eq-small", "range-small keys", "mut eq-small keys"] {
        let row = report
            .rows
            .iter()
            .find(|r| r.name == name)
            .expect("its row");
        assert!(
            row.postgres_plan.contains("flights_"),
            "{name}: {}",
            row.postgres_plan
        );
    }
    let table = flights::render(&report);
    assert!(table.contains("PostgreSQL/ours"), "{table}");
}

#[test]
fn filters_become_postgres_sql() {
    let w = |f: serde_json::Value| super::flights_pg::where_sql(&f).expect("SQL");
    assert_eq!(w(json!({"a": "x'y"})), "(doc->'a') = '\"x''y\"'::jsonb");
    assert_eq!(
        w(json!({"a": {"$gte": 60, "$lt": 120}})),
        "(doc->'a') >= '60'::jsonb AND (doc->'a') < '120'::jsonb"
    );
    assert_eq!(
        w(json!({"a": {"$prefix": "N5"}})),
        "(doc->'a') >= '\"N5\"'::jsonb AND (doc->'a') < '\"N6\"'::jsonb"
    );
    assert!(super::flights_pg::where_sql(&json!({"a": {"$in": [1]}})).is_err());
}
