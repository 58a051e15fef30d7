//! A client that makes and destroys namespaces all through a seed, on the seed's wire. Each
//! cycle creates one with shares of its own, writes to it through a tenant connection,
//! opens an iterator on it, destroys it, and then goes on with the old proof and the old
//! iterator: each answer is an error or the namespace's own data, never another's. After
//! the seed nothing of a destroyed namespace is left in the device: no metrics series (a
//! command on an old proof once made its series and its share tags again) and no dedup
//! index.

use crate::rng::Rng;
use crate::wire::{host_secret, Wire, HOSTNQN, SUBNQN};
use cerberus_device::DeviceHandle;
use cerberus_host::{BlockingClient, ClientConfig, NamespaceSettings, ScanOptions};

/// Namespaces made and destroyed a seed.
const CYCLES: u32 = 12;

fn connect(dev: &DeviceHandle, wire: Wire) -> Result<BlockingClient, String> {
    let config = match wire {
        Wire::Native => ClientConfig::new(dev.local_addr().to_string()),
        Wire::Nvme => {
            let addr = dev.nvme_addr().ok_or("the NVMe/TCP target is off")?;
            ClientConfig::new(addr.to_string())
                .with_nvme(SUBNQN, HOSTNQN)
                .with_nvme_secret(host_secret())
        }
    };
    BlockingClient::connect_with(config).map_err(|e| format!("churn: connect: {e}"))
}

/// The cycles; the ids of the namespaces destroyed.
pub fn run(dev: &DeviceHandle, wire: Wire, seed: u64) -> Result<Vec<u32>, String> {
    let admin = connect(dev, wire)?;
    admin
        .authenticate_admin(dev.admin_secret())
        .map_err(|e| format!("churn: admin: {e}"))?;
    let tenant = connect(dev, wire)?;
    let mut rng = Rng::new(seed ^ 0xc4a5);
    let mut destroyed = Vec::new();
    for i in 0..CYCLES {
        let fail = |what: &str, e: &dyn std::fmt::Display| format!("churn {i}: {what}: {e}");
        let settings = NamespaceSettings {
            weight: 1 + rng.below(8) as u32,
            ..NamespaceSettings::default()
        };
        let (nsid, secret) = admin
            .create_namespace_with(&format!("churn-{seed}-{i}"), &settings)
            .map_err(|e| fail("create", &e))?;
        let ns = tenant
            .open_namespace(nsid, &secret)
            .map_err(|e| fail("open", &e))?;
        let keys = 1 + rng.below(40);
        for k in 0..keys {
            let len = 1 + rng.below(4096);
            ns.put(format!("k{k:03}"), vec![(i as u8) ^ (k as u8); len])
                .map_err(|e| fail("put", &e))?;
        }
        let it = ns
            .iter_open(&ScanOptions::default())
            .map_err(|e| fail("iter open", &e))?;
        admin
            .destroy_namespace(nsid)
            .map_err(|e| fail("destroy", &e))?;
        destroyed.push(nsid);
        // The old proof: every answer an error now.
        if ns.get("k000").is_ok() {
            return Err(format!(
                "churn {i}: a get on destroyed namespace {nsid} answered"
            ));
        }
        if ns.put("late", "x").is_ok() {
            return Err(format!(
                "churn {i}: a put on destroyed namespace {nsid} answered"
            ));
        }
        // The old iterator: an error, or the snapshot's own entries.
        if let Ok((page, _)) = ns.iter_next(it, 64, 1 << 20) {
            for (k, v) in page {
                let k: u64 = std::str::from_utf8(&k[1..])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| format!("churn {i}: a key not of this namespace: {k:?}"))?;
                if k >= keys as u64 || v.iter().any(|&b| b != (i as u8) ^ (k as u8)) {
                    return Err(format!("churn {i}: the old iterator gave another entry"));
                }
            }
        }
        let _ = ns.iter_close(it);
    }
    Ok(destroyed)
}

/// Nothing of the `destroyed` namespaces is left in the device.
pub fn check_gone(dev: &DeviceHandle, destroyed: &[u32]) -> Result<(), String> {
    let text = dev.metrics_text();
    if let Some(line) = text.lines().find(|l| {
        destroyed
            .iter()
            .any(|n| l.contains(&format!("nsid=\"{n}\"")))
    }) {
        return Err(format!("a destroyed namespace's series is left: {line}"));
    }
    if let Some(d) = dev.dedup_stats() {
        if let Some(n) = destroyed.iter().find(|n| d.namespaces.contains_key(n)) {
            return Err(format!("destroyed namespace {n}'s dedup index is left"));
        }
    }
    Ok(())
}
