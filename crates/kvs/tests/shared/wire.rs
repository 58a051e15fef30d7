//! What the kvs library's test binaries share: the wire a test's device serves, and the
//! device, started in the test's process on loopback ports (NVMe/TCP with its host admitted
//! as admin, by a DH-HMAC-CHAP secret).

use cerberus_device::{Device, DeviceConfig, DeviceHandle};
use std::path::Path;

pub const SUBNQN: &str = "nqn.2026-11.dev.cerberus:kv";
pub const HOSTNQN: &str = "nqn.2014-08.org.example:kvs-tests";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wire {
    Native,
    Nvme,
}

/// The host's DH-HMAC-CHAP secret on NVMe/TCP.
pub fn host_secret() -> String {
    cerberus_host::proto::nvme::DhchapSecret::encode(
        Some(cerberus_host::proto::nvme::HashId::Sha256),
        &[0x3c; 32],
    )
}

/// A device on `dir` serving `wire`, with a memtable of `memtable_bytes` (small: the tests'
/// data reach the tables) and a small row cache (off by default: its gets and evictions racing
/// the writes stay covered through both wires).
pub fn start(dir: &Path, wire: Wire, memtable_bytes: usize) -> DeviceHandle {
    let mut c = DeviceConfig {
        data_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        workers: 2,
        ..DeviceConfig::default()
    };
    c.engine.memtable_bytes = memtable_bytes;
    c.engine.cache_bytes = 8 << 20;
    c.engine.row_cache_bytes = 1 << 20;
    if wire == Wire::Nvme {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOSTNQN.into(), vec!["*".into()]);
        c.nvme.admin_hosts.push(HOSTNQN.into());
        c.nvme.host_secrets.insert(HOSTNQN.into(), host_secret());
    }
    Device::start(c).expect("device starts")
}
