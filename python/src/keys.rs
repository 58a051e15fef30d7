//! Keys and values from Python: `bytes`, `bytearray`, `memoryview`, or `str` (stored as its
//! UTF-8 bytes). Reads always return `bytes`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

pub struct Key(pub Vec<u8>);

impl<'py> FromPyObject<'py> for Key {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = ob.downcast::<PyBytes>() {
            return Ok(Key(b.as_bytes().to_vec()));
        }
        if let Ok(s) = ob.downcast::<PyString>() {
            return Ok(Key(s.to_cow()?.as_bytes().to_vec()));
        }
        if let Ok(b) = ob.downcast::<PyByteArray>() {
            return Ok(Key(b.to_vec()));
        }
        if let Ok(v) = ob.extract::<Vec<u8>>() {
            return Ok(Key(v));
        }
        Err(PyTypeError::new_err(format!(
            "expected bytes or str, got {}",
            ob.get_type().name()?
        )))
    }
}
