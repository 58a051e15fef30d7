//! A cluster tenant as the key commands reach it (`--cluster FILE --tenant NAME`): each key
//! on the part its owner device holds (rendezvous hashing, as `cerberus cluster` and the
//! Python cluster client place it), listings and scans merged from every part in key order.
//! Writes are refused while a move of the tenant is recorded (its old parts are read-only
//! then; the move says when it has switched).

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use cerberus_host::cluster::{self, owner, ClusterDescription};
use cerberus_host::{BlockingNamespace, ScanOptions};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

/// A cluster tenant in place of `--ns` (the key commands only).
#[derive(clap::Args, Clone, Default)]
#[command(next_help_heading = "Cluster tenant")]
pub struct TenantArgs {
    /// A tenant of the cluster description --cluster names, in place of --ns: `put`,
    /// `get`, `delete`, `exists`, `list` and `scan` reach its parts on their devices.
    #[arg(long, env = "CERBERUS_TENANT", requires = "cluster")]
    pub tenant: Option<String>,
    /// The cluster description (as `cerberus cluster --file` writes it).
    #[arg(long, env = "CERBERUS_CLUSTER", value_name = "FILE")]
    pub cluster: Option<std::path::PathBuf>,
}

/// The parts of one tenant, opened with their credentials.
pub struct Tenant {
    name: String,
    devices: Vec<String>,
    parts: Vec<BlockingNamespace>,
    moving: Option<Vec<String>>,
}

impl Tenant {
    /// Opens every part of `name` in the description at `file`.
    pub fn open(file: &Path, name: &str) -> Result<Tenant> {
        let desc = ClusterDescription::load(file)
            .with_context(|| format!("reading the cluster description {}", file.display()))?;
        let base = cluster::base_dir(file);
        let t = desc.tenant(name)?;
        let mut parts = Vec::new();
        for d in &t.devices {
            let part = t
                .parts
                .get(d)
                .with_context(|| format!("tenant {name} has no part on device {d}"))?;
            parts.push(cluster::open_part(&desc, base, d, part)?);
        }
        if parts.is_empty() {
            bail!("tenant {name} is on no device");
        }
        Ok(Tenant {
            name: name.to_string(),
            devices: t.devices.clone(),
            parts,
            moving: t.moving_to.clone(),
        })
    }

    /// The part that holds `key`.
    pub fn part_of(&self, key: &[u8]) -> &BlockingNamespace {
        let i = owner(key, &self.devices).unwrap_or(0);
        &self.parts[i]
    }

    /// Every part, in the order of the tenant's devices.
    pub fn parts(&self) -> &[BlockingNamespace] {
        &self.parts
    }

    /// Fails while a move of the tenant is recorded: its writes would land in parts the
    /// move has fenced, or be lost with them.
    pub fn writable(&self) -> Result<()> {
        match &self.moving {
            Some(to) => bail!(
                "tenant {} is being moved to {} (`cerberus cluster reshard`): writes resume \
                 once the move has switched; reads are served meanwhile",
                self.name,
                to.join(",")
            ),
            None => Ok(()),
        }
    }

    /// The entries of every part matching `opts`, merged in key order.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Merged> {
        let mut streams = Vec::new();
        for p in &self.parts {
            streams.push(p.scan(opts.clone())?);
        }
        Merged::new(streams)
    }
}

type Entry = (Bytes, Bytes);
type Stream = cerberus_host::Scan;

/// A k-way merge of the parts' scans (each in key order; a key lives on one part only).
pub struct Merged {
    streams: Vec<Stream>,
    heads: BinaryHeap<Reverse<(Bytes, usize)>>,
    values: Vec<Option<Bytes>>,
}

impl Merged {
    fn new(mut streams: Vec<Stream>) -> Result<Merged> {
        let mut heads = BinaryHeap::new();
        let mut values = vec![None; streams.len()];
        for (i, s) in streams.iter_mut().enumerate() {
            if let Some(e) = s.next() {
                let (k, v) = e?;
                heads.push(Reverse((k, i)));
                values[i] = Some(v);
            }
        }
        Ok(Merged {
            streams,
            heads,
            values,
        })
    }
}

impl Iterator for Merged {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        let Reverse((k, i)) = self.heads.pop()?;
        let v = self.values[i].take().unwrap_or_default();
        match self.streams[i].next() {
            Some(Ok((nk, nv))) => {
                self.heads.push(Reverse((nk, i)));
                self.values[i] = Some(nv);
            }
            Some(Err(e)) => return Some(Err(e.into())),
            None => {}
        }
        Some(Ok((k, v)))
    }
}
