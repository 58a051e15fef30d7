//! The SQLite peer of `cerberus-bench queries`: the same records as JSON documents in one
//! table, an expression index on the queried attribute (created before the load, as the
//! engine's), the same queries through SQL. WAL journal and `synchronous = OFF`, the
//! durability of the engine without `sync`.

use super::workload::{QuerySet, Shape};
use anyhow::Result;
use rusqlite::{params_from_iter, Connection, ToSql};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// A JSON scalar as an SQL parameter (json_extract returns numbers as numbers, strings as
/// text).
fn param(v: &Value) -> Box<dyn ToSql> {
    match v {
        Value::String(s) => Box::new(s.clone()),
        Value::Bool(b) => Box::new(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Box::new(i),
            None => Box::new(n.as_f64().unwrap_or(0.0)),
        },
        _ => Box::new(rusqlite::types::Null),
    }
}

fn path(attr: &str) -> String {
    format!("'$.{attr}'")
}

pub fn run(
    file: &Path,
    records: &[(Vec<u8>, Vec<u8>)],
    set: &QuerySet,
    repeat: usize,
    load_only: bool,
) -> Result<Value> {
    let _ = std::fs::remove_file(file);
    let mut conn = Connection::open(file)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    let t = Instant::now();
    conn.execute_batch(&format!(
        "CREATE TABLE docs (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
         CREATE INDEX docs_sk ON docs (json_extract(doc, {}));",
        path(&set.attr)
    ))?;
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare("INSERT OR REPLACE INTO docs (id, doc) VALUES (?1, ?2)")?;
        for (k, v) in records {
            insert.execute((String::from_utf8_lossy(k), String::from_utf8_lossy(v)))?;
        }
    }
    tx.commit()?;
    let load_secs = t.elapsed().as_secs_f64();
    eprintln!("sqlite: loaded in {load_secs:.2} s");
    if load_only {
        return Ok(json!({ "engine": "sqlite", "load_secs": load_secs }));
    }
    let sk = format!("json_extract(doc, {})", path(&set.attr));
    let mut results = Vec::new();
    for q in &set.queries {
        let Some(key) = &q.sk else {
            // A user's filter has no SQL translation here.
            results.push(
                json!({"query": q.name, "sk": q.sk_label(), "median_us": null, "results": null}),
            );
            continue;
        };
        let limit = |l: Option<u64>| l.map_or(String::new(), |l| format!(" LIMIT {l}"));
        let sql = match &q.shape {
            Shape::Pks { limit: l } => {
                format!(
                    "SELECT id FROM docs WHERE {sk} = ?1{}",
                    limit(l.map(|l| l as u64))
                )
            }
            Shape::Find {
                project: None,
                limit: l,
            } => {
                format!("SELECT id, doc FROM docs WHERE {sk} = ?1{}", limit(*l))
            }
            Shape::Find {
                project: Some(p),
                limit: l,
            } => {
                let cols: Vec<String> = p
                    .iter()
                    .map(|a| format!("json_extract(doc, {})", path(a)))
                    .collect();
                format!(
                    "SELECT id, json_object({}) FROM docs WHERE {sk} = ?1{}",
                    p.iter()
                        .zip(&cols)
                        .map(|(a, c)| format!("'{a}', {c}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    limit(*l)
                )
            }
            Shape::Top { by, k } => format!(
                "SELECT id FROM docs WHERE {sk} = ?1 AND json_extract(doc, {b}) IS NOT NULL \
                 ORDER BY json_extract(doc, {b}) DESC, id LIMIT {k}",
                b = path(by)
            ),
            Shape::Avg { attr } => format!(
                "SELECT avg(json_extract(doc, {})) FROM docs WHERE {sk} = ?1",
                path(attr)
            ),
        };
        let mut stmt = conn.prepare(&sql)?;
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..repeat {
            let t = Instant::now();
            let mut rows = stmt.query(params_from_iter([param(key)]))?;
            let mut n = 0usize;
            while let Some(row) = rows.next()? {
                // Read every column out, as a client would.
                for i in 0..row.as_ref().column_count() {
                    let _: rusqlite::types::Value = row.get(i)?;
                }
                n += 1;
            }
            times.push(t.elapsed().as_secs_f64() * 1e6);
            found = n;
        }
        results.push(json!({
            "query": q.name, "sk": q.sk_label(), "median_us": super::median(times),
            "results": found, "sql": sql,
        }));
    }
    Ok(json!({ "engine": "sqlite", "load_secs": load_secs, "queries": results }))
}
