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
mod query;
mod settings;

use pyo3::prelude::*;

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
