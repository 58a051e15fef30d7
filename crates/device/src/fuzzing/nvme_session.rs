//! The stateful NVMe/TCP fuzz target: one device, started on first use in a temporary data
//! directory, and per input one connection driven by a sequence of PDUs the input chooses
//! (`session_ops`: ICReq, Connect, properties, DH-HMAC-CHAP messages, KV commands in the
//! capsule or through R2T/H2CData, the vendor Submit/Fetch pair, admin commands, raw
//! bytes), each with fields from the input. Answers are read as they come and remembered
//! (the R2T to answer, the challenge to reply to), so that inputs get past the handshake and
//! authentication often. After each input the device must still serve a fresh, legitimate
//! host: a new controller, a KV Store and the Retrieve of what it stored.

use super::nvme_hosts::{ctrl_secret, host_secret, AUTH_HOST, OPEN_HOST};
use super::nvme_wire::Wire;
use crate::config::DeviceConfig;
use crate::server::{Device, DeviceHandle};
use parking_lot::Mutex;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The running device and what sessions need of it.
pub(super) struct Target {
    dev: Option<DeviceHandle>,
    dir: PathBuf,
    pub addr: SocketAddr,
    /// The namespace the KV commands name.
    pub nsid: u32,
    /// Liveness checks run, for unique keys.
    checks: u64,
}

static TARGET: Mutex<Option<Target>> = Mutex::new(None);

impl Target {
    fn start() -> Target {
        static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("cerberus-fuzz-nvme-{}-{n}", std::process::id());
        let dir = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let mut c = DeviceConfig {
            data_dir: dir.clone(),
            listen: "127.0.0.1:0".into(),
            nvme_listen: Some("127.0.0.1:0".into()),
            workers: 2,
            ..DeviceConfig::default()
        };
        c.engine.memtable_bytes = 4 << 20;
        c.engine.cache_bytes = 4 << 20;
        c.nvme.require_host_auth = false;
        c.nvme.icreq_timeout_ms = 1000;
        for host in [OPEN_HOST, AUTH_HOST] {
            c.nvme.hosts.insert(host.into(), vec!["*".into()]);
        }
        c.nvme.host_secrets.insert(AUTH_HOST.into(), host_secret());
        c.nvme.ctrl_secrets.insert(AUTH_HOST.into(), ctrl_secret());
        // A harness that cannot start its device has nothing to fuzz: fail loudly.
        let dev = Device::start(c).expect("the fuzzed device starts");
        let addr = dev.nvme_addr().expect("its NVMe/TCP target is on");
        let nsid = dev
            .engine()
            .create_namespace("kv")
            .expect("namespace kv")
            .id();
        Target {
            dev: Some(dev),
            dir,
            addr,
            nsid,
            checks: 0,
        }
    }

    /// Panics unless a fresh host connects a controller and an I/O queue, stores a value
    /// and reads it back.
    fn assert_serves(&mut self) {
        self.checks += 1;
        let key = format!("alive-{}", self.checks);
        let value = format!("value of {key}").repeat(3);
        let served = (|| -> Result<(), String> {
            let mut admin = Wire::open(self.addr).map_err(|e| e.to_string())?;
            admin.handshake()?;
            let cntlid = admin.connect(0, 0xFFFF, OPEN_HOST)?;
            admin.enable()?;
            let mut io = Wire::open(self.addr).map_err(|e| e.to_string())?;
            io.handshake()?;
            io.connect(1, cntlid, OPEN_HOST)?;
            io.store_and_retrieve(self.nsid, key.as_bytes(), value.as_bytes())
        })();
        if let Err(why) = served {
            panic!("after the session the device no longer serves a legitimate host: {why}");
        }
    }
}

/// Runs one session of `data` against the device (started on the first call) and checks
/// that it still serves a legitimate host. True when the session got a queue connected.
pub fn nvme_session(data: &[u8]) -> bool {
    let mut target = TARGET.lock();
    let t = target.get_or_insert_with(Target::start);
    let connected = super::nvme_ops::run(t.addr, t.nsid, data);
    t.assert_serves();
    connected
}

/// Stops the device the sessions ran against and removes its data directory (a test calls
/// it when done; the fuzzer's process just exits).
pub fn nvme_session_stop() {
    if let Some(mut t) = TARGET.lock().take() {
        if let Some(dev) = t.dev.take() {
            let _ = dev.shutdown();
        }
        let _ = std::fs::remove_dir_all(&t.dir);
    }
}

/// Seeds for the target: openings of each kind followed by the ops of a normal session
/// (see `nvme_ops` for the op bytes).
pub fn nvme_session_seeds() -> Vec<Vec<u8>> {
    super::nvme_seeds::seeds()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check after each session can fail: it passes on the running device, and panics
    /// once the device has stopped.
    #[test]
    fn the_liveness_check_fails_on_a_stopped_device() {
        let mut t = Target::start();
        t.assert_serves();
        if let Some(dev) = t.dev.take() {
            let _ = dev.shutdown();
        }
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.assert_serves()));
        let _ = std::fs::remove_dir_all(&t.dir);
        assert!(
            checked.is_err(),
            "a stopped device passed the liveness check"
        );
    }
}
