//! Secondary indexes and queries through the device: index create, drop and list, and the
//! Query command, whose body is a JSON document naming the query (`docs/protocol.md`,
//! Queries). Queries run inside the device; only their results cross the wire.

use bytes::Bytes;
use cerberus_engine::{IndexKind, Namespace};
use cerberus_proto::{Reply, Status};

type Outcome = Result<Reply, (Status, String)>;

/// Runs the query `body` on `ns` (the engine reads the document:
/// `Namespace::run_query`); a page holds at most `max_page_bytes` of records.
pub fn run(
    ns: &Namespace,
    body: &[u8],
    max_page_bytes: u32,
    engine: impl Fn(cerberus_engine::Error) -> (Status, String),
) -> Outcome {
    let out = ns.run_query(body, max_page_bytes).map_err(engine)?;
    Ok(Reply::Found {
        summary: Bytes::from(out.summary.to_string()),
        records: out.records,
    })
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
