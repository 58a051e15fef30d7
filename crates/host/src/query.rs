//! Secondary indexes and queries on the device: index create, drop and list, and queries
//! written as JSON documents (`docs/protocol.md`, Queries), run inside the device.

use crate::blocking::BlockingClient;
use crate::client::{expect_empty, unexpected, Client};
use crate::error::{Error, Result};
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

impl Client {
    /// Creates a secondary index of namespace `nsid` on JSON attribute `attr` (`vas`: entries
    /// hold value addresses); completes once every record is indexed.
    pub async fn index_create(&self, nsid: u32, attr: &str, vas: bool) -> Result<()> {
        let request = Request::IndexCreate {
            attr: attr.to_string(),
            vas,
        };
        expect_empty(self.run(nsid, request).await?, "index create")
    }

    /// Drops namespace `nsid`'s index on `attr`.
    pub async fn index_drop(&self, nsid: u32, attr: &str) -> Result<()> {
        let request = Request::IndexDrop {
            attr: attr.to_string(),
        };
        expect_empty(self.run(nsid, request).await?, "index drop")
    }

    /// The namespace's indexes: a JSON array of `{attr, kind, ready}`.
    pub async fn index_list(&self, nsid: u32) -> Result<Value> {
        match self.run(nsid, Request::IndexList).await? {
            Reply::Json(body) => json(&body, "index list"),
            other => Err(unexpected("index list", &other)),
        }
    }

    /// Runs `query` (a query document: `{"op": "find" | "get_by_secondary" | "top" |
    /// "aggregate", ...}`) on namespace `nsid`.
    pub async fn query(&self, nsid: u32, query: &Value) -> Result<QueryReply> {
        let request = Request::Query {
            query: Bytes::from(query.to_string()),
        };
        match self.run(nsid, request).await? {
            Reply::Found { summary, records } => Ok(QueryReply {
                records,
                summary: json(&summary, "query summary")?,
            }),
            other => Err(unexpected("query", &other)),
        }
    }
}

impl BlockingClient {
    /// [`Client::index_create`], waiting for the answer.
    pub fn index_create(&self, nsid: u32, attr: &str, vas: bool) -> Result<()> {
        self.wait(self.client().index_create(nsid, attr, vas))
    }

    /// [`Client::index_drop`], waiting for the answer.
    pub fn index_drop(&self, nsid: u32, attr: &str) -> Result<()> {
        self.wait(self.client().index_drop(nsid, attr))
    }

    /// [`Client::index_list`], waiting for the answer.
    pub fn index_list(&self, nsid: u32) -> Result<Value> {
        self.wait(self.client().index_list(nsid))
    }

    /// [`Client::query`], waiting for the answer.
    pub fn query(&self, nsid: u32, query: &Value) -> Result<QueryReply> {
        self.wait(self.client().query(nsid, query))
    }
}

fn json(body: &[u8], what: &str) -> Result<Value> {
    serde_json::from_slice(body).map_err(|e| Error::Protocol(format!("{what} is not JSON: {e}")))
}
