//! Cerberus through the network: the workloads' puts and gets become commands to a device,
//! either one already running (`--device HOST:PORT`) or one this process starts on a loopback
//! port over the run's directory (`--device local`), with the same storage and cache.
//!
//! Namespaces are made with the admin credential; their secrets are kept in
//! `bench-secrets.json` in the run's directory, so a later run with the same `--db` finds them.

use super::device_cursor::DeviceCursor;
use crate::config::{OpenConfig, StorageArg};
use crate::db::{
    read_value, tenants_in_namespaces, with_tenant_key, Affix, BenchCursor, BenchDb, CursorOptions,
    LayoutArg, TenantHandle,
};
use crate::error::{Doing, EngineError, Result};
use crate::local_device::{self, LocalDevice};
use crate::op::Op;
use bytes::Bytes;
use cerberus_device::{DeviceConfig, DeviceHandle, StorageChoice};
use cerberus_host::{BlockingClient, BlockingNamespace};
use cerberus_proto::NamespaceSettings;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Connections the benchmark threads spread over: one per thread up to this many (as
/// Redis's clients in `--engine redis`), shared (pipelined) beyond.
const CONNECTIONS: usize = 64;
const SECRETS_FILE: &str = "bench-secrets.json";

/// The device engine: a connection per benchmark thread to a device, remote or started here.
pub struct DeviceDb {
    local: Mutex<Option<DeviceHandle>>,
    admin: BlockingClient,
    clients: Vec<BlockingClient>,
    next: AtomicUsize,
    /// Namespace of the plain (non-tenant) workloads.
    ns: u32,
    /// Its handle on each connection, made once: a handle per call would clone the
    /// connection's shared parts for every operation.
    handles: Vec<BlockingNamespace>,
    secrets_path: PathBuf,
    secrets: Mutex<BTreeMap<String, (u32, String)>>,
    layout: LayoutArg,
}

thread_local! {
    static SLOT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

impl DeviceDb {
    /// Connects to the device of `config.device`, starting it here if `local`.
    pub fn open(config: &OpenConfig) -> Result<DeviceDb> {
        DeviceDb::open_with(config, |_| {})
    }

    /// [`DeviceDb::open`] on a local device whose clients speak NVMe/TCP whatever `--wire`
    /// says (the `device-nvme` engine: both wires in one run, alternated by `--rounds`).
    pub fn open_nvme(config: &OpenConfig) -> Result<DeviceDb> {
        DeviceDb::open_on(config, true, |_| {})
    }

    /// [`DeviceDb::open`], with `tweak` applied last to a local device's configuration (the
    /// noisy experiment's shares and network threads); unused for a remote device.
    pub fn open_with(
        config: &OpenConfig,
        tweak: impl FnOnce(&mut DeviceConfig),
    ) -> Result<DeviceDb> {
        DeviceDb::open_on(config, crate::config::wire_nvme(), tweak)
    }

    /// Opens the device with its clients on NVMe/TCP (`nvme`) or the native wire.
    fn open_on(
        config: &OpenConfig,
        nvme: bool,
        tweak: impl FnOnce(&mut DeviceConfig),
    ) -> Result<DeviceDb> {
        let target = config.device.as_deref().unwrap_or("local");
        let (local, remote_secret) = if target == "local" {
            (Some(start_local(config, nvme, tweak)?), None)
        } else {
            if nvme {
                return Err(EngineError::NeedsLocalDevice {
                    what: "--wire nvme",
                });
            }
            let secret = config
                .admin_secret
                .as_deref()
                .ok_or(EngineError::NoAdminSecret)?;
            (None, Some(secret.to_string()))
        };
        let client_config = match &local {
            Some(d) => d.client_config(nvme)?,
            None => cerberus_host::ClientConfig::new(target),
        };
        let secret = match &local {
            Some(d) => d.device.admin_secret().to_string(),
            None => remote_secret.unwrap_or_default(),
        };
        let admin = local_device::connect_with(&client_config)?;
        admin
            .authenticate_admin(&secret)
            .doing(Op::AuthenticateAdmin)?;
        let clients = (0..CONNECTIONS)
            .map(|_| local_device::connect_with(&client_config))
            .collect::<Result<Vec<_>>>()?;
        let secrets_path = config.path.join(SECRETS_FILE);
        let secrets = match std::fs::read(&secrets_path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|source| EngineError::ReadSecrets {
                path: secrets_path.clone(),
                source,
            })?,
            Err(_) => BTreeMap::new(),
        };
        let mut db = DeviceDb {
            local: Mutex::new(local.map(|d| d.device)),
            admin,
            clients,
            next: AtomicUsize::new(0),
            ns: 0,
            handles: Vec::new(),
            secrets_path,
            secrets: Mutex::new(secrets),
            layout: config.layout,
        };
        db.ns = db.namespace("bench")?;
        db.handles = db.clients.iter().map(|c| c.namespace(db.ns)).collect();
        Ok(db)
    }

    /// The id of namespace `name`, created if needed, with every connection authenticated.
    fn namespace(&self, name: &str) -> Result<u32> {
        let known = self.secrets.lock().get(name).cloned();
        let exists = self
            .admin
            .list_namespaces()
            .doing(Op::ListNamespaces)?
            .into_iter()
            .find(|e| e.name == name);
        let (nsid, secret) = match (exists, known) {
            (Some(e), Some((id, s))) if e.nsid == id => (id, s),
            (Some(e), _) => {
                return Err(EngineError::SecretUnknown {
                    name: name.into(),
                    nsid: e.nsid,
                    path: self.secrets_path.clone(),
                })
            }
            (None, _) => {
                let (id, s) = self
                    .admin
                    .create_namespace(name)
                    .doing(Op::CreateNamespace { name: name.into() })?;
                let mut all = self.secrets.lock();
                all.insert(name.to_string(), (id, s.clone()));
                let doc = serde_json::to_vec_pretty(&*all).map_err(EngineError::EncodeSecrets)?;
                std::fs::write(&self.secrets_path, doc).map_err(|source| {
                    EngineError::WriteSecrets {
                        path: self.secrets_path.clone(),
                        source,
                    }
                })?;
                (id, s)
            }
        };
        for c in &self.clients {
            c.open_namespace(nsid, &secret)
                .doing(Op::OpenNamespace { nsid })?;
        }
        Ok(nsid)
    }

    /// Gives a tenant's namespace `settings` (its I/O shares), through the admin connection.
    pub fn configure_tenant(
        &self,
        tenant: &TenantHandle,
        settings: &NamespaceSettings,
    ) -> Result<()> {
        self.admin
            .configure_namespace(tenant.id, settings)
            .doing(Op::ConfigureNamespace { nsid: tenant.id })
    }

    /// `shares_served` of a tenant's namespace stats: its shares and what it was served,
    /// waited and charged (cumulative).
    pub fn tenant_shares_json(&self, tenant: &TenantHandle) -> Result<serde_json::Value> {
        let doc = self
            .client()
            .namespace(tenant.id)
            .stats()
            .doing(Op::NamespaceStats)?;
        Ok(doc["shares_served"].clone())
    }

    /// A local device: waits until its engine has flushed and finished its compactions (run
    /// on the device's lanes), as the embedded engine's settle does. A remote device has no
    /// command for it: returns at once.
    pub fn wait_for_compactions(&self) -> Result<()> {
        if let Some(dev) = &*self.local.lock() {
            dev.engine()
                .wait_for_compactions()
                .doing(Op::WaitForCompactions)?;
        }
        Ok(())
    }

    /// The key a tenant's `key` is stored under: itself, or in the baseline layout followed
    /// by the tenant index.
    fn tenant_key(&self, tenant: &TenantHandle, key: &[u8]) -> Vec<u8> {
        match self.layout {
            LayoutArg::Baseline => {
                with_tenant_key(Affix::Suffix, tenant.index as u32, key, <[u8]>::to_vec)
            }
            LayoutArg::PerNamespace | LayoutArg::Shared => key.to_vec(),
        }
    }

    /// The calling thread's connection slot: threads are spread over the connections in turn.
    fn slot(&self) -> usize {
        SLOT.with(|s| match s.get() {
            Some(i) => i,
            None => {
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                s.set(Some(i));
                i
            }
        }) % self.clients.len()
    }

    /// The connection of the calling thread.
    fn client(&self) -> &BlockingClient {
        &self.clients[self.slot()]
    }

    /// The plain workloads' namespace on the calling thread's connection.
    fn bench_ns(&self) -> &BlockingNamespace {
        &self.handles[self.slot()]
    }
}

/// Starts the device of `--device local` over `config.path`: the run's storage, sync and
/// cache, values as large as the embedded runs use; its NVMe/TCP target too if `nvme`;
/// `tweak` applied last. (The `kvs` engine starts the same device.)
pub(crate) fn start_local(
    config: &OpenConfig,
    nvme: bool,
    tweak: impl FnOnce(&mut DeviceConfig),
) -> Result<LocalDevice> {
    let mut c = local_device::config(&config.path);
    c.storage = match config.storage {
        StorageArg::Posix => StorageChoice::Posix,
        StorageArg::Nand => StorageChoice::Nand,
    };
    c.sync = config.sync;
    // The device's own limit on values unless the run writes larger ones: a limit raised
    // for nothing changes more than what it accepts (the room a batch of gets reserves in
    // the held bytes is its size times `max_value_len`: at 64 MiB, batches of two).
    let largest = u32::try_from(config.largest_value).unwrap_or(u32::MAX);
    c.max_value_len = c.max_value_len.max(largest);
    c.engine.cache_bytes = config.cache_bytes;
    if let Some(b) = crate::config::row_cache_bytes() {
        c.engine.row_cache_bytes = b;
    }
    c.iterator_prefetch_degree = config.device_prefetch_degree;
    if matches!(config.layout, LayoutArg::Shared | LayoutArg::Baseline) {
        c.engine.layout = "shared".into();
    }
    if config.profile.is_some() {
        return Err(EngineError::ProfileOnDevice);
    }
    if nvme {
        local_device::serve_nvme(&mut c);
    }
    tweak(&mut c);
    LocalDevice::start(c)
}

impl BenchDb for DeviceDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.bench_ns()
            .put(key.to_vec(), value.to_vec())
            .doing(Op::Put)
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        Ok(read_value(
            self.bench_ns().get(key.to_vec()).doing(Op::Get)?,
        ))
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let pairs = pairs
            .iter()
            .map(|(k, v)| (Bytes::copy_from_slice(k), Bytes::copy_from_slice(v)))
            .collect();
        self.bench_ns().put_many(pairs).doing(Op::PutMany)
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<u64> {
        let keys = keys.iter().map(|k| Bytes::copy_from_slice(k)).collect();
        let got = self.bench_ns().get_many(keys).doing(Op::GetMany)?;
        Ok(got.iter().filter(|v| read_value(v.as_ref())).count() as u64)
    }

    fn flush(&self) -> Result<()> {
        Err(EngineError::NoDeviceCommand { command: "flush" })
    }

    fn compact(&self) -> Result<()> {
        Err(EngineError::NoDeviceCommand {
            command: "compaction",
        })
    }

    /// A local device: waits for its engine's flushes, compactions and value-log GC, as the
    /// embedded engine's settle does (`waitforcompaction` in a workload list, the
    /// multitenant run's settle). A remote device has no command for it: returns at once.
    fn settle(&self) -> Result<()> {
        self.wait_for_compactions()
    }

    fn stats_json(&self) -> serde_json::Value {
        self.admin.stats().unwrap_or(serde_json::Value::Null)
    }

    fn close(&self) -> Result<()> {
        if let Some(dev) = self.local.lock().take() {
            dev.shutdown().map_err(EngineError::StopDevice)?;
        }
        Ok(())
    }

    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        tenants_in_namespaces(n, self.layout, |name| self.namespace(name))
    }

    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        let key = self.tenant_key(tenant, key);
        self.client()
            .namespace(tenant.id)
            .put(key, value.to_vec())
            .doing(Op::Put)
    }

    /// Sent together on the calling thread's connection, without waiting for each.
    fn put_many_tenant(&self, tenant: &TenantHandle, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let pairs = pairs
            .iter()
            .map(|(k, v)| {
                (
                    Bytes::from(self.tenant_key(tenant, k)),
                    Bytes::copy_from_slice(v),
                )
            })
            .collect();
        self.client()
            .namespace(tenant.id)
            .put_many(pairs)
            .doing(Op::PutMany)
    }

    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        let key = self.tenant_key(tenant, key);
        let value = self.client().namespace(tenant.id).get(key).doing(Op::Get)?;
        Ok(read_value(value))
    }

    /// A device iterator on the calling thread's connection, opened at each seek
    /// (`device_cursor.rs`).
    fn cursor(&self, opts: &CursorOptions) -> Result<Box<dyn BenchCursor + '_>> {
        Ok(Box::new(DeviceCursor::new(self.bench_ns().clone(), opts)))
    }
}
