//! Secondary indexes and queries through the device: index create, drop and list, and the
//! Query command, whose body is a JSON document naming the query (`docs/protocol.md`,
//! Queries). Queries run inside the device; only their results cross the wire.

use bytes::Bytes;
use cerberus_engine::{Aggregate, Filter, FindOptions, IndexKind, Namespace, TopOptions};
use cerberus_proto::{Reply, Status};
use serde::Deserialize;
use serde_json::{json, Value};

type Outcome = Result<Reply, (Status, String)>;

/// A Query command's body.
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

fn invalid(m: impl std::fmt::Display) -> (Status, String) {
    (Status::InvalidField, m.to_string())
}

fn parse_filter(v: &Value) -> Result<Filter, (Status, String)> {
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

fn found(summary: Value, records: Vec<(Bytes, Bytes)>) -> Outcome {
    Ok(Reply::Found {
        summary: Bytes::from(summary.to_string()),
        records,
    })
}

/// Runs the query `body` on `ns`; a page holds at most `max_page_bytes` of records.
pub fn run(
    ns: &Namespace,
    body: &[u8],
    max_page_bytes: u32,
    engine: impl Fn(cerberus_engine::Error) -> (Status, String),
) -> Outcome {
    let doc: QueryDoc =
        serde_json::from_slice(body).map_err(|e| invalid(format!("query document: {e}")))?;
    match doc {
        QueryDoc::Find {
            filter,
            project,
            limit,
            page_bytes,
            continuation,
        } => {
            let continuation = continuation
                .map(|c| unhex(&c).ok_or_else(|| invalid("continuation is not hex")))
                .transpose()?;
            let opts = FindOptions {
                projection: project,
                limit,
                page_bytes: page_bytes.unwrap_or(max_page_bytes).min(max_page_bytes) as usize,
                continuation,
            };
            let page = ns.find(&parse_filter(&filter)?, &opts).map_err(&engine)?;
            let summary = json!({
                "continuation": page.continuation.as_deref().map(hex),
                "stats": page.stats,
            });
            found(
                summary,
                page.records.into_iter().map(|r| (r.pk, r.value)).collect(),
            )
        }
        QueryDoc::GetBySecondary { attr, value, limit } => {
            let (pks, stats) = ns.get_by_secondary(&attr, &value, limit).map_err(&engine)?;
            found(
                json!({ "stats": stats }),
                pks.into_iter().map(|p| (p, Bytes::new())).collect(),
            )
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
            let (ranked, stats) = ns.top(&parse_filter(&filter)?, &opts).map_err(&engine)?;
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
            found(summary, records)
        }
        QueryDoc::Aggregate {
            filter,
            function,
            attr,
        } => {
            let op = Aggregate::parse(&function, attr.as_deref()).map_err(&engine)?;
            let (value, stats) = ns
                .aggregate(&parse_filter(&filter)?, &op)
                .map_err(&engine)?;
            found(json!({ "value": value, "stats": stats }), Vec::new())
        }
    }
}

/// Index create: completes once the index holds every record.
pub fn create_index(
    ns: &Namespace,
    attr: &str,
    vas: bool,
    engine: impl Fn(cerberus_engine::Error) -> (Status, String),
) -> Outcome {
    let kind = if vas {
        IndexKind::Vas
    } else {
        IndexKind::Classic
    };
    ns.create_index(attr, kind).map_err(engine)?;
    Ok(Reply::Empty)
}

pub fn list_indexes(
    ns: &Namespace,
    engine: impl Fn(cerberus_engine::Error) -> (Status, String),
) -> Outcome {
    let list = ns.list_indexes().map_err(engine)?;
    let doc = serde_json::to_vec(&list).map_err(|e| (Status::InternalError, e.to_string()))?;
    Ok(Reply::Json(Bytes::from(doc)))
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
