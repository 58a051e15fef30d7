//! Reading a completion: its reply, or the typed error of its status.

use crate::error::{Error, Result};
use bytes::Bytes;
use cerberus_proto::{Reply, Response};

/// A Retrieve's value, `None` for an absent key.
pub(crate) fn value_or_absent(reply: Result<Reply>) -> Result<Option<Bytes>> {
    match reply {
        Ok(Reply::Value(v)) => Ok(Some(v)),
        Ok(other) => Err(unexpected("retrieve", &other)),
        Err(Error::KeyNotExist) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The reply of a successful completion, or the typed error of a failed one.
pub(crate) fn ok_reply(response: Response) -> Result<Reply> {
    if response.status.is_success() {
        return Ok(response.reply);
    }
    let message = match response.reply {
        Reply::Error(m) => m,
        _ => String::new(),
    };
    Err(Error::from_status(response.status, message))
}

pub(crate) fn expect_empty(reply: Reply, what: &str) -> Result<()> {
    match reply {
        Reply::Empty => Ok(()),
        other => Err(unexpected(what, &other)),
    }
}

/// Success means present; `KeyNotExist` means absent.
pub(crate) fn present(result: Result<Reply>, what: &str) -> Result<bool> {
    match result {
        Ok(Reply::Empty) => Ok(true),
        Ok(other) => Err(unexpected(what, &other)),
        Err(Error::KeyNotExist) => Ok(false),
        Err(e) => Err(e),
    }
}

pub(crate) fn unexpected(what: &str, reply: &Reply) -> Error {
    let kind = match reply {
        Reply::Empty => "an empty reply",
        Reply::Error(_) => "an error message",
        Reply::Value(_) => "a value",
        Reply::Keys { .. } => "a key list",
        Reply::Created { .. } => "a namespace creation",
        Reply::Namespaces(_) => "a namespace list",
        Reply::Identify(_) => "an identify reply",
        Reply::Stats(_) => "stats",
        Reply::Iter(_) => "an iterator id",
        Reply::Entries { .. } => "iterator entries",
        Reply::Json(_) => "a JSON document",
        Reply::Found { .. } => "query results",
        Reply::RangeDeleted { .. } => "a range delete's count",
    };
    Error::Protocol(format!("{what} was answered with {kind}"))
}
