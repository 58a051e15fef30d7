//! The native part of the `cerberus` Python package (`cerberus._cerberus`): the embedded
//! engine and the device client, wrapped by the package's Python files. Every call that
//! reaches the engine or the network releases the GIL.

mod arrow_columns;
mod arrow_pages;
mod arrow_schema_scan;
mod cluster;
mod device;
mod embedded;
mod errors;
mod keys;
mod settings;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A query's records as `(pk, value)` bytes and its summary as a JSON text.
type QueryResult<'py> = (Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>, String);

fn query_result<'py>(
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
type ArrowFind = (Option<PyObject>, u64, String);

fn arrow_find(py: Python<'_>, found: arrow_pages::Found, keys_only: bool) -> PyResult<ArrowFind> {
    let table = arrow_pages::table(py, &found.records, keys_only)?;
    Ok((table, found.pages, found.summary.to_string()))
}

#[pymodule]
fn _cerberus(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<embedded::EmbeddedDb>()?;
    m.add_class::<embedded::EmbeddedNamespace>()?;
    m.add_class::<embedded::EmbeddedScan>()?;
    m.add_class::<device::DeviceClient>()?;
    m.add_class::<device::DeviceNamespace>()?;
    m.add_class::<device::DeviceScan>()?;
    m.add_function(wrap_pyfunction!(cluster::cluster_owner, m)?)?;
    m.add_function(wrap_pyfunction!(cluster::load_cluster, m)?)?;
    m.add_function(wrap_pyfunction!(cluster::check_cluster, m)?)?;
    errors::register(m)?;
    Ok(())
}
