//! PostgreSQL's side of the flights queries (feature `postgres`, with `--device local`): the
//! peer of queries through the device is a database server a user would run instead, reached
//! over loopback TCP too. The records as `flights(id text primary key, doc jsonb)`, an
//! expression index on `(doc->'attr')` for each of the 6 indexed attributes (jsonb's own
//! order: numbers by value, strings by bytes in the C locale, so one index serves equalities,
//! ranges and prefixes), `ANALYZE` after the load (a user would; timed apart), and each query
//! of the set in PostgreSQL's SQL through the sync client.
//!
//! Settings a user would give the server for the comparison: `shared_buffers` = the device's
//! caches (block cache + row cache); `synchronous_commit = off` with `fsync = on`, the
//! device's own default (it acknowledges a write before syncing it, `DeviceConfig::sync`
//! false, and syncs in the background), so neither side waits for a sync on a commit.
//!
//! Where the SQL differs from SQLite's: a filter compares `doc->'attr'` to a jsonb literal
//! (`= '"UA"'`, `>= '60'`); a top-K keeps numbers only (`jsonb_typeof = 'number'`); sums,
//! means, minima and maxima run on `numeric`. jsonb keeps documents parsed, so a find returns
//! `doc::text` in jsonb's own layout (key order, spacing): its answers are compared with ours
//! by the documents' content ([`Out::canonical`]), not their bytes.

use super::flights_query::{FlightQuery, Kind, Out, ATTRS, BATCH};
use super::postgres_server::{PgServer, Settings};
use anyhow::{bail, Result};
use bytes::Bytes;
use cerberus_bench_engines::local_device;
use postgres::types::ToSql;
use postgres::{Client, Statement};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

pub struct PgSide {
    client: RefCell<Client>,
    /// Each query's statement, prepared once (as SQLite's are cached).
    stmts: RefCell<HashMap<String, Statement>>,
    described: String,
    // Dropped after the client: the server stops once its connection is closed.
    _server: PgServer,
}

/// `doc->'attr'`: what the indexes are on.
fn field(attr: &str) -> String {
    format!("(doc->'{attr}')")
}

/// A JSON scalar as a jsonb literal.
fn literal(v: &Value) -> Result<String> {
    match v {
        Value::String(_) | Value::Number(_) => {
            Ok(format!("'{}'::jsonb", v.to_string().replace('\'', "''")))
        }
        other => bail!("no jsonb literal for {other}"),
    }
}

/// The filter documents of the set as a WHERE clause (and-ed equalities, ranges, prefixes).
/// A prefix is a range of jsonb strings (which sort below every number, so a number never
/// meets it, as in the engine).
pub fn where_sql(filter: &Value) -> Result<String> {
    super::flights_sql::where_clause(filter, field, literal)
}

/// The SQL of `q`; aggregates come back as text (bigint or numeric alike).
pub fn sql_of(q: &FlightQuery) -> Result<String> {
    let w = where_sql(&q.filter)?;
    Ok(match &q.kind {
        Kind::Find { keys_only: false } => format!("SELECT id, doc::text FROM flights WHERE {w}"),
        Kind::Find { keys_only: true } => format!("SELECT id FROM flights WHERE {w}"),
        Kind::Top { by, k } => format!(
            "SELECT id FROM flights WHERE {w} AND jsonb_typeof({b}) = 'number' \
             ORDER BY {b} DESC, id LIMIT {k}",
            b = field(by)
        ),
        Kind::Agg { op, attr } => {
            let arg = match (*op, attr) {
                (_, None) => "*".to_string(),
                ("count", Some(a)) => format!("doc->>'{a}'"),
                (_, Some(a)) => format!(
                    "CASE WHEN jsonb_typeof({f}) = 'number' THEN (doc->>'{a}')::numeric END",
                    f = field(a)
                ),
            };
            format!("SELECT ({op}({arg}))::text FROM flights WHERE {w}")
        }
    })
}

/// PostgreSQL's own `shared_buffers` (128 MB): the peer never runs with less than it ships with.
const PG_DEFAULT_SHARED_BUFFERS: u64 = 128 << 20;

/// The settings that match a local device's defaults (`flights_device.rs` starts it with
/// them): its block and row caches as `shared_buffers`, at least PostgreSQL's default;
/// `synchronous_commit` as its `sync`.
pub fn device_settings() -> Settings {
    let device = local_device::config(std::path::Path::new("."));
    let caches = device.engine.cache_bytes + device.engine.row_cache_bytes;
    Settings {
        shared_buffers_bytes: caches.max(PG_DEFAULT_SHARED_BUFFERS),
        synchronous_commit: device.sync,
    }
}

impl PgSide {
    /// Starts the server with the device's settings ([`device_settings`]).
    pub fn start_for_device() -> Result<PgSide> {
        PgSide::start(&device_settings())
    }

    /// Starts the server with `settings` and connects over loopback TCP.
    pub fn start(settings: &Settings) -> Result<PgSide> {
        let server = PgServer::start(settings)?;
        let described = settings.to_string();
        let client = server.connect()?;
        Ok(PgSide {
            client: RefCell::new(client),
            stmts: RefCell::default(),
            described,
            _server: server,
        })
    }

    /// A fresh table with the 6 indexes, then `records` in transactions of 1,000; the load's
    /// seconds.
    pub fn load(&self, records: &[(Vec<u8>, Vec<u8>)]) -> Result<f64> {
        let t = Instant::now();
        let mut ddl = "DROP TABLE IF EXISTS flights; \
                       CREATE TABLE flights (id text PRIMARY KEY, doc jsonb NOT NULL);"
            .to_string();
        for a in ATTRS {
            ddl += &format!("CREATE INDEX flights_{a} ON flights ({});", field(a));
        }
        self.client.borrow_mut().batch_execute(&ddl)?;
        let ops: Vec<(&[u8], Option<&[u8]>)> = records
            .iter()
            .map(|(k, v)| (k.as_slice(), Some(v.as_slice())))
            .collect();
        self.apply(&ops)?;
        // The statements prepared on the last table would fail on this one's new oids.
        self.stmts.borrow_mut().clear();
        Ok(t.elapsed().as_secs_f64())
    }

    /// `ANALYZE` of the loaded table (a user would run it after a load, so the planner
    /// knows the attributes' values); its seconds.
    pub fn analyze(&self) -> Result<f64> {
        let t = Instant::now();
        self.client.borrow_mut().batch_execute("ANALYZE flights")?;
        self.stmts.borrow_mut().clear();
        Ok(t.elapsed().as_secs_f64())
    }

    /// Puts (`Some`) and deletes (`None`), 1,000 to a transaction.
    pub fn write(&self, ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<()> {
        let ops: Vec<(&[u8], Option<&[u8]>)> = ops
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        self.apply(&ops)
    }

    /// Each chunk one transaction: its runs of puts as one multi-row upsert, of deletes as
    /// one `DELETE ... = ANY`, in order.
    fn apply(&self, ops: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        let mut client = self.client.borrow_mut();
        for chunk in ops.chunks(BATCH) {
            let mut tx = client.transaction()?;
            let mut rest = chunk;
            while let Some((first, _)) = rest.split_first() {
                let put = first.1.is_some();
                let n = rest
                    .iter()
                    .position(|op| op.1.is_some() != put)
                    .unwrap_or(rest.len());
                let (run, next) = rest.split_at(n);
                rest = next;
                let keys = run
                    .iter()
                    .map(|(k, _)| std::str::from_utf8(k))
                    .collect::<Result<Vec<_>, _>>()?;
                if !put {
                    tx.execute("DELETE FROM flights WHERE id = ANY($1::text[])", &[&keys])?;
                    continue;
                }
                let docs = run
                    .iter()
                    .map(|(_, v)| std::str::from_utf8(v.unwrap_or_default()))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut sql = "INSERT INTO flights (id, doc) VALUES ".to_string();
                let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(2 * n);
                for (i, (k, d)) in keys.iter().zip(&docs).enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    sql += &format!("{sep}(${}::text, ${}::text::jsonb)", 2 * i + 1, 2 * i + 2);
                    params.push(k);
                    params.push(d);
                }
                sql += " ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc";
                tx.execute(&sql, &params)?;
            }
            tx.commit()?;
        }
        Ok(())
    }

    /// The server's settings, as `postgresql.conf` would say them.
    pub fn settings(&self) -> String {
        self.described.clone()
    }

    /// PostgreSQL's plan for `q` (EXPLAIN's lines joined): which index, if any.
    pub fn plan(&self, q: &FlightQuery) -> Result<String> {
        let rows = self
            .client
            .borrow_mut()
            .query(&format!("EXPLAIN {}", sql_of(q)?), &[])?;
        let lines = rows
            .iter()
            .map(|r| r.try_get::<_, String>(0))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(lines
            .iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join("; "))
    }

    /// One run of `q`: rows read out as (key, value bytes), copied as a client would.
    pub fn run(&self, q: &FlightQuery) -> Result<Out> {
        let mut client = self.client.borrow_mut();
        let sql = sql_of(q)?;
        let mut stmts = self.stmts.borrow_mut();
        let stmt = match stmts.get(&sql) {
            Some(s) => s.clone(),
            None => {
                let s = client.prepare(&sql)?;
                stmts.insert(sql, s.clone());
                s
            }
        };
        let rows = client.query(&stmt, &[])?;
        let text = |r: &postgres::Row, i: usize| -> Result<Bytes> {
            Ok(Bytes::copy_from_slice(r.try_get::<_, &str>(i)?.as_bytes()))
        };
        Ok(match &q.kind {
            Kind::Find { keys_only } => {
                let mut out = Vec::with_capacity(rows.len());
                for r in &rows {
                    let value = match keys_only {
                        true => Bytes::new(),
                        false => text(r, 1)?,
                    };
                    out.push((text(r, 0)?, value));
                }
                Out::Rows(out)
            }
            Kind::Top { .. } => Out::Ranked(
                rows.iter()
                    .map(|r| text(r, 0))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Kind::Agg { .. } => {
                let v = match rows.first() {
                    Some(r) => match r.try_get::<_, Option<&str>>(0)? {
                        Some(t) => number(t)?,
                        None => Value::Null,
                    },
                    None => Value::Null,
                };
                Out::Value(v)
            }
        })
    }
}

/// An aggregate's text as a JSON number: an integer if it is one, else a float.
fn number(t: &str) -> Result<Value> {
    if let Ok(i) = t.parse::<i64>() {
        return Ok(json!(i));
    }
    match t.parse::<f64>() {
        Ok(f) => Ok(json!(f)),
        Err(_) => bail!("PostgreSQL's aggregate {t:?} is not a number"),
    }
}
