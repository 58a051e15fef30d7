//! What `noisy --device` adds to the engine mode: the device's configuration (shares on or
//! off, network threads), the victim's reservation, its `shares_served` per phase, and the
//! lower CPU priority of the neighbours' client threads.

use super::args::Args;
use anyhow::{bail, Result};
use cerberus_bench_engines::{DeviceDb, TenantHandle};
use cerberus_device::DeviceConfig;
use cerberus_proto::NamespaceSettings;

/// The local device's settings for one run: shares on or off, `network_threads` loops that
/// sleep at once when idle (no polling: a polling thread would take a CPU from the clients),
/// the loops pinned to CPUs if `pin_cores` and at nice `network_nice`.
pub(super) fn configure(c: &mut DeviceConfig, shares: bool, args: &Args) {
    c.shares.enabled = shares;
    c.network_threads = args.network_threads;
    c.network_spin_us = 0;
    if let Some(n) = args.frames_per_turn {
        c.network_frames_per_turn = n;
    }
    c.scheduler.pin_cores = args.pin_cores;
    c.scheduler.network_nice = args.network_nice;
    c.scheduler.background_nice = args.background_nice;
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
    Ok(db.configure_tenant(victim, &settings)?)
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

/// While held, the calling thread runs on the last CPU it may use only (its mask restored on
/// drop, so threads it spawns later are not confined). With `--pin-cores` the device's cores
/// start at the first CPU: the clients on the last model clients on machines of their own,
/// which neither take a CPU from the device nor wait behind its work.
pub(super) struct OnLastCpu {
    #[cfg(target_os = "linux")]
    saved: Option<libc::cpu_set_t>,
}

impl OnLastCpu {
    pub(super) fn pin(on: bool) -> Result<OnLastCpu> {
        #[cfg(target_os = "linux")]
        {
            if !on {
                return Ok(OnLastCpu { saved: None });
            }
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: cpu_set_t is plain data; the calls get its size and a pointer to it.
            unsafe {
                let mut saved: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(0, size, &mut saved) != 0 {
                    bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
                }
                let Some(last) = (0..libc::CPU_SETSIZE as usize)
                    .rev()
                    .find(|&c| libc::CPU_ISSET(c, &saved))
                else {
                    bail!("no CPU to pin a client to");
                };
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(last, &mut one);
                if libc::sched_setaffinity(0, size, &one) != 0 {
                    bail!("sched_setaffinity: {}", std::io::Error::last_os_error());
                }
                Ok(OnLastCpu { saved: Some(saved) })
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            if on {
                bail!("pinning clients needs Linux");
            }
            Ok(OnLastCpu {})
        }
    }
}

impl Drop for OnLastCpu {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(saved) = &self.saved {
            // SAFETY: as in `pin`; restoring a mask this thread had.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), saved);
            }
        }
    }
}
