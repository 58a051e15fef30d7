//! The device each seed runs against (started in this process, as the C suite's), the
//! library's device handles on it (the admin's and a tenant's, credentials passed through
//! `kvs_open_device_with`: no process environment is set), and its restart on the same
//! data directory.

use crate::ffi::{ptr, H};
use crate::wire::{host_secret, start, Wire, HOSTNQN, SUBNQN};
use cerberus_device::DeviceHandle;
use cerberus_kvs::{
    code, kvs_close_device, kvs_close_key_space, kvs_create_key_space, kvs_open_device_with,
    kvs_open_key_space, KvsKeySpaceName, KvsOptionKeySpace,
};
use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::ptr::null_mut;

/// The key space the workers share, and the tenant's.
pub const MAIN: &str = "stress";
pub const TENANT: &str = "tenant";
/// Their quotas: large enough that no store meets them.
pub const MAIN_QUOTA: u64 = 256 << 20;
pub const TENANT_QUOTA: u64 = 64 << 20;

/// The device's memtable: small, so flushes and compactions run all through a seed and the
/// engine falls behind the writers now and then (`put_then_get` tests the device then).
const MEMTABLE_BYTES: usize = 128 << 10;

/// A device on a data directory, with the directories the library keeps secrets in.
pub struct Rig {
    pub wire: Wire,
    pub data: tempfile::TempDir,
    pub secrets: tempfile::TempDir,
    /// The tenant's handle keeps no secrets: it proves its own namespace only.
    pub tenant_secrets: tempfile::TempDir,
    pub dev: Option<DeviceHandle>,
}

impl Rig {
    pub fn start(wire: Wire) -> Rig {
        let mut rig = Rig {
            wire,
            data: tempfile::tempdir().expect("tempdir"),
            secrets: tempfile::tempdir().expect("tempdir"),
            tenant_secrets: tempfile::tempdir().expect("tempdir"),
            dev: None,
        };
        rig.dev = Some(start(rig.data.path(), wire, MEMTABLE_BYTES));
        rig
    }

    fn dev(&self) -> &DeviceHandle {
        self.dev.as_ref().expect("device running")
    }

    /// The running device, for a client of its own (`pipeliner`).
    pub fn handle(&self) -> &DeviceHandle {
        self.dev()
    }

    /// The address the library files secrets under.
    pub fn addr(&self) -> String {
        match self.wire {
            Wire::Native => self.dev().local_addr().to_string(),
            Wire::Nvme => self.dev().nvme_addr().expect("nvme").to_string(),
        }
    }

    pub fn uri(&self) -> String {
        match self.wire {
            Wire::Native => self.addr(),
            Wire::Nvme => format!(
                "nvme-tcp://{}?hostnqn={HOSTNQN}&subnqn={SUBNQN}",
                self.addr()
            ),
        }
    }

    fn env(&self, admin: bool) -> HashMap<&'static str, String> {
        let mut env = HashMap::new();
        if admin {
            env.insert(
                "CERBERUS_ADMIN_SECRET",
                self.dev().admin_secret().to_string(),
            );
            env.insert("CERBERUS_KVS_SECRETS", path(self.secrets.path()));
        } else {
            env.insert("CERBERUS_NS", TENANT.to_string());
            env.insert("CERBERUS_SECRET", self.tenant_secret());
            env.insert("CERBERUS_KVS_SECRETS", path(self.tenant_secrets.path()));
        }
        if self.wire == Wire::Nvme {
            env.insert("CERBERUS_DHCHAP_SECRET", host_secret());
        }
        env
    }

    /// The secret of the tenant's namespace, as the admin's handle kept it.
    fn tenant_secret(&self) -> String {
        let dir = cerberus_kvs::secrets_dir(self.secrets.path(), &self.addr());
        let text = std::fs::read_to_string(dir.join(format!("{TENANT}.secret")))
            .expect("the tenant's secret was kept");
        text.trim().to_string()
    }

    /// A device handle with the admin credential (`admin`) or the tenant's.
    pub fn open(&self, admin: bool) -> Result<H, String> {
        let env = self.env(admin);
        let lookup = |k: &str| env.get(k).cloned();
        let mut dev = null_mut();
        match kvs_open_device_with(&self.uri(), &lookup, &mut dev) {
            code::SUCCESS => Ok(dev as H),
            c => Err(format!("kvs_open_device_with: {c:#x}")),
        }
    }

    /// Stops the device gracefully and starts it again on the same data; the library's
    /// secrets move to its new address.
    pub fn restart(&mut self) {
        let old = cerberus_kvs::secrets_dir(self.secrets.path(), &self.addr());
        if let Some(dev) = self.dev.take() {
            dev.shutdown().expect("graceful stop");
        }
        self.dev = Some(start(self.data.path(), self.wire, MEMTABLE_BYTES));
        let new = cerberus_kvs::secrets_dir(self.secrets.path(), &self.addr());
        copy_dir(&old, &new);
    }
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn copy_dir(from: &Path, to: &PathBuf) {
    std::fs::create_dir_all(to).expect("secrets dir");
    for e in std::fs::read_dir(from).expect("old secrets dir") {
        let e = e.expect("dir entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy a secret");
    }
}

/// Creates key space `name` with a quota of `quota` bytes.
pub fn create_key_space(dev: H, name: &str, quota: u64) -> Result<(), String> {
    let c = CString::new(name).map_err(|e| e.to_string())?;
    let mut n = KvsKeySpaceName {
        name_len: name.len() as u32,
        name: c.as_ptr().cast_mut(),
    };
    // SAFETY: a valid name.
    match unsafe {
        kvs_create_key_space(ptr(dev), &mut n, quota, KvsOptionKeySpace { ordering: 0 })
    } {
        code::SUCCESS => Ok(()),
        r => Err(format!("kvs_create_key_space {name}: {r:#x}")),
    }
}

/// Opens key space `name` on `dev`: its handle, or the code.
pub fn open_key_space(dev: H, name: &str) -> Result<H, i32> {
    let c = CString::new(name).map_err(|_| code::PARAM_INVALID)?;
    let mut ks = null_mut();
    // SAFETY: a valid name and a writable handle.
    match unsafe { kvs_open_key_space(ptr(dev), c.as_ptr().cast_mut(), &mut ks) } {
        code::SUCCESS => Ok(ks as H),
        r => Err(r),
    }
}

pub fn close_key_space(ks: H) -> i32 {
    kvs_close_key_space(ptr(ks))
}

pub fn close_device(dev: H) -> i32 {
    kvs_close_device(ptr(dev))
}
