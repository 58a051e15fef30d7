#![allow(dead_code)]

use cerberus_device::{Device, DeviceConfig, DeviceHandle};
use cerberus_host::BlockingClient;
use std::path::Path;

/// A device on a free loopback port over `dir`, with small test-friendly settings.
pub fn start(dir: &Path, tweak: impl FnOnce(&mut DeviceConfig)) -> DeviceHandle {
    let mut c = DeviceConfig {
        data_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        workers: 4,
        ..DeviceConfig::default()
    };
    c.engine.memtable_bytes = 4 << 20;
    c.engine.cache_bytes = 8 << 20;
    tweak(&mut c);
    Device::start(c).expect("device starts")
}

pub fn admin(dev: &DeviceHandle) -> BlockingClient {
    let c = BlockingClient::connect(&dev.local_addr().to_string()).expect("connect");
    c.authenticate_admin(dev.admin_secret())
        .expect("admin auth");
    c
}

/// Creates a namespace and returns a client authenticated for it, with its id and secret.
pub fn tenant(dev: &DeviceHandle, name: &str) -> (BlockingClient, u32, String) {
    let (nsid, secret) = admin(dev).create_namespace(name).expect("ns create");
    let c = BlockingClient::connect(&dev.local_addr().to_string()).expect("connect");
    c.open_namespace(nsid, &secret).expect("auth");
    (c, nsid, secret)
}
