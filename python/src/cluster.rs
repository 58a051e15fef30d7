//! Tenants across devices (`cerberus.cluster`): the Rust side's key placement and
//! description checks, so Python and the CLI place keys and read descriptions alike.

use crate::keys::Key;
use cerberus_host::cluster::{ClusterDescription, ClusterError};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

/// The index in `devices` of the device that owns `key` (rendezvous hashing of the key and
/// the device names, as `cerberus_host::cluster::owner`).
#[pyfunction]
pub fn cluster_owner(key: Key, devices: Vec<String>) -> PyResult<usize> {
    cerberus_host::cluster::owner(&key.0, &devices).ok_or_else(|| {
        PyValueError::new_err("a key needs at least one device to live on: the list is empty")
    })
}

/// A file that cannot be read as `OSError`, anything else wrong as `ValueError`; the
/// messages name the file or the tenant and device at fault.
fn error(e: ClusterError, path: Option<&std::path::Path>) -> PyErr {
    match (&e, path) {
        (ClusterError::File { .. }, _) => PyOSError::new_err(e.to_string()),
        (ClusterError::Invalid(_), Some(p)) => {
            PyValueError::new_err(format!("{}: {e}", p.display()))
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A cluster description (TOML) read and checked by the Rust loader, as JSON: one parser
/// and one set of rules for both languages.
#[pyfunction]
pub fn load_cluster(py: Python<'_>, path: std::path::PathBuf) -> PyResult<String> {
    let desc = py
        .allow_threads(|| ClusterDescription::load(&path))
        .map_err(|e| error(e, Some(&path)))?;
    serde_json::to_string(&desc).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A description given as JSON (a Python dict) checked by the same rules as a file:
/// returned as the loader would give it (absent options left out).
#[pyfunction]
pub fn check_cluster(json: &str) -> PyResult<String> {
    let desc: ClusterDescription = serde_json::from_str(json)
        .map_err(|e| PyValueError::new_err(format!("invalid cluster description: {e}")))?;
    desc.validate().map_err(|e| error(e, None))?;
    serde_json::to_string(&desc).map_err(|e| PyValueError::new_err(e.to_string()))
}
