//! What the embedded engine's and the device's queries share on their way to Python: the
//! index kinds a caller names, and a query's records, summary and Arrow table.

use crate::arrow_pages;
use crate::errors;
use bytes::Bytes;
use cerberus_engine::IndexKind;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The engine's index kind a caller names: "vas" or "classic".
pub fn index_kind(kind: &str) -> PyResult<IndexKind> {
    match kind {
        "vas" => Ok(IndexKind::Vas),
        "classic" => Ok(IndexKind::Classic),
        other => Err(errors::InvalidField::new_err(format!(
            "index kind {other:?}: expected \"vas\" or \"classic\""
        ))),
    }
}

/// A query's records as `(pk, value)` bytes and its summary as a JSON text.
pub(crate) type QueryResult<'py> = (Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>, String);

pub(crate) fn query_result<'py>(
    py: Python<'py>,
    records: Vec<(Bytes, Bytes)>,
    summary: &serde_json::Value,
) -> QueryResult<'py> {
    let records = records
        .iter()
        .map(|(k, v)| (PyBytes::new(py, k), PyBytes::new(py, v)))
        .collect();
    (records, summary.to_string())
}

/// A find as Arrow: the table (`None`: build it in Python), pages, last summary (JSON).
pub(crate) type ArrowFind = (Option<PyObject>, u64, String);

pub(crate) fn arrow_find(
    py: Python<'_>,
    found: arrow_pages::Found,
    keys_only: bool,
) -> PyResult<ArrowFind> {
    let table = arrow_pages::table(py, &found.records, keys_only)?;
    Ok((table, found.pages, found.summary.to_string()))
}
