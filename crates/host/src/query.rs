//! Secondary indexes and queries on the device: index create, drop and list, and queries
//! written as JSON documents (`docs/protocol.md`, Queries), run inside the device.

use crate::blocking_namespace::BlockingNamespace;
use crate::error::{Error, Result};
use crate::namespace::Namespace;
use crate::reply::{expect_empty, unexpected};
use bytes::Bytes;
use cerberus_proto::{Reply, Request};
use serde_json::Value;

/// What the device answered to a query: the records (pk and value, projection or nothing,
/// by query kind) and a summary (statistics; a continuation, a ranking's keys or an
/// aggregate's value).
#[derive(Clone, Debug, PartialEq)]
pub struct QueryReply {
    /// Key and value of each record found.
    pub records: Vec<(Bytes, Bytes)>,
    /// The JSON summary: result, continuation, statistics.
    pub summary: Value,
}

impl QueryReply {
    /// Where the next page of a find starts (hex, to pass back as `continuation`).
    pub fn continuation(&self) -> Option<&str> {
        self.summary.get("continuation").and_then(Value::as_str)
    }

    /// What the query read, per step (the engine's `QueryStats`).
    pub fn stats(&self) -> Option<&Value> {
        self.summary.get("stats")
    }
}

/// What a secondary index's entries hold (the engine's `IndexKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// The pk alone: a query looks the record up in the primary index.
    Classic,
    /// The pk and the record's value-log address (VAS): a query reads the value straight
    /// from the log.
    Vas,
}

impl Namespace {
    /// Creates a secondary index of the namespace on JSON attribute `attr`; completes once
    /// every record is indexed.
    pub async fn create_index(&self, attr: &str, kind: IndexKind) -> Result<()> {
        let request = Request::IndexCreate {
            attr: attr.to_string(),
            vas: kind == IndexKind::Vas,
        };
        expect_empty(self.run(request).await?, "create index")
    }

    /// Drops the namespace's index on `attr`.
    pub async fn drop_index(&self, attr: &str) -> Result<()> {
        let request = Request::IndexDrop {
            attr: attr.to_string(),
        };
        expect_empty(self.run(request).await?, "drop index")
    }

    /// The namespace's indexes: a JSON array of `{attr, kind, ready}`.
    pub async fn list_indexes(&self) -> Result<Value> {
        match self.run(Request::IndexList).await? {
            Reply::Json(body) => json(&body, "index list"),
            other => Err(unexpected("list indexes", &other)),
        }
    }

    /// Runs `query` (a query document: `{"op": "find" | "get_by_secondary" | "top" |
    /// "aggregate", ...}`, the engine's `find`, `get_by_secondary`, `top` and `aggregate`)
    /// inside the device.
    pub async fn query(&self, query: &Value) -> Result<QueryReply> {
        let request = Request::Query {
            query: Bytes::from(query.to_string()),
        };
        match self.run(request).await? {
            Reply::Found { summary, records } => Ok(QueryReply {
                records,
                summary: json(&summary, "query summary")?,
            }),
            other => Err(unexpected("query", &other)),
        }
    }
}

impl BlockingNamespace {
    /// [`Namespace::create_index`], waiting for the answer.
    pub fn create_index(&self, attr: &str, kind: IndexKind) -> Result<()> {
        self.client()
            .wait(self.namespace().create_index(attr, kind))
    }

    /// [`Namespace::drop_index`], waiting for the answer.
    pub fn drop_index(&self, attr: &str) -> Result<()> {
        self.client().wait(self.namespace().drop_index(attr))
    }

    /// [`Namespace::list_indexes`], waiting for the answer.
    pub fn list_indexes(&self) -> Result<Value> {
        self.client().wait(self.namespace().list_indexes())
    }

    /// [`Namespace::query`], waiting for the answer.
    pub fn query(&self, query: &Value) -> Result<QueryReply> {
        self.client().wait(self.namespace().query(query))
    }
}

fn json(body: &[u8], what: &str) -> Result<Value> {
    serde_json::from_slice(body).map_err(|e| Error::Protocol(format!("{what} is not JSON: {e}")))
}
