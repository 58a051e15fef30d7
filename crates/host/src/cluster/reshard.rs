//! Moving a tenant to other devices by copy (`docs/cluster.md`, "Moving a tenant").
//!
//! The move fills a new generation of namespaces while the old ones stay authoritative:
//! 1. create `{tenant}.g{N+1}` on the new devices, record them as `moving_to` /
//!    `moving_parts` and save the description (cluster clients that load it now refuse
//!    writes and read the old parts); then make every old part read-only on its device
//!    (the fence: from here the devices refuse every write to them, whoever sends it);
//! 2. create the old parts' secondary indexes on the new parts, then scan every old part in
//!    key order and put each record into its owner among the new devices, in batches;
//! 3. verify: the old parts, scanned again, and the new parts hold the same records (count,
//!    bytes and an order-independent digest) as the copy read, and every new part lists
//!    every index;
//! 4. switch the description to the new placement, save it, destroy the old namespaces.
//!
//! A failure before the switch destroys the new namespaces (and only the credential files
//! this move created), makes the old parts writable again and clears `moving_*`: the old
//! placement stays as it was. Writes during the move: from step 1 cluster clients refuse
//! them, and the devices refuse every other writer's (`NamespaceReadOnly`), so no write is
//! acknowledged between the copy and the switch; one acknowledged before the fence is in
//! the old parts before the copy reads them (`docs/cluster.md`).

use super::admin::{
    client, connect_all, create_parts, destroy_part, open_part_on, set_part_read_only, Clients,
};
use super::description::{base_dir, ClusterDescription, Part, TenantPlacement};
use super::error::ClusterError;
use super::move_indexes;
use super::placement::owner;
use crate::blocking_namespace::BlockingNamespace;
use crate::scan_options::ScanOptions;
use crate::write_batch::WriteBatch;
use bytes::Bytes;
use cerberus_proto::MAX_BATCH_WRITES;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// What a completed move copied.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveReport {
    /// Records copied.
    pub records: u64,
    /// Bytes of their keys and values.
    pub bytes: u64,
    /// Their [`Digest`] sum (old and new placement agreed on it).
    pub digest: u64,
    /// How long the move took, from the first connection to the old namespaces' destruction.
    pub seconds: f64,
}

/// Records, bytes and an order-independent digest of a set of records: the wrapping sum over
/// the records of `xxh3_64(len(key) as u64 LE || key || value)`, so parts read in any order
/// and split in any way give the same sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    /// Records.
    pub records: u64,
    /// Bytes of their keys and values.
    pub bytes: u64,
    /// The digest.
    pub sum: u64,
}

impl Digest {
    /// Adds one record.
    pub fn add(&mut self, key: &[u8], value: &[u8], buf: &mut Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(&(key.len() as u64).to_le_bytes());
        buf.extend_from_slice(key);
        buf.extend_from_slice(value);
        self.records += 1;
        self.bytes += (key.len() + value.len()) as u64;
        self.sum = self.sum.wrapping_add(xxhash_rust::xxh3::xxh3_64(buf));
    }

    /// Adds the records of `other`.
    pub fn merge(&mut self, other: Digest) {
        self.records += other.records;
        self.bytes += other.bytes;
        self.sum = self.sum.wrapping_add(other.sum);
    }

    /// The digest of every record of `ns` (one scan, at one snapshot).
    pub fn of_namespace(ns: &BlockingNamespace) -> crate::error::Result<Digest> {
        let mut d = Digest::default();
        let mut buf = Vec::new();
        for rec in ns.scan(ScanOptions::default())? {
            let (k, v) = rec?;
            d.add(&k, &v, &mut buf);
        }
        Ok(d)
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} records, {} bytes, digest {:016x}",
            self.records, self.bytes, self.sum
        )
    }
}

/// Moves tenant `tenant` of the description at `desc_path` to `new_devices`, `batch` records
/// a put batch (at most 16,384); see the module's documentation for the steps and what
/// happens to writes meanwhile.
pub fn reshard(
    desc_path: &Path,
    tenant: &str,
    new_devices: &[String],
    batch: usize,
) -> Result<MoveReport, ClusterError> {
    reshard_with_hook(desc_path, tenant, new_devices, batch, &mut || Ok(()))
}

/// [`reshard`], calling `before_switch` once the copy is verified, just before the switch:
/// where a write to the old parts would be lost with them. For tests; an error from it
/// fails the move there.
#[doc(hidden)]
pub fn reshard_with_hook(
    desc_path: &Path,
    tenant: &str,
    new_devices: &[String],
    batch: usize,
    before_switch: &mut dyn FnMut() -> Result<(), ClusterError>,
) -> Result<MoveReport, ClusterError> {
    let start = Instant::now();
    let base = base_dir(desc_path);
    let desc = ClusterDescription::load(desc_path)?;
    let old = desc.tenant(tenant)?.clone();
    if let Some(to) = &old.moving_to {
        return Err(ClusterError::Refused(format!(
            "tenant {tenant}: a move to {} is recorded (under way, or interrupted: \
             `cerberus cluster reshard {tenant} --abort` ends it)",
            to.join(",")
        )));
    }
    desc.check_devices(tenant, "the new devices", new_devices)?;
    let mut same = new_devices.to_vec();
    same.sort();
    let mut current = old.devices.clone();
    current.sort();
    if same == current {
        return Err(ClusterError::Refused(format!(
            "tenant {tenant} is on {} already",
            new_devices.join(",")
        )));
    }
    let generation = old.generation.checked_add(1).ok_or_else(|| {
        ClusterError::Refused(format!(
            "tenant {tenant}: no generation after {}",
            old.generation
        ))
    })?;
    let batch = batch.clamp(1, MAX_BATCH_WRITES);
    let clients = connect_all(&desc, base, old.devices.iter().chain(new_devices))?;
    let new_parts = create_parts(&clients, base, tenant, generation, new_devices)?;

    let mut moving = desc.clone();
    if let Some(t) = moving.tenants.get_mut(tenant) {
        t.moving_to = Some(new_devices.to_vec());
        t.moving_parts = new_parts.clone();
    }
    // Set once this move may have made old parts read-only: only then does undoing it make
    // them writable (a save refused because another move of the tenant was recorded
    // meanwhile must leave that move's fence alone).
    let mut fenced = false;
    let copied = moving
        .save(desc_path)
        .and_then(|()| {
            fenced = true;
            fence(&clients, &old.parts, true)
        })
        .and_then(|()| {
            copy_and_verify(&clients, base, tenant, &old, new_devices, &new_parts, batch)
        })
        .and_then(|copied| {
            before_switch()?;
            switch(desc_path, tenant, &new_parts, |t| {
                t.devices = new_devices.to_vec();
                t.parts = new_parts.clone();
                t.generation = generation;
            })?;
            Ok(copied)
        });
    let copied = match copied {
        Ok(c) => c,
        Err(e) => {
            let mut left = abandon(desc_path, &clients, base, tenant, &new_parts);
            if fenced {
                left.extend(unfence(&clients, &old.parts));
            }
            return Err(e.with_leftovers(left));
        }
    };
    // The new placement is authoritative from here: the old namespaces only go.
    let mut left = Vec::new();
    for (d, p) in &old.parts {
        if let Err(e) = destroy_part(&clients, base, d, p) {
            left.push(format!("namespace {} on device {d} ({e})", p.namespace));
        }
    }
    let report = MoveReport {
        records: copied.records,
        bytes: copied.bytes,
        digest: copied.sum,
        seconds: start.elapsed().as_secs_f64(),
    };
    if left.is_empty() {
        Ok(report)
    } else {
        Err(ClusterError::Refused(format!(
            "tenant {tenant} moved to {} ({copied}), but its old namespaces were not all \
             destroyed",
            new_devices.join(",")
        ))
        .with_leftovers(left))
    }
}

/// Ends a move that is recorded but no longer running (its process died): destroys the
/// namespaces it was filling, makes the old parts writable again and clears `moving_*`.
/// The old placement was never left.
pub fn abort_move(desc_path: &Path, tenant: &str) -> Result<(), ClusterError> {
    let base = base_dir(desc_path);
    let desc = ClusterDescription::load(desc_path)?;
    let t = desc.tenant(tenant)?;
    if t.moving_to.is_none() {
        return Err(ClusterError::Refused(format!(
            "tenant {tenant}: no move is recorded"
        )));
    }
    let clients = connect_all(&desc, base, t.moving_parts.keys().chain(t.parts.keys()))?;
    for (d, p) in &t.moving_parts {
        destroy_part(&clients, base, d, p)?;
    }
    // Before the record goes: a failure here leaves the move recorded, to abort again.
    fence(&clients, &t.parts, false)?;
    let parts = t.moving_parts.clone();
    switch(desc_path, tenant, &parts, |_| {})
}

/// Makes every part of `parts` read-only (`true`), or writable again, on its device.
fn fence(
    clients: &Clients,
    parts: &BTreeMap<String, Part>,
    read_only: bool,
) -> Result<(), ClusterError> {
    for (d, p) in parts {
        set_part_read_only(clients, d, p, read_only)?;
    }
    Ok(())
}

/// Makes the old `parts` of a move that failed writable again, each it can; those it could
/// not, named with what to do.
fn unfence(clients: &Clients, parts: &BTreeMap<String, Part>) -> Vec<String> {
    let mut left = Vec::new();
    for (d, p) in parts {
        if let Err(e) = set_part_read_only(clients, d, p, false) {
            left.push(format!(
                "namespace {} on device {d} is still read-only ({e}): `cerberus ns \
                 configure NSID --writable` on that device",
                p.namespace
            ));
        }
    }
    left
}

/// Under the description's lock, reloads it (others may have changed other tenants
/// meanwhile), checks that `tenant` still records the move to `new_parts`, applies
/// `change`, clears the move and saves.
fn switch(
    desc_path: &Path,
    tenant: &str,
    new_parts: &BTreeMap<String, Part>,
    change: impl FnOnce(&mut TenantPlacement),
) -> Result<(), ClusterError> {
    ClusterDescription::update(desc_path, |desc| {
        let t = recorded(desc, tenant, new_parts)?;
        change(t);
        t.moving_to = None;
        t.moving_parts.clear();
        Ok(())
    })
}

/// The placement of `tenant` in `desc` if it records the move to `new_parts`.
fn recorded<'a>(
    desc: &'a mut ClusterDescription,
    tenant: &str,
    new_parts: &BTreeMap<String, Part>,
) -> Result<&'a mut TenantPlacement, ClusterError> {
    desc.tenants
        .get_mut(tenant)
        .filter(|t| &t.moving_parts == new_parts)
        .ok_or_else(|| {
            ClusterError::Refused(format!(
                "tenant {tenant}: the description no longer records this move (changed by \
                 someone else meanwhile)"
            ))
        })
}

/// Undoes a move that failed before its switch: destroys the new namespaces and clears the
/// move from the description (if it still records it); what it could not undo, named. The
/// old parts and their credential files are not touched.
fn abandon(
    desc_path: &Path,
    clients: &Clients,
    base: &Path,
    tenant: &str,
    new_parts: &BTreeMap<String, Part>,
) -> Vec<String> {
    let mut left = Vec::new();
    for (d, p) in new_parts {
        if let Err(e) = destroy_part(clients, base, d, p) {
            left.push(format!("namespace {} on device {d} ({e})", p.namespace));
        }
    }
    let cleared = ClusterDescription::update(desc_path, |desc| {
        if let Ok(t) = recorded(desc, tenant, new_parts) {
            t.moving_to = None;
            t.moving_parts.clear();
        }
        Ok(())
    });
    if let Err(e) = cleared {
        left.push(format!("the record of the move in the description ({e})"));
    }
    left
}

/// Put batches on their way to one new part.
struct Target {
    device: String,
    ns: BlockingNamespace,
    batch: WriteBatch,
    bytes: usize,
    /// Most bytes of writes a batch carries (within the device's frame limit).
    max_bytes: usize,
}

impl Target {
    fn flush(&mut self) -> Result<(), ClusterError> {
        let batch = std::mem::take(&mut self.batch);
        self.bytes = 0;
        self.ns.write(batch).map_err(ClusterError::device(
            &self.device,
            "writing a batch of the move",
        ))
    }
}

/// Copies every record of the old parts to its owner among the new ones, then checks both
/// hold what the copy read; the digest of what it copied.
fn copy_and_verify(
    clients: &Clients,
    base: &Path,
    tenant: &str,
    old: &TenantPlacement,
    new_devices: &[String],
    new_parts: &BTreeMap<String, Part>,
    batch: usize,
) -> Result<Digest, ClusterError> {
    let mut sources = Vec::new();
    for (d, p) in &old.parts {
        sources.push((d.clone(), open_part_on(client(clients, d)?, base, d, p)?));
    }
    let indexes = move_indexes::of_parts(&sources)?;
    let mut targets = Vec::new();
    for d in new_devices {
        let c = client(clients, d)?;
        let part = new_parts
            .get(d)
            .ok_or_else(|| ClusterError::Refused(format!("no new part on device {d}")))?;
        // 5 bytes of kind and lengths per write, and room for the frame's own header.
        let frame = c
            .device_info()
            .map_or(1 << 20, |i| i.max_frame_body as usize);
        let ns = open_part_on(c, base, d, part)?;
        move_indexes::create_on(d, &ns, &indexes)?;
        targets.push(Target {
            device: d.clone(),
            ns,
            batch: WriteBatch::new(),
            bytes: 0,
            max_bytes: frame.saturating_sub(1024).max(1),
        });
    }
    let mut copied = Digest::default();
    let mut buf = Vec::new();
    for (d, src) in &sources {
        let scan = src
            .scan(ScanOptions::default())
            .map_err(ClusterError::device(d, "scanning the old part"))?;
        for rec in scan {
            let (k, v) = rec.map_err(ClusterError::device(d, "scanning the old part"))?;
            copied.add(&k, &v, &mut buf);
            put(&mut targets, new_devices, k, v, batch)?;
        }
    }
    for t in &mut targets {
        if !t.batch.is_empty() {
            t.flush()?;
        }
    }
    verify(tenant, &sources, &targets, new_devices, copied)?;
    for t in &targets {
        move_indexes::check_on(&t.device, &t.ns, &indexes).map_err(|message| {
            ClusterError::Verify {
                tenant: tenant.to_string(),
                message,
            }
        })?;
    }
    Ok(copied)
}

/// Queues `(key, value)` for its owner among the new devices, sending a batch when full.
fn put(
    targets: &mut [Target],
    new_devices: &[String],
    key: Bytes,
    value: Bytes,
    batch: usize,
) -> Result<(), ClusterError> {
    let i = owner(&key, new_devices)
        .ok_or_else(|| ClusterError::Refused("no device to move to".into()))?;
    let t = &mut targets[i];
    let size = key.len() + value.len() + 8;
    if !t.batch.is_empty() && t.bytes + size > t.max_bytes {
        t.flush()?;
    }
    t.bytes += size;
    t.batch.put(key, value);
    if t.batch.len() >= batch {
        t.flush()?;
    }
    Ok(())
}

/// The old parts, read again, and the new parts hold what the copy read, and every new
/// part holds only keys it owns.
fn verify(
    tenant: &str,
    sources: &[(String, BlockingNamespace)],
    targets: &[Target],
    new_devices: &[String],
    copied: Digest,
) -> Result<(), ClusterError> {
    let fail = |message: String| ClusterError::Verify {
        tenant: tenant.to_string(),
        message,
    };
    let mut old_now = Digest::default();
    for (d, src) in sources {
        old_now.merge(
            Digest::of_namespace(src).map_err(ClusterError::device(d, "scanning the old part"))?,
        );
    }
    if old_now != copied {
        return Err(fail(format!(
            "the old parts changed during the copy ({copied}, then {old_now}): a writer kept \
             writing; stop writers and move again"
        )));
    }
    let mut new = Digest::default();
    let mut buf = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let scan =
            t.ns.scan(ScanOptions::default())
                .map_err(ClusterError::device(&t.device, "scanning the new part"))?;
        for rec in scan {
            let (k, v) = rec.map_err(ClusterError::device(&t.device, "scanning the new part"))?;
            if owner(&k, new_devices) != Some(i) {
                return Err(fail(format!(
                    "key {:?} is on device {}, which does not own it",
                    String::from_utf8_lossy(&k),
                    t.device
                )));
            }
            new.add(&k, &v, &mut buf);
        }
    }
    if new != copied {
        return Err(fail(format!("old parts {copied}, new parts {new}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Digest;

    #[test]
    fn digests_ignore_order_and_split() {
        let recs: Vec<(String, String)> = (0..100)
            .map(|i| (format!("k{i}"), format!("v{i}")))
            .collect();
        let mut buf = Vec::new();
        let mut all = Digest::default();
        for (k, v) in &recs {
            all.add(k.as_bytes(), v.as_bytes(), &mut buf);
        }
        let (mut a, mut b) = (Digest::default(), Digest::default());
        for (i, (k, v)) in recs.iter().rev().enumerate() {
            let d = if i % 3 == 0 { &mut a } else { &mut b };
            d.add(k.as_bytes(), v.as_bytes(), &mut buf);
        }
        a.merge(b);
        assert_eq!(a, all);
        assert_eq!(all.records, 100);
        // The key's length is in the hash: ("ab", "c") is not ("a", "bc").
        let (mut x, mut y) = (Digest::default(), Digest::default());
        x.add(b"ab", b"c", &mut buf);
        y.add(b"a", b"bc", &mut buf);
        assert_ne!(x.sum, y.sum);
    }
}
