//! A client beside the C workers that pipelines queries the device answers on its network
//! thread, 64 at a time on one connection, each answer checked within a deadline (session
//! 87: such a connection held its thread for a read's worth of frames on the native port
//! and for as long as it sent on NVMe/TCP). How often it gives its thread away is checked
//! exactly, per connection, by `crates/device/tests/end_to_end/inline_queries.rs`: here the
//! device-wide count of turns mixes in the workers' connections.

use crate::wire::{host_secret, Wire, HOSTNQN, SUBNQN};
use cerberus_device::DeviceHandle;
use cerberus_host::{Client, ClientConfig, IndexKind, WriteBatch};
use serde_json::json;

/// Records of the pipeliner's namespace, the queries of a round, and the rounds of a seed
/// (more would take the workers' CPU and stretch the run).
const RECORDS: u32 = 600;
const PIPELINED: usize = 64;
const ROUNDS: usize = 4;
/// A round's answers come within this, or the run fails (the device is local and idle
/// otherwise but for the workers).
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// The pipeliner's connection settings on `wire`.
fn config(dev: &DeviceHandle, wire: Wire) -> ClientConfig {
    match wire {
        Wire::Native => ClientConfig::new(dev.local_addr().to_string()),
        Wire::Nvme => ClientConfig::new(dev.nvme_addr().expect("nvme").to_string())
            .with_nvme(SUBNQN, HOSTNQN)
            .with_nvme_secret(host_secret()),
    }
}

/// Pipelines `ROUNDS` rounds of queries while the workers run; the queries answered.
pub fn run(dev: &DeviceHandle, wire: Wire, seed: u64) -> Result<u64, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (config, admin) = (config(dev, wire), dev.admin_secret().to_string());
    let queries = rt.block_on(async move {
        let c = Client::connect_with(config)
            .await
            .map_err(|e| e.to_string())?;
        c.authenticate_admin(&admin)
            .await
            .map_err(|e| e.to_string())?;
        let name = format!("pipeline-{seed}");
        let (ns, secret) = c.create_namespace(&name).await.map_err(|e| e.to_string())?;
        c.open_namespace(ns, &secret)
            .await
            .map_err(|e| e.to_string())?;
        let n = c.namespace(ns);
        n.create_index("color", IndexKind::Vas)
            .await
            .map_err(|e| e.to_string())?;
        let mut b = WriteBatch::new();
        for i in 0..RECORDS {
            let color = if i % 60 == 7 { "red" } else { "blue" };
            let v = json!({"n": i, "color": color}).to_string();
            b.put(format!("p{i:04}").into_bytes(), v.into_bytes());
        }
        n.write(b).await.map_err(|e| e.to_string())?;
        let red = json!({"op": "find", "filter": {"color": "red"}, "keys_only": true});
        let mut answered = 0u64;
        for _ in 0..ROUNDS {
            let round: Vec<_> = (0..PIPELINED)
                .map(|_| {
                    let (c, red) = (c.clone(), red.clone());
                    tokio::spawn(async move { c.namespace(ns).query(&red).await })
                })
                .collect();
            for t in round {
                // A reply lost on the device would hang the run: it fails it instead.
                let reply = tokio::time::timeout(ANSWER_WITHIN, t)
                    .await
                    .map_err(|_| format!("pipelined query: no answer within {ANSWER_WITHIN:?}"))?
                    .map_err(|e| e.to_string())?;
                let got = reply.map_err(|e| format!("pipelined query: {e}"))?.records;
                if got.len() != (RECORDS / 60) as usize {
                    return Err(format!("pipelined query: {} records, not 10", got.len()));
                }
                answered += 1;
            }
        }
        Ok::<u64, String>(answered)
    })?;
    Ok(queries)
}
