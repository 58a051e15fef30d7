//! A namespace's settings from Python keywords (`capacity`, `weight`, `reservation_ops`,
//! `reservation_bytes`, `limit_ops`, `limit_bytes`): each one given replaces the one of the
//! base, the others stay. A capacity of `None` or `0` is none.

use cerberus_engine::{IoShares, NamespaceOptions};
use cerberus_host::NamespaceSettings;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `base` with the settings named in `kwargs` in place of its own.
pub fn over(
    base: NamespaceSettings,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<NamespaceSettings> {
    let mut s = base;
    let Some(kwargs) = kwargs else {
        return Ok(s);
    };
    for (k, v) in kwargs.iter() {
        let name: String = k.extract()?;
        match name.as_str() {
            "capacity" => s.capacity = v.extract::<Option<u64>>()?.filter(|&c| c > 0),
            "weight" => s.weight = v.extract()?,
            "reservation_ops" => s.reservation_ops = v.extract()?,
            "reservation_bytes" => s.reservation_bytes = v.extract()?,
            "limit_ops" => s.limit_ops = v.extract()?,
            "limit_bytes" => s.limit_bytes = v.extract()?,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected namespace setting {name:?}"
                )))
            }
        }
    }
    Ok(s)
}

/// Whether `kwargs` names any setting.
pub fn given(kwargs: Option<&Bound<'_, PyDict>>) -> bool {
    kwargs.is_some_and(|k| !k.is_empty())
}

pub fn to_engine(s: &NamespaceSettings) -> NamespaceOptions {
    NamespaceOptions {
        capacity: s.capacity,
        shares: IoShares {
            reservation_ops: s.reservation_ops,
            reservation_bytes: s.reservation_bytes,
            weight: s.weight,
            limit_ops: s.limit_ops,
            limit_bytes: s.limit_bytes,
        },
    }
}

pub fn from_engine(o: &NamespaceOptions) -> NamespaceSettings {
    NamespaceSettings {
        capacity: o.capacity,
        reservation_ops: o.shares.reservation_ops,
        reservation_bytes: o.shares.reservation_bytes,
        weight: o.shares.weight,
        limit_ops: o.shares.limit_ops,
        limit_bytes: o.shares.limit_bytes,
    }
}

/// The settings a device's stats document shows (`capacity`, `shares`).
pub fn from_stats(doc: &serde_json::Value) -> NamespaceSettings {
    let n = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_u64);
    let d = NamespaceSettings::default();
    let sh = doc.get("shares").cloned().unwrap_or_default();
    NamespaceSettings {
        capacity: n(doc, "capacity"),
        reservation_ops: n(&sh, "reservation_ops").unwrap_or(d.reservation_ops),
        reservation_bytes: n(&sh, "reservation_bytes").unwrap_or(d.reservation_bytes),
        weight: n(&sh, "weight").map_or(d.weight, |w| w as u32),
        limit_ops: n(&sh, "limit_ops").unwrap_or(d.limit_ops),
        limit_bytes: n(&sh, "limit_bytes").unwrap_or(d.limit_bytes),
    }
}
