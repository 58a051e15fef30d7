//! `--set flights --device local`: our side of the flights run through a device this process
//! starts on a loopback port. The load and the mutations go as batched-write commands of
//! 1,000 writes, the queries as query documents paged by continuation, so every record
//! crosses the wire as a host application would receive it.

use super::flights_query::{in_batches, FlightQuery, Kind, Out, WriteOp, ATTRS};
use anyhow::{Context, Result};
use cerberus_bench_engines::local_device::{self, LocalDevice};
use cerberus_device::DeviceHandle;
use cerberus_engine::IndexKind;
use cerberus_host::{BlockingNamespace, WriteBatch};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// A local device (its defaults, files under the run's directory) with one namespace and its
/// 6 indexes, and a connection to the namespace.
pub struct DeviceSide {
    device: Option<DeviceHandle>,
    client: BlockingNamespace,
}

impl DeviceSide {
    /// Starts the device, creates the indexes, loads `records` (on the clock, to the engine's
    /// flush as the embedded side), then, if `settle`, waits for the compactions off it.
    pub fn load(
        dir: &Path,
        records: &[(Vec<u8>, Vec<u8>)],
        kind: IndexKind,
        settle: bool,
    ) -> Result<(DeviceSide, f64)> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
        let dev = LocalDevice::start(local_device::config(dir))?;
        let (ns, secret) = dev.create_namespace("flights")?;
        let client = local_device::client(&dev.addr, ns, &secret)?;
        let side = DeviceSide {
            device: Some(dev.device),
            client,
        };
        let t = Instant::now();
        let kind = match kind {
            IndexKind::Vas => cerberus_host::IndexKind::Vas,
            IndexKind::Classic => cerberus_host::IndexKind::Classic,
        };
        for a in ATTRS {
            side.client.create_index(a, kind)?;
        }
        side.write(records.iter().map(|(k, v)| (k, Some(v))))?;
        side.engine()?.flush()?;
        let secs = t.elapsed().as_secs_f64();
        if settle {
            side.engine()?.wait_for_compactions()?;
        }
        Ok((side, secs))
    }

    fn engine(&self) -> Result<&cerberus_engine::Db> {
        Ok(self
            .device
            .as_ref()
            .context("the device is stopped")?
            .engine())
    }

    /// Puts (`Some`) and deletes (`None`) in batched-write commands of 1,000.
    pub fn write<'a>(&self, ops: impl Iterator<Item = WriteOp<'a>>) -> Result<()> {
        in_batches(ops, |chunk| {
            let mut batch = WriteBatch::new();
            for (k, v) in chunk {
                match v {
                    Some(v) => batch.put(k.to_vec(), v.to_vec()),
                    None => batch.delete(k.to_vec()),
                };
            }
            Ok(self.client.write(batch)?)
        })
    }

    /// One run of `q`: a find fetched page by page, a top-K's keys, an aggregate's value.
    pub fn run(&self, q: &FlightQuery) -> Result<Out> {
        let filter = &q.filter;
        Ok(match &q.kind {
            Kind::Find { keys_only } => {
                let mut doc = json!({"op": "find", "filter": filter, "keys_only": keys_only});
                let mut rows = Vec::new();
                loop {
                    let mut page = self.client.query(&doc)?;
                    let next = page.continuation().map(str::to_string);
                    rows.append(&mut page.records);
                    match next {
                        Some(c) => doc["continuation"] = Value::String(c),
                        None => break,
                    }
                }
                Out::Rows(rows)
            }
            Kind::Top { by, k } => {
                let doc = json!({"op": "top", "filter": filter, "by": by, "desc": true, "k": k});
                let reply = self.client.query(&doc)?;
                Out::Ranked(reply.records.into_iter().map(|(pk, _)| pk).collect())
            }
            Kind::Agg { op, attr } => {
                let doc = json!({"op": "aggregate", "filter": filter, "fn": op, "attr": attr});
                let mut reply = self.client.query(&doc)?;
                Out::Value(reply.summary["value"].take())
            }
        })
    }

    pub fn close(mut self) -> Result<()> {
        if let Some(d) = self.device.take() {
            d.shutdown()?;
        }
        Ok(())
    }
}
