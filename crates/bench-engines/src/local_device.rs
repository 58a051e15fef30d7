//! A device started in this process on a loopback port, and the connections the bench makes to
//! a device: what the device engine, `queries --device local` and `bts` share.

use crate::error::{Doing, EngineError, Result};
use crate::op::Op;
use cerberus_device::{Device, DeviceConfig, DeviceHandle};
use cerberus_host::{BlockingClient, BlockingNamespace, ClientConfig};
use std::path::Path;

/// The host NQN the bench's NVMe/TCP clients connect as (`--wire nvme`).
pub const BENCH_HOSTNQN: &str = "nqn.2026-11.dev.cerberus:bench";

/// The bench host's DH-HMAC-CHAP secret: its queues authenticate as the device's default
/// asks (once per queue, at connect: no cost per operation).
fn bench_secret() -> String {
    use cerberus_host::proto::nvme::{DhchapSecret, HashId};
    DhchapSecret::encode(Some(HashId::Sha256), &[0xbe; 32])
}

/// Serves `config`'s NVMe/TCP target on a free loopback port, with the bench's host NQN
/// granted every namespace, listed as an admin host, and given its secret.
pub fn serve_nvme(config: &mut DeviceConfig) {
    config.nvme_listen = Some("127.0.0.1:0".into());
    config
        .nvme
        .hosts
        .insert(BENCH_HOSTNQN.into(), vec!["*".into()]);
    config.nvme.admin_hosts.push(BENCH_HOSTNQN.into());
    config
        .nvme
        .host_secrets
        .insert(BENCH_HOSTNQN.into(), bench_secret());
}

/// The configuration of a device over `dir` on a free loopback port; callers set the rest.
pub fn config(dir: &Path) -> DeviceConfig {
    DeviceConfig {
        data_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        ..DeviceConfig::default()
    }
}

/// A device started here, and its address.
pub struct LocalDevice {
    /// The running device.
    pub device: DeviceHandle,
    /// Its `HOST:PORT`.
    pub addr: String,
}

impl LocalDevice {
    /// Starts a device with `config`.
    pub fn start(config: DeviceConfig) -> Result<LocalDevice> {
        let device = Device::start(config).map_err(EngineError::StartDevice)?;
        let addr = device.local_addr().to_string();
        Ok(LocalDevice { device, addr })
    }

    /// A new connection logged in as admin.
    pub fn admin(&self) -> Result<BlockingClient> {
        admin(&self.addr, self.device.admin_secret())
    }

    /// How the bench's clients connect: to the native port, or over NVMe/TCP to the target
    /// [`serve_nvme`] started.
    pub fn client_config(&self, nvme: bool) -> Result<ClientConfig> {
        if !nvme {
            return Ok(ClientConfig::new(self.addr.clone()));
        }
        let addr = self.device.nvme_addr().ok_or(EngineError::NoNvmeTarget)?;
        let subnqn = cerberus_device::NvmeConfig::default().subnqn;
        Ok(ClientConfig::new(addr.to_string())
            .with_nvme(subnqn, BENCH_HOSTNQN)
            .with_nvme_secret(bench_secret()))
    }

    /// Creates namespace `name` (through a connection closed at once): its id and secret.
    pub fn create_namespace(&self, name: &str) -> Result<(u32, String)> {
        self.admin()?
            .create_namespace(name)
            .doing(Op::CreateNamespace { name: name.into() })
    }
}

fn connect(addr: &str) -> Result<BlockingClient> {
    BlockingClient::connect(addr).doing(Op::Connect { addr: addr.into() })
}

/// A connection made with `config`.
pub fn connect_with(config: &ClientConfig) -> Result<BlockingClient> {
    BlockingClient::connect_with(config.clone()).doing(Op::Connect {
        addr: config.addr.clone(),
    })
}

/// A connection to the device at `addr` logged in as admin.
pub fn admin(addr: &str, secret: &str) -> Result<BlockingClient> {
    let c = connect(addr)?;
    c.authenticate_admin(secret).doing(Op::AuthenticateAdmin)?;
    Ok(c)
}

/// Namespace `ns` on a new connection to the device at `addr`, authenticated for it.
pub fn client(addr: &str, ns: u32, secret: &str) -> Result<BlockingNamespace> {
    connect(addr)?
        .open_namespace(ns, secret)
        .doing(Op::OpenNamespace { nsid: ns })
}
