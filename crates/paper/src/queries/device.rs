//! `cerberus-paper queries --device local`: the same runs through a device this process starts
//! on a loopback port (same storage and cache), so every result crosses the wire as the
//! paper's transfers to the host do; bytes returned are the records and summaries received.

use super::workload::{Query, RunStats, Shape};
use anyhow::Result;
use bytes::Bytes;
use cerberus_bench_engines::local_device::{self, LocalDevice};
use cerberus_device::{DeviceHandle, StorageChoice};
use cerberus_engine::{AttrPath, Filter, Scalar};
use cerberus_host::{BlockingNamespace, IndexKind, ScanOptions};
use serde_json::{json, Value};
use std::path::Path;

/// A local device with one namespace, and the namespace on a connection authenticated for
/// it.
pub struct Target {
    device: Option<DeviceHandle>,
    client: BlockingNamespace,
    ns: u32,
    addr: String,
    secret: String,
}

impl Target {
    pub fn start(dir: &Path, nand: bool, cache_bytes: u64) -> Result<Target> {
        let mut c = local_device::config(dir);
        if nand {
            c.storage = StorageChoice::Nand;
        }
        c.engine.cache_bytes = cache_bytes;
        let dev = LocalDevice::start(c)?;
        let (ns, secret) = dev.create_namespace("data")?;
        let client = local_device::client(&dev.addr, ns, &secret)?;
        Ok(Target {
            device: Some(dev.device),
            client,
            ns,
            addr: dev.addr,
            secret,
        })
    }

    pub fn create_index(&self, attr: &str, vas: bool) -> Result<()> {
        Ok(self.client.create_index(
            attr,
            if vas {
                IndexKind::Vas
            } else {
                IndexKind::Classic
            },
        )?)
    }

    /// Flushes what was loaded, as the embedded runs do at the end of their load.
    pub fn flush(&self) -> Result<()> {
        if let Some(d) = &self.device {
            d.engine().flush()?;
        }
        Ok(())
    }

    /// Waits for the compactions the load started, as the embedded runs do before their
    /// queries (else a run's queries share the flash with its compactions).
    pub fn settle(&self) -> Result<()> {
        if let Some(d) = &self.device {
            d.engine().wait_for_compactions()?;
        }
        Ok(())
    }

    /// Puts `records` through `connections` connections at once, each its contiguous share
    /// in order.
    pub fn load(&self, records: &[(Vec<u8>, Vec<u8>)], connections: usize) -> Result<()> {
        let connections = connections.max(1);
        if connections == 1 {
            for (k, v) in records {
                self.client.put(k.clone(), v.clone())?;
            }
            return Ok(());
        }
        let share = records.len().div_ceil(connections).max(1);
        std::thread::scope(|scope| {
            let loaders: Vec<_> = records
                .chunks(share)
                .map(|part| {
                    scope.spawn(move || -> Result<()> {
                        let c = local_device::client(&self.addr, self.ns, &self.secret)?;
                        for (k, v) in part {
                            c.put(k.clone(), v.clone())?;
                        }
                        Ok(())
                    })
                })
                .collect();
            loaders.into_iter().try_for_each(|l| {
                l.join()
                    .map_err(|_| anyhow::anyhow!("a loading thread panicked"))?
            })
        })
    }

    /// Runs `q`: how many results, the engine's statistics (summed over pages), and the
    /// bytes received.
    pub fn run(&self, q: &Query) -> Result<(usize, RunStats, u64)> {
        let filter = &q.filter;
        let mut doc = match &q.shape {
            Shape::Pks { limit } => {
                let attr = filter
                    .as_object()
                    .and_then(|o| o.keys().next().cloned())
                    .unwrap_or_default();
                json!({"op": "get_by_secondary", "attr": attr, "value": q.sk, "limit": limit})
            }
            Shape::Find { project, limit } => {
                json!({"op": "find", "filter": filter, "project": project, "limit": limit})
            }
            Shape::Top { by, k } => {
                json!({"op": "top", "filter": filter, "by": by, "desc": true, "k": k})
            }
            Shape::Avg { attr } => {
                json!({"op": "aggregate", "filter": filter, "fn": "avg", "attr": attr})
            }
        };
        let (mut n, mut bytes, mut stats) = (0, 0u64, Value::Null);
        loop {
            let reply = match self.client.query(&doc) {
                Ok(r) => r,
                // Without an index, Q1/Q4's pks come from a find of the attribute alone.
                Err(cerberus_host::Error::IndexNotFound(_)) => {
                    let attr = doc["attr"].clone();
                    doc = json!({"op": "find", "filter": filter, "project": [attr],
                                 "limit": doc["limit"]});
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            n += reply.records.len();
            bytes += reply.summary.to_string().len() as u64
                + reply
                    .records
                    .iter()
                    .map(|(k, v)| (k.len() + v.len()) as u64)
                    .sum::<u64>();
            let page = reply.stats().cloned().unwrap_or(Value::Null);
            if stats.is_null() {
                stats = page;
            } else {
                super::workload::add_stats(&mut stats, &page);
            }
            match reply.continuation() {
                Some(c) => doc["continuation"] = Value::String(c.to_string()),
                None => break,
            }
        }
        // An aggregate's answer is its summary, not records: one result, as embedded.
        if matches!(q.shape, Shape::Avg { .. }) {
            n = 1;
        }
        Ok((n, RunStats::Json(stats), bytes))
    }

    /// Runs `q` as the KVSSD baseline does without an index: the host reads the namespace's
    /// records in key order through the device's iterator and filters, sorts and averages
    /// them itself (stopping once a limit is met); bytes are every record received.
    pub fn run_on_host(&self, q: &Query, filter: &Filter) -> Result<(usize, RunStats, u64)> {
        let mut scan = self.client.scan(ScanOptions::default())?;
        let (mut examined, mut bytes) = (0u64, 0u64);
        let mut found: Vec<(Bytes, Value)> = Vec::new();
        let limit = match &q.shape {
            Shape::Pks { limit } => limit.map(|l| l as u64),
            Shape::Find { limit, .. } => *limit,
            Shape::Top { .. } | Shape::Avg { .. } => None,
        };
        while limit.is_none_or(|l| (found.len() as u64) < l) {
            let Some(entry) = scan.next() else { break };
            let (k, v) = entry?;
            examined += 1;
            bytes += (k.len() + v.len()) as u64;
            let Ok(doc) = serde_json::from_slice::<Value>(&v) else {
                continue;
            };
            if filter.matches(&doc) {
                found.push((k, doc));
            }
        }
        let n = match &q.shape {
            Shape::Pks { .. } => found.len(),
            Shape::Find { project, .. } => {
                if let Some(p) = project {
                    let paths = p
                        .iter()
                        .map(|a| AttrPath::parse(a).map_err(anyhow::Error::msg))
                        .collect::<Result<Vec<_>>>()?;
                    for (_, doc) in &mut found {
                        let mut out = serde_json::Map::new();
                        for path in &paths {
                            if let Some(v) = path.lookup(doc) {
                                out.insert(path.to_string(), v.clone());
                            }
                        }
                        *doc = Value::Object(out);
                    }
                }
                found.len()
            }
            Shape::Top { by, k } => {
                let path = AttrPath::parse(by).map_err(anyhow::Error::msg)?;
                let mut ranked: Vec<(Scalar, &Bytes)> = found
                    .iter()
                    .filter_map(|(k, d)| path.scalar(d).map(|s| (s, k)))
                    .collect();
                // Largest first, ties by pk, as the device ranks.
                ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
                ranked.truncate(*k);
                ranked.len()
            }
            Shape::Avg { attr } => {
                let path = AttrPath::parse(attr).map_err(anyhow::Error::msg)?;
                let numbers: Vec<f64> = found
                    .iter()
                    .filter_map(|(_, d)| path.lookup(d).and_then(Value::as_f64))
                    .collect();
                std::hint::black_box(numbers.iter().sum::<f64>() / numbers.len().max(1) as f64);
                1
            }
        };
        let stats = json!({"plan": "host: the device's iterator, then filtered on the host",
                           "records_examined": examined, "bytes_returned": bytes});
        Ok((n, RunStats::Json(stats), bytes))
    }

    pub fn stop(mut self) -> Result<()> {
        if let Some(d) = self.device.take() {
            d.shutdown()?;
        }
        Ok(())
    }
}
