//! The SQLite peer of `cerberus-paper queries`: the same records as JSON documents in one
//! table, an expression index on the queried attribute (created before the load, as the
//! engine's), the same queries through SQL. WAL journal and `synchronous = OFF`, the
//! durability of the engine without `sync`. Loaded once, then queried beside the engines,
//! query by query, so that a slow spell of this machine falls on all of them alike.

use super::workload::{Query, QueryRun, QuerySet, RunStats, Shape};
use anyhow::Result;
use rusqlite::types::ValueRef;
use rusqlite::{params_from_iter, Connection, ToSql};
use serde_json::{json, Value};
use std::collections::HashMap;
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

/// A loaded SQLite database.
pub struct Sqlite {
    conn: Connection,
    /// The SQL of each query, by name (built before any clock starts).
    sql: HashMap<String, String>,
}

impl Sqlite {
    /// Loads `records` into a fresh database at `file`; returns it and the load's seconds.
    pub fn load(
        file: &Path,
        records: &[(Vec<u8>, Vec<u8>)],
        set: &QuerySet,
    ) -> Result<(Sqlite, f64)> {
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
        // Every statement written, prepared and cached before any clock starts.
        let sql: HashMap<String, String> = set
            .queries
            .iter()
            .filter_map(|q| Some((q.name.clone(), sql_of(q, &set.attr)?)))
            .collect();
        conn.set_prepared_statement_cache_capacity(sql.len().max(16));
        for s in sql.values() {
            conn.prepare_cached(s)?;
        }
        Ok((Sqlite { conn, sql }, load_secs))
    }

    /// One run of `q`: every column of every row read out as a client would (text copied);
    /// the bytes are those of the columns read.
    pub fn run(&self, q: &Query) -> Result<QueryRun> {
        let (Some(key), Some(sql)) = (&q.sk, self.sql.get(&q.name)) else {
            return Ok((0, RunStats::Json(json!({ "sql": null })), 0));
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(params_from_iter([param(key)]))?;
        let (mut n, mut bytes) = (0usize, 0u64);
        while let Some(row) = rows.next()? {
            for i in 0..row.as_ref().column_count() {
                let v: rusqlite::types::Value = row.get(i)?;
                bytes += match ValueRef::from(&v) {
                    ValueRef::Text(t) | ValueRef::Blob(t) => t.len() as u64,
                    ValueRef::Null => 0,
                    ValueRef::Integer(_) | ValueRef::Real(_) => 8,
                };
            }
            n += 1;
        }
        Ok((n, RunStats::Json(json!({ "sql": sql })), bytes))
    }
}

/// The SQL of `q` on attribute `attr` (its value the parameter), or `None` for a user's
/// filter (no SQL translation here). A query's name fixes its shape.
fn sql_of(q: &Query, attr: &str) -> Option<String> {
    q.sk.as_ref()?;
    let sk = format!("json_extract(doc, {})", path(attr));
    let limit = |l: Option<u64>| l.map_or(String::new(), |l| format!(" LIMIT {l}"));
    Some(match &q.shape {
        Shape::Pks { limit: l } => {
            format!(
                "SELECT id FROM docs WHERE {sk} = ?1{}",
                limit(l.map(|l| l as u64))
            )
        }
        Shape::Find {
            project: None,
            limit: l,
        } => format!("SELECT id, doc FROM docs WHERE {sk} = ?1{}", limit(*l)),
        Shape::Find {
            project: Some(p),
            limit: l,
        } => format!(
            "SELECT id, json_object({}) FROM docs WHERE {sk} = ?1{}",
            p.iter()
                .map(|a| format!("'{a}', json_extract(doc, {})", path(a)))
                .collect::<Vec<_>>()
                .join(", "),
            limit(*l)
        ),
        Shape::Top { by, k } => format!(
            "SELECT id FROM docs WHERE {sk} = ?1 AND json_extract(doc, {b}) IS NOT NULL \
                 ORDER BY json_extract(doc, {b}) DESC, id LIMIT {k}",
            b = path(by)
        ),
        Shape::Avg { attr } => format!(
            "SELECT avg(json_extract(doc, {})) FROM docs WHERE {sk} = ?1",
            path(attr)
        ),
    })
}
