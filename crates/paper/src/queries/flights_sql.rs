//! SQLite's side of the flights queries: the records as JSON text in a table keyed by the
//! record's key (`WITHOUT ROWID`, so an index's entries hold the key), a column per indexed
//! attribute filled at insert by `json_extract` of the document, an index on each, and each
//! query of the set as SQL. So SQLite's planner reads a keys-only find or a count from the
//! index alone ("USING COVERING INDEX"), the peer at its best: with indexes on the
//! `json_extract` expressions, or on generated columns (virtual or stored), SQLite 3.40 to
//! 3.46 read the table's row for every hit. WAL journal and `synchronous = OFF`, the engine's
//! durability without `sync`.

use super::flights_query::{FlightQuery, Kind, Out, ATTRS};
use anyhow::{bail, Result};
use bytes::Bytes;
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

pub struct SqliteSide {
    conn: Connection,
}

/// An attribute in SQL: its generated column if it is indexed, else `json_extract`.
fn extract(attr: &str) -> String {
    match ATTRS.contains(&attr) {
        true => column(attr),
        false => json_extract(attr),
    }
}

fn json_extract(attr: &str) -> String {
    format!("json_extract(doc, '$.{attr}')")
}

/// The generated column of indexed attribute `attr`.
fn column(attr: &str) -> String {
    format!("x_{attr}")
}

/// A JSON scalar as an SQL literal (json_extract gives numbers as numbers, strings as text).
fn literal(v: &Value) -> Result<String> {
    Ok(match v {
        Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        Value::Number(n) => n.to_string(),
        other => bail!("no SQL literal for {other}"),
    })
}

/// The filter documents of the set as a WHERE clause: equalities, ranges and prefixes on
/// top-level attributes, and-ed. A prefix is a range of text (in SQLite every number sorts
/// before any text, so a number never meets it, as in the engine).
pub fn where_sql(filter: &Value) -> Result<String> {
    where_clause(filter, extract, literal)
}

/// The filter documents of the set as a WHERE clause in the SQL of a database whose
/// attribute `a` reads as `column(a)` and whose literals `literal` writes: equalities, ranges
/// and prefixes (a range of text) on top-level attributes, and-ed.
pub fn where_clause(
    filter: &Value,
    column: fn(&str) -> String,
    literal: fn(&Value) -> Result<String>,
) -> Result<String> {
    let Value::Object(conds) = filter else {
        bail!("a filter is an object: {filter}");
    };
    let mut out = Vec::new();
    for (attr, cond) in conds {
        let x = column(attr);
        let Value::Object(ops) = cond else {
            out.push(format!("{x} = {}", literal(cond)?));
            continue;
        };
        for (op, v) in ops {
            let sql_op = match op.as_str() {
                "$eq" => "=",
                "$gt" => ">",
                "$gte" => ">=",
                "$lt" => "<",
                "$lte" => "<=",
                "$prefix" => {
                    let Some(p) = v.as_str().filter(|p| !p.is_empty() && p.is_ascii()) else {
                        bail!("$prefix: a non-empty ASCII string here, not {v}");
                    };
                    // The first string past every one starting with p.
                    let mut end = p.as_bytes().to_vec();
                    *end.last_mut().unwrap_or(&mut 0) += 1;
                    let end = String::from_utf8(end)?;
                    out.push(format!(
                        "{x} >= {} AND {x} < {}",
                        literal(v)?,
                        literal(&json!(end))?
                    ));
                    continue;
                }
                other => bail!("{other}: not in the flights set's SQL"),
            };
            out.push(format!("{x} {sql_op} {}", literal(v)?));
        }
    }
    Ok(out.join(" AND "))
}

/// The SQL of `q`.
pub fn sql_of(q: &FlightQuery) -> Result<String> {
    let w = where_sql(&q.filter)?;
    Ok(match &q.kind {
        Kind::Find { keys_only: false } => format!("SELECT id, doc FROM docs WHERE {w}"),
        Kind::Find { keys_only: true } => format!("SELECT id FROM docs WHERE {w}"),
        Kind::Top { by, k } => format!(
            "SELECT id, {b} FROM docs WHERE {w} AND {b} IS NOT NULL ORDER BY {b} DESC, id \
             LIMIT {k}",
            b = extract(by)
        ),
        Kind::Agg { op, attr } => {
            let arg = attr.map_or("*".to_string(), extract);
            format!("SELECT {op}({arg}) FROM docs WHERE {w}")
        }
    })
}

/// A put: the record, and its indexed attributes taken off the document by SQLite.
fn insert_sql() -> String {
    let (mut names, mut values) = (String::new(), String::new());
    for a in ATTRS {
        names += &format!(", {}", column(a));
        values += &format!(", json_extract(?2, '$.{a}')");
    }
    format!("INSERT OR REPLACE INTO docs (id, doc{names}) VALUES (?1, ?2{values})")
}

impl SqliteSide {
    /// A fresh database at `file`: the 6 indexes, then `records` in transactions of 1,000.
    pub fn load(file: &Path, records: &[(Vec<u8>, Vec<u8>)]) -> Result<(SqliteSide, f64)> {
        let _ = std::fs::remove_file(file);
        let conn = Connection::open(file)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "OFF")?;
        conn.set_prepared_statement_cache_capacity(64);
        let t = Instant::now();
        let columns: String = ATTRS.iter().map(|a| format!(", {}", column(a))).collect();
        let mut ddl = format!(
            "CREATE TABLE docs (id TEXT PRIMARY KEY, doc TEXT NOT NULL{columns}) WITHOUT ROWID;"
        );
        for a in ATTRS {
            ddl += &format!("CREATE INDEX docs_{a} ON docs ({});", column(a));
        }
        conn.execute_batch(&ddl)?;
        let side = SqliteSide { conn };
        let ops: Vec<(&[u8], Option<&[u8]>)> = records
            .iter()
            .map(|(k, v)| (k.as_slice(), Some(v.as_slice())))
            .collect();
        side.apply(&ops)?;
        Ok((side, t.elapsed().as_secs_f64()))
    }

    /// Puts (`Some`) and deletes (`None`), 1,000 to a transaction.
    pub fn write(&self, ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<()> {
        let ops: Vec<(&[u8], Option<&[u8]>)> = ops
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        self.apply(&ops)
    }

    fn apply(&self, ops: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        for chunk in ops.chunks(1_000) {
            let tx = self.conn.unchecked_transaction()?;
            {
                let mut put = tx.prepare_cached(&insert_sql())?;
                let mut del = tx.prepare_cached("DELETE FROM docs WHERE id = ?1")?;
                for (k, v) in chunk {
                    let k = std::str::from_utf8(k)?;
                    match v {
                        Some(v) => put.execute((k, std::str::from_utf8(v)?))?,
                        None => del.execute([k])?,
                    };
                }
            }
            tx.commit()?;
        }
        Ok(())
    }

    /// SQLite's plan for `q` (EXPLAIN QUERY PLAN's lines joined): which index, whether it
    /// covers the query.
    pub fn plan(&self, q: &FlightQuery) -> Result<String> {
        let mut stmt = self
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", sql_of(q)?))?;
        let lines = stmt
            .query_map([], |row| row.get::<_, String>(3))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(lines.join("; "))
    }

    /// One run of `q`: rows read out as (key, value bytes), copied as a client would.
    pub fn run(&self, q: &FlightQuery) -> Result<Out> {
        let sql = sql_of(q)?;
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query([])?;
        let bytes = |v: ValueRef| -> Bytes {
            match v {
                ValueRef::Text(t) | ValueRef::Blob(t) => Bytes::copy_from_slice(t),
                _ => Bytes::new(),
            }
        };
        Ok(match &q.kind {
            Kind::Find { keys_only } => {
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    let value = match keys_only {
                        true => Bytes::new(),
                        false => bytes(row.get_ref(1)?),
                    };
                    out.push((bytes(row.get_ref(0)?), value));
                }
                Out::Rows(out)
            }
            Kind::Top { .. } => {
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(bytes(row.get_ref(0)?));
                }
                Out::Ranked(out)
            }
            Kind::Agg { .. } => {
                let v = match rows.next()? {
                    Some(row) => match row.get_ref(0)? {
                        ValueRef::Integer(i) => json!(i),
                        ValueRef::Real(f) => json!(f),
                        ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                        _ => Value::Null,
                    },
                    None => Value::Null,
                };
                Out::Value(v)
            }
        })
    }
}
