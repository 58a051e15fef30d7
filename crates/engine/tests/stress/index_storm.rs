//! An index dropped and created again all along while queries read the namespace it indexes
//! (and the workers destroy namespaces of their own): every answer exact, whether a query
//! reads the index or scans the records. Two defects answered from part of an index: a query
//! that loaded its super version before a backfill's last entries reached a new memtable read
//! the index made ready meanwhile (a narrow window: `db::query::tests` holds it open); a destroy
//! during a drop brought the index back into the set while its tables went (this storm
//! answered `[]` in every run before the fix).

use super::config::cov;
use cerberus_engine::{Aggregate, Filter, IndexKind, Namespace, Readable, TopOptions};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Records of the namespace, written once: `{"n": i}` for i in 0..RECORDS.
pub const RECORDS: u64 = 1_100;

pub fn fill(ns: &Namespace) -> Result<(), String> {
    for i in 0..RECORDS {
        let v = json!({ "n": i, "pad": "p".repeat(40) }).to_string();
        ns.put(format!("r{i:05}").as_bytes(), v.as_bytes())
            .map_err(|e| format!("index storm: fill: {e}"))?;
    }
    Ok(())
}

/// Creates and drops the index on `n` until `stop`, the two kinds in turns; each round
/// ends with the index dropped. Returns the rounds run.
pub fn indexer(ns: &Namespace, stop: &AtomicBool) -> Result<u64, String> {
    let mut rounds = 0u64;
    while !stop.load(Ordering::Relaxed) || rounds == 0 {
        let kind = [IndexKind::Vas, IndexKind::Classic][(rounds % 2) as usize];
        cov("Namespace::create_index (storm)");
        ns.create_index("n", kind)
            .map_err(|e| format!("index storm: create_index {kind:?}: {e}"))?;
        std::thread::sleep(Duration::from_millis(1));
        cov("Namespace::drop_index (storm)");
        ns.drop_index("n")
            .map_err(|e| format!("index storm: drop_index: {e}"))?;
        rounds += 1;
        std::thread::sleep(Duration::from_millis(8));
    }
    Ok(rounds)
}

/// Top-3 and counts over every record until `stop`: each answer exact.
pub fn querier(ns: &Namespace, stop: &AtomicBool) -> Result<u64, String> {
    let all = Filter::parse(&json!({"n": {"$gte": 0}})).map_err(|e| e.to_string())?;
    let top = TopOptions {
        by: "n".into(),
        desc: true,
        k: 3,
        projection: None,
    };
    let want: Vec<Vec<u8>> = (RECORDS - 3..RECORDS)
        .rev()
        .map(|i| format!("r{i:05}").into_bytes())
        .collect();
    let mut queries = 0u64;
    while !stop.load(Ordering::Relaxed) || queries == 0 {
        cov("Namespace::top (storm)");
        let got = ns
            .top(&all, &top)
            .map_err(|e| format!("index storm: top: {e}"))?;
        let keys: Vec<Vec<u8>> = got.value.iter().map(|r| r.pk.to_vec()).collect();
        if keys != want {
            let shown: Vec<String> = keys
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            return Err(format!(
                "index storm: top 3 by n answered {shown:?} ({:?}); indexes now {:?}",
                got.stats,
                ns.list_indexes()
            ));
        }
        cov("Namespace::aggregate (storm)");
        let count = ns
            .aggregate(&all, &Aggregate::Count)
            .map_err(|e| format!("index storm: count: {e}"))?;
        if count.value != json!(RECORDS) {
            return Err(format!(
                "index storm: count answered {} of {RECORDS} (plan: {})",
                count.value, count.stats.plan
            ));
        }
        queries += 1;
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(queries)
}
