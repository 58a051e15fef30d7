//! fjall (`--engine fjall,fjall-blob`, cargo feature `fjall`), the Rust LSM-tree closest to
//! Cerberus: a keyspace of partitions (its column families) sharing one journal, with
//! key-value separation. Configured as the RocksDB adapter is, for the same comparison:
//! `--cache-bytes` is the keyspace's cache (fjall's one cache of blocks and blobs, where
//! RocksDB's LRU block cache gets the same bytes); without `--sync` each write is handed to the
//! OS (fjall's default `PersistMode::Buffer`, as RocksDB's WAL without fsync), with it each
//! write is synced before it returns (`PersistMode::SyncData`: fdatasync, as RocksDB's synced
//! WAL); fjall's own defaults otherwise (lz4, a 10 bits/key bloom filter, leveled compaction)
//! unless `--profile` sets them.
//!
//! Tenants, three layouts as on RocksDB: `--layout per_namespace`, a partition per tenant, made
//! at open; `--layout shared`, the main partition, keys prefixed by the tenant index (4 bytes
//! big-endian); `--layout baseline`, the main partition, keys suffixed by it.
//!
//! `--engine fjall-blob` turns on fjall's key-value separation in every partition, configured
//! as Cerberus's value log (and as `rocksdb-blob`'s blob files): values of at least Cerberus's
//! `inline_value_threshold` bytes go to blob files of Cerberus's value-log segment size. fjall
//! compresses blobs as its tables (lz4), and collects their garbage only when asked, which the
//! bench does not do (RocksDB collects during compactions).

use crate::config::OpenConfig;
use crate::db::{
    read_value, with_tenant_key, BenchCursor, BenchDb, CursorOptions, LayoutArg, TenantHandle,
};
use crate::error::{Doing, EngineError, Result};
use crate::op::Op;
use crate::profile::SizeProfile;
use fjall::{
    Batch, Config, Keyspace, KvSeparationOptions, PartitionCreateOptions, PartitionHandle,
    PersistMode, Slice,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The partition of the single-tenant workloads and of the shared layouts' tenants.
const MAIN_PARTITION: &str = "main";

pub struct FjallDb {
    keyspace: Keyspace,
    main: PartitionHandle,
    /// Tenants' partitions by tenant index (`--layout per_namespace`).
    tenants: Vec<PartitionHandle>,
    /// Tenants the database was opened for (`OpenConfig::tenants`).
    tenant_count: usize,
    layout: LayoutArg,
    /// `Some(SyncData)` with `--sync`: each write synced before it returns.
    sync: Option<PersistMode>,
    /// The separation threshold when key-value separation is on.
    blob_threshold: Option<u32>,
}

/// Values of at least this many bytes go to blob files (`fjall-blob`): those Cerberus keeps
/// only in its value log, as `rocksdb-blob`'s `min_blob_size`.
fn blob_threshold() -> u32 {
    let bytes = cerberus_engine::Options::default().inline_value_threshold;
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// The options of each partition: the profile's sizes, and key-value separation.
fn partition_options(
    profile: Option<&SizeProfile>,
    memtable_bytes: u64,
    blob_files: bool,
) -> PartitionCreateOptions {
    let mut options = PartitionCreateOptions::default();
    if let Some(p) = profile {
        // fjall's L1 holds `l0_threshold` tables of `target_size` (no level-1 size of its own).
        let leveled = fjall::compaction::Leveled {
            l0_threshold: clamp_u8(p.l0_compaction_trigger as u64).max(1),
            target_size: clamp_u32(p.target_table_bytes).max(1),
            level_ratio: clamp_u8(p.level_size_ratio).max(2),
        };
        options = options
            .max_memtable_size(clamp_u32(memtable_bytes))
            .block_size(clamp_u32(p.block_size as u64).clamp(1 << 10, 512 << 10))
            .bloom_filter_bits(Some(clamp_u8(u64::from(p.filter_bits_per_key)).min(20)))
            .compaction_strategy(fjall::compaction::Strategy::Leveled(leveled));
    }
    if blob_files {
        let engine = cerberus_engine::Options::default();
        options = options.with_kv_separation(
            KvSeparationOptions::default()
                .separation_threshold(blob_threshold())
                .file_target_size(engine.vlog_segment_bytes),
        );
    }
    options
}

fn clamp_u8(n: u64) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

fn clamp_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl FjallDb {
    /// Opens fjall at `config.path`, with key-value separation if `blob_files` (`fjall-blob`).
    pub fn open(config: &OpenConfig, blob_files: bool) -> Result<FjallDb> {
        let per_partition = config.tenants > 0 && config.layout == LayoutArg::PerNamespace;
        let mut keyspace_config = Config::new(&config.path).cache_size(config.cache_bytes);
        let profile = config.profile.as_ref();
        let memtable_bytes = match profile {
            // A partition per tenant has a memtable each; the one shared partition gets the
            // memtable of all tenants, as Cerberus's shared memtable (and RocksDB's).
            Some(p) if per_partition => p.memtable_bytes_per_tenant,
            Some(p) => p.memtable_bytes,
            None => 0,
        };
        if let Some(p) = profile {
            // The keyspace's cap on all memtables (64 MiB by default) well above the
            // profile's, so that the profile's memtable sizes decide when to flush.
            keyspace_config =
                keyspace_config.max_write_buffer_size(p.memtable_bytes.max(64 << 20) * 2);
        }
        let keyspace = keyspace_config.open().doing(Op::Open {
            path: config.path.clone(),
        })?;
        let open = |name: &str, memtable: u64| {
            keyspace
                .open_partition(name, partition_options(profile, memtable, blob_files))
                .doing(Op::OpenPartition { name: name.into() })
        };
        let main_memtable = profile.map_or(0, |p| p.memtable_bytes);
        let main = open(MAIN_PARTITION, main_memtable)?;
        let tenants = if per_partition {
            (0..config.tenants)
                .map(|i| open(&TenantHandle::name_of(i), memtable_bytes))
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        Ok(FjallDb {
            keyspace,
            main,
            tenants,
            tenant_count: config.tenants,
            layout: config.layout,
            sync: config.sync.then_some(PersistMode::SyncData),
            blob_threshold: blob_files.then(blob_threshold),
        })
    }

    /// Every partition: the main one, then the tenants'.
    fn partitions(&self) -> impl Iterator<Item = &PartitionHandle> {
        std::iter::once(&self.main).chain(&self.tenants)
    }

    fn put_in(&self, partition: &PartitionHandle, key: &[u8], value: &[u8]) -> Result<()> {
        partition.insert(key, value).doing(Op::Put)?;
        match self.sync {
            Some(mode) => self.keyspace.persist(mode).doing(Op::Sync),
            None => Ok(()),
        }
    }

    /// One fjall batch: one journal write (synced with `--sync`) for all of `pairs`.
    fn put_batch<'k>(
        &self,
        pairs: impl Iterator<Item = (&'k PartitionHandle, Slice, &'k [u8])>,
    ) -> Result<()> {
        let mut batch: Batch = self.keyspace.batch();
        if let Some(mode) = self.sync {
            batch = batch.durability(Some(mode));
        }
        for (partition, key, value) in pairs {
            batch.insert(partition, key, value);
        }
        batch.commit().doing(Op::PutMany)
    }

    fn get_in(&self, partition: &PartitionHandle, key: &[u8]) -> Result<bool> {
        Ok(read_value(partition.get(key).doing(Op::Get)?))
    }

    fn tenant_partition(&self, tenant: &TenantHandle) -> Result<&PartitionHandle> {
        self.tenants
            .get(tenant.index)
            .ok_or_else(|| EngineError::TenantNotCreated {
                engine: "fjall",
                tenant: tenant.name.clone(),
            })
    }
}

impl BenchDb for FjallDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_in(&self.main, key, value)
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        self.get_in(&self.main, key)
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        self.put_batch(pairs.iter().map(|(k, v)| (&self.main, Slice::from(*k), *v)))
    }

    /// Writes every partition's memtable out, waiting for the flushes.
    fn flush(&self) -> Result<()> {
        self.partitions()
            .try_for_each(|p| p.rotate_memtable_and_wait().doing(Op::Flush))
    }

    /// Compacts every partition's tree into its last level.
    fn compact(&self) -> Result<()> {
        self.partitions()
            .try_for_each(|p| p.major_compact().doing(Op::Compact))
    }

    /// Flushes, then waits until no compaction has run for a while (fjall tells how many
    /// run, not how many are due).
    fn settle(&self) -> Result<()> {
        self.flush()?;
        let deadline = Instant::now() + Duration::from_secs(600);
        let mut idle = 0;
        while idle < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            idle = if self.keyspace.active_compactions() == 0 {
                idle + 1
            } else {
                0
            };
        }
        Ok(())
    }

    fn stats_json(&self) -> Value {
        let partition = |p: &PartitionHandle| {
            json!({
                "approximate_len": p.approximate_len(),
                "disk_space": p.disk_space(),
                "segments": p.segment_count(),
                "blob_files": p.blob_file_count(),
            })
        };
        let mut doc = json!({
            "disk_space": self.keyspace.disk_space(),
            "journal_count": self.keyspace.journal_count(),
            "journal_disk_space": self.keyspace.journal_disk_space(),
            "write_buffer_size": self.keyspace.write_buffer_size(),
            "cache_capacity": self.keyspace.cache_capacity(),
            "flushes_completed": self.keyspace.flushes_completed(),
            "compactions_completed": self.keyspace.compactions_completed(),
            "active_compactions": self.keyspace.active_compactions(),
            "kv_separation": self.blob_threshold.is_some(),
            "separation_threshold": self.blob_threshold,
            "sync": self.sync.is_some(),
            "main": partition(&self.main),
        });
        if !self.tenants.is_empty() {
            let tenants: serde_json::Map<String, Value> = (self.tenants.iter().enumerate())
                .map(|(i, p)| (TenantHandle::name_of(i), partition(p)))
                .collect();
            doc["partitions"] = Value::Object(tenants);
        }
        doc
    }

    /// Syncs the journal (the memtables stay: the journal recovers them at the next open).
    fn close(&self) -> Result<()> {
        self.keyspace.persist(PersistMode::SyncAll).doing(Op::Close)
    }

    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        if n != self.tenant_count {
            return Err(EngineError::TenantCount {
                engine: "fjall",
                opened: self.tenant_count,
                asked: n,
            });
        }
        let id = |index: usize| u32::try_from(index).map_err(EngineError::TooManyTenants);
        (0..n)
            .map(|index| {
                Ok(TenantHandle {
                    index,
                    id: id(index)?,
                    name: TenantHandle::name_of(index),
                })
            })
            .collect()
    }

    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        match self.layout.affix() {
            None => self.put_in(self.tenant_partition(tenant)?, key, value),
            Some(a) => with_tenant_key(a, tenant.id, key, |k| self.put_in(&self.main, k, value)),
        }
    }

    fn put_many_tenant(&self, tenant: &TenantHandle, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        match self.layout.affix() {
            None => {
                let p = self.tenant_partition(tenant)?;
                self.put_batch(pairs.iter().map(|(k, v)| (p, Slice::from(*k), *v)))
            }
            Some(a) => self.put_batch(pairs.iter().map(|(k, v)| {
                let key = with_tenant_key(a, tenant.id, k, |k| Slice::from(k));
                (&self.main, key, *v)
            })),
        }
    }

    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        match self.layout.affix() {
            None => self.get_in(self.tenant_partition(tenant)?, key),
            Some(a) => with_tenant_key(a, tenant.id, key, |k| self.get_in(&self.main, k)),
        }
    }

    fn cursor(&self, opts: &CursorOptions) -> Result<Box<dyn BenchCursor + '_>> {
        Ok(Box::new(FjallCursor {
            partition: &self.main,
            range: None,
            entry: None,
            keys_only: opts.keys_only,
        }))
    }
}

/// The entries of a fjall range, from the key of the last seek on.
type Range = Box<dyn Iterator<Item = fjall::Result<fjall::KvPair>>>;

/// Seek and next over the main partition: each seek opens `range(key..)` at the partition as
/// it is then (fjall reads the value of each entry, blobs included, keys-only or not).
struct FjallCursor<'a> {
    partition: &'a PartitionHandle,
    range: Option<Range>,
    /// The entry `next` yielded last, kept for the borrow it hands out.
    entry: Option<fjall::KvPair>,
    keys_only: bool,
}

impl BenchCursor for FjallCursor<'_> {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.range = Some(Box::new(self.partition.range(key.to_vec()..)));
        self.entry = None;
        Ok(())
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        self.entry = match self.range.as_mut().and_then(Iterator::next) {
            Some(entry) => Some(entry.doing(Op::Next)?),
            None => None,
        };
        Ok(self.entry.as_ref().map(|(k, v)| {
            let v: &[u8] = if self.keys_only { &[] } else { v };
            (&k[..], v)
        }))
    }
}

#[cfg(test)]
#[path = "fjall_tests.rs"]
mod tests;
