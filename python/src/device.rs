//! The device client (`cerberus.connect`): one connection to a device, shared by the
//! namespaces opened on it.

use crate::errors;
use crate::keys::Key;
use crate::settings;
use bytes::Bytes;
use cerberus_host::{
    BlockingClient, BlockingNamespace, ClientConfig, IndexKind, NamespaceSettings, Scan,
    ScanOptions, TlsOptions, WriteBatch,
};
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// A connection to a device.
#[pyclass(module = "cerberus._cerberus", frozen)]
pub struct DeviceClient {
    client: BlockingClient,
}

/// The subsystem NQN a device's NVMe/TCP target answers to unless its `[nvme] subnqn` says
/// otherwise.
const DEFAULT_SUBNQN: &str = cerberus_host::proto::nvme::DEFAULT_SUBNQN;

/// How to reach the device: `ClientConfig` as the CLI builds it from `--tls-ca`,
/// `--tls-name`, `--wire`, `--hostnqn`, `--subnqn`, `--dhchap-secret` and
/// `--dhchap-ctrl-secret`
/// (`crates/cli/src/session.rs`), with the CLI's refusals as `ValueError`.
fn client_config(
    address: &str,
    tls_ca: Option<std::path::PathBuf>,
    server_name: Option<String>,
    wire: &str,
    hostnqn: Option<String>,
    subnqn: Option<String>,
    (dhchap_secret, dhchap_ctrl_secret): (Option<String>, Option<String>),
) -> PyResult<ClientConfig> {
    let mut config = ClientConfig::new(address);
    match wire {
        "native" => {
            if dhchap_secret.is_some() || dhchap_ctrl_secret.is_some() {
                return Err(PyValueError::new_err(
                    "dhchap_secret and dhchap_ctrl_secret are for wire=\"nvme\": the native \
                     wire has no DH-HMAC-CHAP",
                ));
            }
            if let Some(ca) = tls_ca {
                let name =
                    server_name.unwrap_or_else(|| TlsOptions::server_name_of(address).to_string());
                let tls = TlsOptions::from_pem_file(ca, name).map_err(errors::host)?;
                config = config.with_tls(tls);
            }
        }
        "nvme" => {
            if tls_ca.is_some() {
                return Err(PyValueError::new_err(
                    "tls_ca is for the native wire: the NVMe/TCP target has no TLS yet",
                ));
            }
            let hostnqn = hostnqn.ok_or_else(|| {
                PyValueError::new_err(
                    "wire=\"nvme\" needs hostnqn: this host's NQN, as the device's \
                     [nvme.hosts] grants name it",
                )
            })?;
            let subnqn = subnqn.unwrap_or_else(|| DEFAULT_SUBNQN.to_string());
            config = config.with_nvme(subnqn, hostnqn);
            if dhchap_ctrl_secret.is_some() && dhchap_secret.is_none() {
                return Err(PyValueError::new_err(
                    "dhchap_ctrl_secret needs dhchap_secret: the device proves itself inside \
                     the host's authentication",
                ));
            }
            if let Some(secret) = dhchap_secret {
                config = config.with_nvme_secret(secret);
            }
            if let Some(secret) = dhchap_ctrl_secret {
                config = config.with_nvme_ctrl_secret(secret);
            }
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "wire must be \"native\" or \"nvme\", not {other:?}"
            )))
        }
    }
    Ok(config)
}

#[pymethods]
impl DeviceClient {
    /// Connects to the device at `address` (see `cerberus.connect`).
    #[staticmethod]
    #[pyo3(signature = (
        address, admin_secret=None, tls_ca=None, server_name=None, wire="native",
        hostnqn=None, subnqn=None, dhchap_secret=None, dhchap_ctrl_secret=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn connect(
        py: Python<'_>,
        address: &str,
        admin_secret: Option<String>,
        tls_ca: Option<std::path::PathBuf>,
        server_name: Option<String>,
        wire: &str,
        hostnqn: Option<String>,
        subnqn: Option<String>,
        dhchap_secret: Option<String>,
        dhchap_ctrl_secret: Option<String>,
    ) -> PyResult<Self> {
        let config = client_config(
            address,
            tls_ca,
            server_name,
            wire,
            hostnqn,
            subnqn,
            (dhchap_secret, dhchap_ctrl_secret),
        )?;
        let client = py
            .allow_threads(|| {
                let c = BlockingClient::connect_with(config)?;
                if let Some(s) = &admin_secret {
                    c.authenticate_admin(s)?;
                }
                Ok(c)
            })
            .map_err(errors::host)?;
        Ok(DeviceClient { client })
    }

    /// Creates a namespace (admin) with the settings named (`capacity`, `weight`, ...):
    /// returns `(nsid, secret)`; the secret is shown once.
    #[pyo3(signature = (name, **settings))]
    fn create_namespace(
        &self,
        py: Python<'_>,
        name: &str,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(u32, String)> {
        if !settings::given(settings) {
            return py
                .allow_threads(|| self.client.create_namespace(name))
                .map_err(errors::host);
        }
        let s = settings::over(NamespaceSettings::default(), settings)?;
        py.allow_threads(|| self.client.create_namespace_with(name, &s))
            .map_err(errors::host)
    }

    /// Changes the settings named of namespace `nsid` (admin); the others stay.
    #[pyo3(signature = (nsid, **settings))]
    fn configure_namespace(
        &self,
        py: Python<'_>,
        nsid: u32,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let doc = py
            .allow_threads(|| self.client.namespace(nsid).stats())
            .map_err(errors::host)?;
        let s = settings::over(settings::from_stats(&doc), settings)?;
        py.allow_threads(|| self.client.configure_namespace(nsid, &s))
            .map_err(errors::host)
    }

    /// Makes namespace `nsid` read-only or writable again (admin); its settings stay.
    fn set_read_only(&self, py: Python<'_>, nsid: u32, read_only: bool) -> PyResult<()> {
        py.allow_threads(|| self.client.set_read_only(nsid, read_only))
            .map_err(errors::host)
    }

    fn destroy_namespace(&self, py: Python<'_>, nsid: u32) -> PyResult<()> {
        py.allow_threads(|| self.client.destroy_namespace(nsid))
            .map_err(errors::host)
    }

    /// `(nsid, name)` of every namespace (admin).
    fn list_namespaces(&self, py: Python<'_>) -> PyResult<Vec<(u32, String)>> {
        let list = py
            .allow_threads(|| self.client.list_namespaces())
            .map_err(errors::host)?;
        Ok(list.into_iter().map(|e| (e.nsid, e.name)).collect())
    }

    /// Authenticates this connection for `nsid` with `secret` and returns its handle.
    fn namespace(&self, py: Python<'_>, nsid: u32, secret: &str) -> PyResult<DeviceNamespace> {
        let ns = py
            .allow_threads(|| self.client.open_namespace(nsid, secret))
            .map_err(errors::host)?;
        Ok(DeviceNamespace { ns })
    }

    /// [`namespace`](Self::namespace) by the namespace's name (no admin secret needed).
    fn namespace_named(
        &self,
        py: Python<'_>,
        name: &str,
        secret: &str,
    ) -> PyResult<DeviceNamespace> {
        let ns = py
            .allow_threads(|| self.client.open_namespace_named(name, secret))
            .map_err(errors::host)?;
        Ok(DeviceNamespace { ns })
    }

    /// A new secret for namespace `nsid` (admin); the old one is refused from then on.
    fn rekey_namespace(&self, py: Python<'_>, nsid: u32) -> PyResult<String> {
        py.allow_threads(|| self.client.rekey_namespace(nsid))
            .map_err(errors::host)
    }

    /// The device's counters (admin) as a JSON text.
    fn stats_json(&self, py: Python<'_>) -> PyResult<String> {
        let v = py
            .allow_threads(|| self.client.stats())
            .map_err(errors::host)?;
        Ok(v.to_string())
    }

    /// Backs the device up into `path` on the device's machine (admin); what it wrote as a
    /// JSON text.
    fn backup_json(&self, py: Python<'_>, path: &str) -> PyResult<String> {
        let info = py
            .allow_threads(|| self.client.backup(path))
            .map_err(errors::host)?;
        serde_json::to_string(&info).map_err(|e| errors::InternalError::new_err(e.to_string()))
    }
}

/// A namespace on a device, authenticated on its connection.
#[pyclass(module = "cerberus._cerberus", frozen)]
pub struct DeviceNamespace {
    ns: BlockingNamespace,
}

#[pymethods]
impl DeviceNamespace {
    #[getter]
    fn nsid(&self) -> u32 {
        self.ns.nsid()
    }

    fn put(&self, py: Python<'_>, key: Key, value: Key) -> PyResult<()> {
        py.allow_threads(|| self.ns.put(key.0, value.0))
            .map_err(errors::host)
    }

    fn get<'py>(&self, py: Python<'py>, key: Key) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let v = py
            .allow_threads(|| self.ns.get(key.0))
            .map_err(errors::host)?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    /// Deletes `key`; returns whether it existed.
    fn delete(&self, py: Python<'_>, key: Key) -> PyResult<bool> {
        py.allow_threads(|| self.ns.delete(key.0))
            .map_err(errors::host)
    }

    fn contains(&self, py: Python<'_>, key: Key) -> PyResult<bool> {
        py.allow_threads(|| self.ns.contains(key.0))
            .map_err(errors::host)
    }

    /// Deletes the keys from `start` (inclusive) to `end` (exclusive; empty: no bound) in
    /// DeleteRange commands until none is left; how many.
    fn delete_range(&self, py: Python<'_>, start: Key, end: Key) -> PyResult<u64> {
        py.allow_threads(|| self.ns.delete_range(start.0, end.0))
            .map_err(errors::host)
    }

    /// Deletes the keys that begin with `prefix`; how many.
    fn delete_prefix(&self, py: Python<'_>, prefix: Key) -> PyResult<u64> {
        py.allow_threads(|| self.ns.delete_prefix(prefix.0))
            .map_err(errors::host)
    }

    /// Applies the puts, then the deletes, all together or not at all: one `WriteBatch`
    /// command (at most `MAX_BATCH_WRITES` writes, within the device's frame limit).
    fn write_batch(
        &self,
        py: Python<'_>,
        puts: Vec<(Key, Key)>,
        deletes: Vec<Key>,
    ) -> PyResult<()> {
        let mut batch = WriteBatch::new();
        for (k, v) in puts {
            batch.put(k.0, v.0);
        }
        for k in deletes {
            batch.delete(k.0);
        }
        py.allow_threads(|| self.ns.write(batch))
            .map_err(errors::host)
    }

    /// Values of `keys` in order (`None` where absent), pipelined.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: Vec<Key>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let keys: Vec<Bytes> = keys.into_iter().map(|k| Bytes::from(k.0)).collect();
        let vals = py
            .allow_threads(|| self.ns.get_many(keys))
            .map_err(errors::host)?;
        Ok(vals
            .into_iter()
            .map(|v| v.map(|v| PyBytes::new(py, &v)))
            .collect())
    }

    /// A scan at one snapshot over one device iterator, fetched in batches.
    #[pyo3(signature = (start=None, end=None, prefix=None, keys_only=false))]
    fn scan(
        &self,
        py: Python<'_>,
        start: Option<Key>,
        end: Option<Key>,
        prefix: Option<Key>,
        keys_only: bool,
    ) -> PyResult<DeviceScan> {
        let opts = ScanOptions {
            start: start.map(|k| Bytes::from(k.0)).unwrap_or_default(),
            upper_bound: end.map(|k| Bytes::from(k.0)),
            prefix: prefix.map(|k| Bytes::from(k.0)),
            keys_only,
            ..ScanOptions::default()
        };
        let scan = py
            .allow_threads(|| self.ns.scan(opts))
            .map_err(errors::host)?;
        Ok(DeviceScan {
            scan: Mutex::new(Some(scan)),
        })
    }

    #[pyo3(signature = (attr, kind="vas"))]
    fn create_index(&self, py: Python<'_>, attr: &str, kind: &str) -> PyResult<()> {
        let kind = match crate::query::index_kind(kind)? {
            cerberus_engine::IndexKind::Vas => IndexKind::Vas,
            _ => IndexKind::Classic,
        };
        py.allow_threads(|| self.ns.create_index(attr, kind))
            .map_err(errors::host)
    }

    fn drop_index(&self, py: Python<'_>, attr: &str) -> PyResult<()> {
        py.allow_threads(|| self.ns.drop_index(attr))
            .map_err(errors::host)
    }

    fn list_indexes_json(&self, py: Python<'_>) -> PyResult<String> {
        let v = py
            .allow_threads(|| self.ns.list_indexes())
            .map_err(errors::host)?;
        Ok(v.to_string())
    }

    /// Runs a query document inside the device: its records and its summary (JSON text).
    fn query_json<'py>(
        &self,
        py: Python<'py>,
        doc: &str,
    ) -> PyResult<crate::query::QueryResult<'py>> {
        let doc: serde_json::Value = serde_json::from_str(doc)
            .map_err(|e| errors::InvalidField::new_err(format!("query document: {e}")))?;
        let reply = py
            .allow_threads(|| self.ns.query(&doc))
            .map_err(errors::host)?;
        Ok(crate::query::query_result(
            py,
            reply.records,
            &reply.summary,
        ))
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
                let reply = self.ns.query(d).map_err(errors::host)?;
                Ok((reply.records, reply.summary))
            })
        })?;
        crate::query::arrow_find(py, found, keys_only)
    }

    fn stats_json(&self, py: Python<'_>) -> PyResult<String> {
        let v = py.allow_threads(|| self.ns.stats()).map_err(errors::host)?;
        Ok(v.to_string())
    }

    /// Changes the settings named (`capacity`, `weight`, ...); the others stay. The
    /// connection must be the admin's.
    #[pyo3(signature = (**settings))]
    fn configure(&self, py: Python<'_>, settings: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let doc = py.allow_threads(|| self.ns.stats()).map_err(errors::host)?;
        let s = settings::over(settings::from_stats(&doc), settings)?;
        py.allow_threads(|| self.ns.configure(&s))
            .map_err(errors::host)
    }
}

/// The entries of a device scan, in key order.
#[pyclass(module = "cerberus._cerberus", frozen)]
pub struct DeviceScan {
    scan: Mutex<Option<Scan>>,
}

#[pymethods]
impl DeviceScan {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        let next = py.allow_threads(|| {
            let mut g = self.scan.lock();
            let next = g.as_mut().and_then(|s| s.next());
            if next.is_none() {
                *g = None;
            }
            next
        });
        match next {
            None => Ok(None),
            Some(Ok((k, v))) => Ok(Some((PyBytes::new(py, &k), PyBytes::new(py, &v)))),
            Some(Err(e)) => Err(errors::host(e)),
        }
    }

    /// Closes the device iterator now rather than when the scan is collected.
    fn close(&self) {
        *self.scan.lock() = None;
    }
}
