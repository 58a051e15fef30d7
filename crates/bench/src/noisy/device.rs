//! What `noisy --device` adds to the engine mode: the device's configuration (shares on or
//! off, network threads), the victim's reservation, its `shares_served` per phase, and the
//! lower CPU priority of the neighbours' client threads.

use anyhow::{bail, Result};
use cerberus_bench_engines::{DeviceDb, TenantHandle};
use cerberus_device::DeviceConfig;
use cerberus_proto::NamespaceSettings;

/// `on` or `off` (`--shares`, `--neighbours-niced`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum OnOff {
    On,
    Off,
}

impl OnOff {
    pub(super) fn on(self) -> bool {
        self == OnOff::On
    }
}

/// The local device's settings for one run: shares on or off, `network_threads` loops that
/// sleep at once when idle (no polling: a polling thread would take a CPU from the clients),
/// the loops pinned to CPUs if `pin_cores` and at nice `network_nice`.
pub(super) fn configure(c: &mut DeviceConfig, shares: bool, args: &super::Args) {
    c.shares.enabled = shares;
    c.network_threads = args.network_threads;
    c.network_spin_us = 0;
    c.scheduler.pin_cores = args.pin_cores;
    c.scheduler.network_nice = args.network_nice;
}

/// Reserves `ops` operations per second for the victim (nothing if 0).
pub(super) fn reserve(db: &DeviceDb, victim: &TenantHandle, ops: u64) -> Result<()> {
    if ops == 0 {
        return Ok(());
    }
    let settings = NamespaceSettings {
        reservation_ops: ops,
        ..NamespaceSettings::default()
    };
    db.configure_tenant(victim, &settings)
}

/// Sets the calling thread's (alone, not the process's) nice value. A client on another
/// machine neither takes CPU from the device nor waits for it: on this one the neighbours'
/// client threads at 19 yield the CPU to the device's and the victim's threads, and the
/// victim's at a value below 0 (which needs root) gets it when its reply arrives.
pub(super) fn nice_this_thread(nice: i32) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take and return plain integers.
        let tid = unsafe { libc::gettid() };
        let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
        if r != 0 {
            bail!("setpriority {nice}: {}", std::io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    bail!("per-thread nice values need Linux ({nice})")
}
