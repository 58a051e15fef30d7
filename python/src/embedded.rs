//! The embedded engine: a database opened in this process (`cerberus.open`).

use crate::errors;
use crate::keys::Key;
use crate::query::index_kind;
use crate::settings;
use bytes::Bytes;
use cerberus_engine::Readable;
use cerberus_engine::{Db, Iter, Namespace, Options, ReadOptions, WriteBatch};
use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::Arc;

/// Sets the engine options named by `kwargs` (unknown names raise `TypeError`).
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut o = Options::default();
    let Some(kwargs) = kwargs else {
        return Ok(o);
    };
    for (k, v) in kwargs.iter() {
        let name: String = k.extract()?;
        match name.as_str() {
            "memtable_bytes" => o.memtable_bytes = v.extract()?,
            "cache_bytes" => o.cache_bytes = v.extract()?,
            "block_size" => o.block_size = v.extract()?,
            "filter_bits_per_key" => o.filter_bits_per_key = v.extract()?,
            "inline_value_threshold" => o.inline_value_threshold = v.extract()?,
            "sync" => o.sync = v.extract()?,
            "max_key_size" => o.max_key_size = v.extract()?,
            "max_value_size" => o.max_value_size = v.extract()?,
            "vlog_segment_bytes" => o.vlog_segment_bytes = v.extract()?,
            "target_table_bytes" => o.target_table_bytes = v.extract()?,
            "background_threads" => o.background_threads = v.extract()?,
            "mmap_reads" => o.mmap_reads = v.extract()?,
            "auto_compaction" => o.auto_compaction = v.extract()?,
            "idle_settle_ms" => o.idle_settle_ms = v.extract()?,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "open() got an unexpected option {name:?}"
                )))
            }
        }
    }
    Ok(o)
}

/// An open database. `close` drops it, which releases its directory's lock (namespace
/// handles still held refuse their calls from then on).
#[pyclass(module = "cerberus._cerberus", frozen)]
pub struct EmbeddedDb {
    db: Mutex<Option<Arc<Db>>>,
}

impl EmbeddedDb {
    fn db(&self) -> PyResult<Arc<Db>> {
        self.db
            .lock()
            .clone()
            .ok_or_else(|| errors::ShuttingDown::new_err("the database is closed"))
    }
}

#[pymethods]
impl EmbeddedDb {
    #[staticmethod]
    #[pyo3(signature = (path, **kwargs))]
    fn open(
        py: Python<'_>,
        path: std::path::PathBuf,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let opts = options(kwargs)?;
        let db = py
            .allow_threads(|| Db::open(&path, opts))
            .map_err(errors::engine)?;
        Ok(EmbeddedDb {
            db: Mutex::new(Some(Arc::new(db))),
        })
    }

    /// Creates a namespace with the settings named (`capacity`, `weight`, ...).
    #[pyo3(signature = (name, **settings))]
    fn create_namespace(
        &self,
        py: Python<'_>,
        name: &str,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<EmbeddedNamespace> {
        let db = self.db()?;
        let s = settings::over(cerberus_host::NamespaceSettings::default(), settings)?;
        let options = settings::to_engine(&s);
        let ns = py
            .allow_threads(|| db.create_namespace_with(name, options))
            .map_err(errors::engine)?;
        Ok(EmbeddedNamespace { ns })
    }

    fn namespace(&self, nsid: u32) -> PyResult<EmbeddedNamespace> {
        let ns = self.db()?.namespace(nsid).map_err(errors::engine)?;
        Ok(EmbeddedNamespace { ns })
    }

    fn destroy_namespace(&self, py: Python<'_>, nsid: u32) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(|| db.destroy_namespace(nsid))
            .map_err(errors::engine)
    }

    /// `(nsid, name)` of every namespace.
    fn list_namespaces(&self) -> PyResult<Vec<(u32, String)>> {
        Ok(self
            .db()?
            .list_namespaces()
            .into_iter()
            .map(|n| (n.nsid, n.name))
            .collect())
    }

    /// The database's counters as a JSON text.
    fn stats_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.db()?.stats())
            .map_err(|e| errors::InternalError::new_err(e.to_string()))
    }

    /// Writes a consistent copy of the database to the new directory `path`; what it wrote
    /// as a JSON text.
    fn checkpoint_json(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<String> {
        let db = self.db()?;
        let info = py
            .allow_threads(|| db.checkpoint(&path))
            .map_err(errors::engine)?;
        serde_json::to_string(&info).map_err(|e| errors::InternalError::new_err(e.to_string()))
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(db) = self.db.lock().take() else {
            return Ok(());
        };
        // Dropped here unless a call in flight on another thread still holds it: then the
        // lock goes when that call returns.
        py.allow_threads(|| db.close()).map_err(errors::engine)
    }
}

/// A namespace of an embedded database.
#[pyclass(module = "cerberus._cerberus", frozen)]
pub struct EmbeddedNamespace {
    ns: Namespace,
}

#[pymethods]
impl EmbeddedNamespace {
    #[getter]
    fn nsid(&self) -> u32 {
        self.ns.id()
    }

    #[getter]
    fn name(&self) -> String {
        self.ns.name().to_string()
    }

    fn put(&self, py: Python<'_>, key: Key, value: Key) -> PyResult<()> {
        py.allow_threads(|| self.ns.put(&key.0, &value.0))
            .map_err(errors::engine)
    }

    fn get<'py>(&self, py: Python<'py>, key: Key) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let v = py
            .allow_threads(|| self.ns.get(&key.0))
            .map_err(errors::engine)?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    /// Values of `keys` in order (`None` where absent): the engine's batched get, in pieces
    /// of at most `MAX_GET_MANY_KEYS` (each piece read at one point).
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: Vec<Key>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let vals = py
            .allow_threads(|| {
                let mut vals = Vec::with_capacity(keys.len());
                for piece in keys.chunks(cerberus_engine::MAX_GET_MANY_KEYS) {
                    let refs: Vec<&[u8]> = piece.iter().map(|k| k.0.as_slice()).collect();
                    vals.extend(self.ns.get_many(&refs)?);
                }
                Ok(vals)
            })
            .map_err(errors::engine)?;
        Ok(vals
            .into_iter()
            .map(|v| v.map(|v| PyBytes::new(py, &v)))
            .collect())
    }

    /// Deletes `key`; returns whether it existed.
    fn delete(&self, py: Python<'_>, key: Key) -> PyResult<bool> {
        py.allow_threads(|| {
            let had = self.ns.contains(&key.0)?;
            if had {
                self.ns.delete(&key.0)?;
            }
            Ok(had)
        })
        .map_err(errors::engine)
    }

    /// Deletes the keys from `start` (inclusive) to `end` (exclusive; empty: no bound) in
    /// atomic batches; how many.
    fn delete_range(&self, py: Python<'_>, start: Key, end: Key) -> PyResult<u64> {
        py.allow_threads(|| self.ns.delete_range(&start.0, &end.0))
            .map_err(errors::engine)
    }

    /// Deletes the keys that begin with `prefix`; how many.
    fn delete_prefix(&self, py: Python<'_>, prefix: Key) -> PyResult<u64> {
        py.allow_threads(|| self.ns.delete_prefix(&prefix.0))
            .map_err(errors::engine)
    }

    fn contains(&self, py: Python<'_>, key: Key) -> PyResult<bool> {
        py.allow_threads(|| self.ns.contains(&key.0))
            .map_err(errors::engine)
    }

    /// Applies the puts and deletes atomically.
    fn write_batch(
        &self,
        py: Python<'_>,
        puts: Vec<(Key, Key)>,
        deletes: Vec<Key>,
    ) -> PyResult<()> {
        let mut b = WriteBatch::default();
        for (k, v) in puts {
            b.put(k.0, v.0);
        }
        for k in deletes {
            b.delete(k.0);
        }
        py.allow_threads(|| self.ns.write(b))
            .map_err(errors::engine)
    }

    /// A scan at one snapshot, from `start` (inclusive) to `end` (exclusive), only keys
    /// beginning with `prefix` if given.
    #[pyo3(signature = (start=None, end=None, prefix=None, keys_only=false))]
    fn scan(
        &self,
        py: Python<'_>,
        start: Option<Key>,
        end: Option<Key>,
        prefix: Option<Key>,
        keys_only: bool,
    ) -> PyResult<EmbeddedScan> {
        let opts = ReadOptions {
            upper_bound: end.map(|k| k.0),
            prefix: prefix.map(|k| k.0),
            keys_only,
            ..ReadOptions::default()
        };
        let it = py
            .allow_threads(|| {
                let mut it = self.ns.iter(opts)?;
                if let Some(s) = start {
                    it.seek(&s.0)?;
                }
                Ok(it)
            })
            .map_err(errors::engine)?;
        Ok(EmbeddedScan {
            it: Mutex::new(Some(it)),
        })
    }

    #[pyo3(signature = (attr, kind="vas"))]
    fn create_index(&self, py: Python<'_>, attr: &str, kind: &str) -> PyResult<()> {
        let kind = index_kind(kind)?;
        py.allow_threads(|| self.ns.create_index(attr, kind))
            .map_err(errors::engine)
    }

    fn drop_index(&self, py: Python<'_>, attr: &str) -> PyResult<()> {
        py.allow_threads(|| self.ns.drop_index(attr))
            .map_err(errors::engine)
    }

    /// The namespace's indexes as a JSON text.
    fn list_indexes_json(&self) -> PyResult<String> {
        let list = self.ns.list_indexes().map_err(errors::engine)?;
        serde_json::to_string(&list).map_err(|e| errors::InternalError::new_err(e.to_string()))
    }

    /// Runs a query document (`docs/protocol.md`, Queries): its records and its summary
    /// (a JSON text).
    fn query_json<'py>(
        &self,
        py: Python<'py>,
        doc: &str,
    ) -> PyResult<crate::query::QueryResult<'py>> {
        let out = py
            .allow_threads(|| {
                self.ns
                    .run_query(doc.as_bytes(), cerberus_engine::DEFAULT_PAGE_BYTES as u32)
            })
            .map_err(errors::engine)?;
        Ok(crate::query::query_result(py, out.records, &out.summary))
    }

    /// Every page of a find as one `pyarrow.Table` (`None`: the values do not make one), the
    /// pages fetched and the last summary (JSON text).
    fn find_arrow(
        &self,
        py: Python<'_>,
        doc: &str,
        keys_only: bool,
    ) -> PyResult<crate::query::ArrowFind> {
        let doc: serde_json::Value = serde_json::from_str(doc)
            .map_err(|e| errors::InvalidField::new_err(format!("query document: {e}")))?;
        let found = py.allow_threads(|| {
            crate::arrow_pages::all_pages(doc, |d| {
                let out = self
                    .ns
                    .run_query(
                        d.to_string().as_bytes(),
                        cerberus_engine::DEFAULT_PAGE_BYTES as u32,
                    )
                    .map_err(errors::engine)?;
                Ok((out.records, out.summary))
            })
        })?;
        crate::query::arrow_find(py, found, keys_only)
    }

    /// The namespace's counters, space and settings as a JSON text (the device's shape).
    fn stats_json(&self, py: Python<'_>) -> PyResult<String> {
        let s = py
            .allow_threads(|| self.ns.stats())
            .map_err(errors::engine)?;
        let doc =
            serde_json::to_value(&s).map_err(|e| errors::InternalError::new_err(e.to_string()))?;
        Ok(doc.to_string())
    }

    /// Changes the settings named (`capacity`, `weight`, ...); the others stay.
    #[pyo3(signature = (**settings))]
    fn configure(&self, py: Python<'_>, settings: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let s = settings::over(settings::from_engine(&self.ns.options()), settings)?;
        let options = settings::to_engine(&s);
        py.allow_threads(|| self.ns.configure(options))
            .map_err(errors::engine)
    }
}

/// The entries of a scan, in key order, as `(key, value)` bytes.
#[pyclass(module = "cerberus._cerberus", frozen)]
pub struct EmbeddedScan {
    it: Mutex<Option<Iter>>,
}

#[pymethods]
impl EmbeddedScan {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        let next: Option<cerberus_engine::Result<(Bytes, Bytes)>> = py.allow_threads(|| {
            let mut g = self.it.lock();
            let next = g.as_mut().and_then(|it| it.next());
            if next.is_none() {
                *g = None;
            }
            next
        });
        match next {
            None => Ok(None),
            Some(Ok((k, v))) => Ok(Some((PyBytes::new(py, &k), PyBytes::new(py, &v)))),
            Some(Err(e)) => Err(errors::engine(e)),
        }
    }

    /// Releases the scan's snapshot now rather than when it is collected.
    fn close(&self) {
        *self.it.lock() = None;
    }
}
