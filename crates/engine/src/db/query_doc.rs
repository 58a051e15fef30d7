//! Queries written as JSON documents (`docs/protocol.md`, Queries): the device's Query
//! command and the Python package run the same documents through
//! [`Namespace::run_query`], so both answer alike.

use super::handle::Namespace;
use super::query::{FindOptions, TopOptions};
use super::readable::Readable;
use crate::error::{Error, Result};
use crate::query::{Aggregate, Filter};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

/// A query document.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum QueryDoc {
    Find {
        #[serde(default)]
        filter: Value,
        project: Option<Vec<String>>,
        limit: Option<u64>,
        page_bytes: Option<u32>,
        /// Hex, as the page before returned it.
        continuation: Option<String>,
        /// Pks only, with empty values (`FindOptions::keys_only`).
        #[serde(default)]
        keys_only: bool,
    },
    GetBySecondary {
        attr: String,
        value: Value,
        limit: Option<usize>,
    },
    Top {
        #[serde(default)]
        filter: Value,
        by: String,
        #[serde(default)]
        desc: bool,
        k: usize,
        project: Option<Vec<String>>,
    },
    Aggregate {
        #[serde(default)]
        filter: Value,
        #[serde(rename = "fn")]
        function: String,
        attr: Option<String>,
    },
}

/// What a query document answered: records (pk, then the value, its projection or
/// nothing, by query kind) and a summary (`stats`; a find's `continuation`, a ranking's
/// `keys`, an aggregate's `value`).
#[derive(Clone, Debug, PartialEq)]
pub struct QueryOutput {
    /// `(pk, value)` of each record returned, in the query's order.
    pub records: Vec<(Bytes, Bytes)>,
    /// The JSON summary: `stats`, and a find's `continuation` (hex), a ranking's `keys` or
    /// an aggregate's `value`.
    pub summary: Value,
}

fn invalid(m: impl std::fmt::Display) -> Error {
    Error::InvalidQuery(m.to_string())
}

fn parse_filter(v: &Value) -> Result<Filter> {
    if v.is_null() {
        return Ok(Filter::default());
    }
    Filter::parse(v).map_err(|e| invalid(format!("filter: {e}")))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Namespace {
    /// Runs the query document `body`; a find's page holds at most `max_page_bytes` of
    /// records (the document's `page_bytes` may ask for less).
    pub fn run_query(&self, body: &[u8], max_page_bytes: u32) -> Result<QueryOutput> {
        let doc: QueryDoc =
            serde_json::from_slice(body).map_err(|e| invalid(format!("query document: {e}")))?;
        let out = |summary, records| QueryOutput { records, summary };
        match doc {
            QueryDoc::Find {
                filter,
                project,
                limit,
                page_bytes,
                continuation,
                keys_only,
            } => {
                let continuation = continuation
                    .map(|c| unhex(&c).ok_or_else(|| invalid("continuation is not hex")))
                    .transpose()?;
                let opts = FindOptions {
                    projection: project,
                    limit,
                    page_bytes: page_bytes.unwrap_or(max_page_bytes).min(max_page_bytes) as usize,
                    continuation,
                    keys_only,
                };
                let page = self.find(&parse_filter(&filter)?, &opts)?;
                let summary = json!({
                    "continuation": page.continuation.as_deref().map(hex),
                    "stats": page.stats,
                });
                Ok(out(
                    summary,
                    page.value.into_iter().map(|r| (r.pk, r.value)).collect(),
                ))
            }
            QueryDoc::GetBySecondary { attr, value, limit } => {
                let found = self.get_by_secondary(&attr, &value, limit)?;
                Ok(out(
                    json!({ "stats": found.stats }),
                    found.value.into_iter().map(|p| (p, Bytes::new())).collect(),
                ))
            }
            QueryDoc::Top {
                filter,
                by,
                desc,
                k,
                project,
            } => {
                let opts = TopOptions {
                    by,
                    desc,
                    k,
                    projection: project,
                };
                let top = self.top(&parse_filter(&filter)?, &opts)?;
                let (ranked, stats) = (top.value, top.stats);
                let keys: Vec<&Value> = ranked.iter().map(|r| &r.key).collect();
                let summary = json!({ "keys": keys, "stats": stats });
                let records = ranked
                    .iter()
                    .map(|r| {
                        let p = r
                            .projection
                            .as_ref()
                            .map(Value::to_string)
                            .unwrap_or_default();
                        (r.pk.clone(), Bytes::from(p))
                    })
                    .collect();
                Ok(out(summary, records))
            }
            QueryDoc::Aggregate {
                filter,
                function,
                attr,
            } => {
                let op = Aggregate::parse(&function, attr.as_deref())?;
                let agg = self.aggregate(&parse_filter(&filter)?, &op)?;
                let summary = json!({ "value": agg.value, "stats": agg.stats });
                Ok(out(summary, Vec::new()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_junk() {
        let b = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(unhex(&hex(&b)), Some(b));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn query_documents_parse_strictly() {
        let d: QueryDoc = serde_json::from_str(r#"{"op":"top","by":"h","k":5}"#).unwrap();
        assert!(matches!(d, QueryDoc::Top { k: 5, .. }));
        assert!(serde_json::from_str::<QueryDoc>(r#"{"op":"drop_all"}"#).is_err());
        assert!(serde_json::from_str::<QueryDoc>(r#"{"op":"find","filtr":{}}"#).is_err());
    }
}
