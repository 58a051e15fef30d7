//! Secondary indexes and queries through the device: index create, drop and list, and the
//! Query command, whose body is a JSON document naming the query (`docs/protocol.md`,
//! Queries). Queries run inside the device; only their results cross the wire.
//!
//! A query's answer is bounded before the engine builds it, so one tenant cannot make the
//! device hold (or send) more than the configured bounds: a top's `k` and a get_by_secondary's
//! `limit` are cut to `max_query_results` + 1 (an answer with more records than
//! `max_query_results` is refused with `ReplyTooLarge`), a find's `page_bytes` to the page
//! budget, and any answer whose reply would exceed `max_reply_bytes` is refused too.

use bytes::Bytes;
use cerberus_engine::{IndexKind, Namespace};
use cerberus_proto::{Reply, Status};
use serde_json::Value;
use std::borrow::Cow;

type Outcome = Result<Reply, (Status, String)>;

/// The bounds a query runs under (from the `DeviceConfig`).
#[derive(Clone, Copy, Debug)]
pub struct QueryBounds {
    /// Most records one answer holds (top, get_by_secondary).
    pub max_results: u32,
    /// Most bytes of records one find page holds (at least one record per page).
    pub max_page_bytes: u32,
    /// Most bytes of one reply's body.
    pub max_reply_bytes: u32,
}

/// Bytes of lengths a record takes in a reply besides its pk and value.
const RECORD_OVERHEAD: usize = 6;

/// Runs the query `body` on `ns` (the engine reads the document:
/// `Namespace::run_query`) within `bounds`.
pub fn run(
    ns: &Namespace,
    body: &[u8],
    bounds: &QueryBounds,
    engine: impl Fn(cerberus_engine::Error) -> (Status, String),
) -> Outcome {
    let (doc, cut) = bounded(body, bounds);
    let out = ns.run_query(&doc, bounds.max_page_bytes).map_err(engine)?;
    if let Some(what) = cut {
        if out.records.len() as u64 > u64::from(bounds.max_results) {
            return Err((
                Status::ReplyTooLarge,
                format!(
                    "more than {max} records answer this {what}; this device returns at most \
                     {max} records per query (max_query_results): ask for fewer, or page \
                     through them with find",
                    max = bounds.max_results
                ),
            ));
        }
    }
    let summary = out.summary.to_string();
    let size = 8
        + summary.len()
        + out
            .records
            .iter()
            .map(|(k, v)| k.len() + v.len() + RECORD_OVERHEAD)
            .sum::<usize>();
    if size > bounds.max_reply_bytes as usize {
        return Err((
            Status::ReplyTooLarge,
            format!(
                "the answer is {size} bytes; this device replies with at most {} bytes \
                 (max_reply_bytes): ask for fewer records or a smaller projection, or page \
                 with find",
                bounds.max_reply_bytes
            ),
        ));
    }
    Ok(Reply::Found {
        summary: Bytes::from(summary),
        records: out.records,
    })
}

/// The query document with its client-given counts cut to the bounds, and which count was
/// cut (the answer must then be checked against `max_results`). A document that is not a
/// JSON object of a known query is passed on as it is: the engine says what is wrong with it.
fn bounded<'a>(body: &'a [u8], bounds: &QueryBounds) -> (Cow<'a, [u8]>, Option<&'static str>) {
    let Ok(Value::Object(mut doc)) = serde_json::from_slice::<Value>(body) else {
        return (Cow::Borrowed(body), None);
    };
    // One more than the bound: an answer that reaches it is known to be too large.
    let cap = u64::from(bounds.max_results) + 1;
    let over = |v: Option<&Value>| v.and_then(Value::as_u64).is_some_and(|n| n > cap);
    let cut = match doc.get("op").and_then(Value::as_str) {
        Some("top") if over(doc.get("k")) => {
            doc.insert("k".into(), Value::from(cap));
            Some("top (k)")
        }
        Some("get_by_secondary")
            if doc.get("limit").is_none_or(Value::is_null) || over(doc.get("limit")) =>
        {
            doc.insert("limit".into(), Value::from(cap));
            Some("get_by_secondary (limit)")
        }
        Some("find")
            if doc
                .get("page_bytes")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > u64::from(bounds.max_page_bytes)) =>
        {
            // The engine takes a page budget of 32 bits; past the device's, it is the
            // device's anyway.
            doc.insert("page_bytes".into(), Value::from(bounds.max_page_bytes));
            None
        }
        _ => return (Cow::Borrowed(body), None),
    };
    match serde_json::to_vec(&doc) {
        Ok(v) => (Cow::Owned(v), cut),
        Err(_) => (Cow::Borrowed(body), None),
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
    use serde_json::json;

    const B: QueryBounds = QueryBounds {
        max_results: 100,
        max_page_bytes: 1000,
        max_reply_bytes: 1 << 20,
    };

    fn doc(v: Value) -> (Value, Option<&'static str>) {
        let body = v.to_string();
        let (out, cut) = bounded(body.as_bytes(), &B);
        (serde_json::from_slice(&out).unwrap(), cut)
    }

    #[test]
    fn client_counts_are_cut_to_the_bounds() {
        let (d, cut) = doc(json!({"op": "top", "by": "x", "k": 1_000_000_000_000_000u64}));
        assert_eq!((d["k"].clone(), cut), (json!(101), Some("top (k)")));
        let (d, cut) = doc(json!({"op": "top", "by": "x", "k": u64::MAX}));
        assert_eq!((d["k"].clone(), cut.is_some()), (json!(101), true));
        // Within the bound: left alone.
        let (d, cut) = doc(json!({"op": "top", "by": "x", "k": 101}));
        assert_eq!((d["k"].clone(), cut), (json!(101), None));
        let (d, cut) = doc(json!({"op": "get_by_secondary", "attr": "a", "value": 1}));
        assert_eq!((d["limit"].clone(), cut.is_some()), (json!(101), true));
        let (d, _) = doc(json!({"op": "get_by_secondary", "attr": "a", "value": 1, "limit": 7}));
        assert_eq!(d["limit"], json!(7));
        let (d, cut) = doc(json!({"op": "find", "page_bytes": 1u64 << 40}));
        assert_eq!((d["page_bytes"].clone(), cut), (json!(1000), None));
        // Not a query this knows: passed on for the engine to refuse in its own words.
        let (out, cut) = bounded(b"[1, 2]", &B);
        assert_eq!((out.as_ref(), cut), (&b"[1, 2]"[..], None));
        let (out, _) = bounded(b"{\"op\": \"top\", \"k\": -1}", &B);
        assert_eq!(out.as_ref(), b"{\"op\": \"top\", \"k\": -1}");
    }
}
