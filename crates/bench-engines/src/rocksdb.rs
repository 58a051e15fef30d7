//! RocksDB (feature `rocksdb`), configured for a fair comparison with Cerberus: WAL on, no
//! fsync per write unless `--sync`, `--cache-bytes` as the LRU block cache, a 10 bits/key
//! bloom filter; every other option is RocksDB's default unless `--profile` sets it.
//!
//! Tenants (`multitenant`), three layouts: `--layout per_namespace`, one column family per
//! tenant, created at open; `--layout shared`, the default column family, keys prefixed by the
//! tenant index (4 bytes big-endian); `--layout baseline`, the default column family, keys
//! suffixed by the tenant index (shared suffix: tenants' keys interleave).
//!
//! `--engine rocksdb-blob` is the same with integrated blob files (BlobDB), configured as
//! Cerberus's value log: values of at least Cerberus's `inline_value_threshold` bytes go to
//! blob files (`min_blob_size`) of Cerberus's value-log segment size (`blob_file_size`),
//! uncompressed (RocksDB's default for blobs), with blob GC on during compactions (RocksDB's
//! default age cutoff, the oldest 25 % of blob files).

use crate::config::OpenConfig;
use crate::db::{
    read_value, with_tenant_key, Affix, BenchCursor, BenchDb, CursorOptions, LayoutArg,
    TenantHandle,
};
use crate::error::{Doing, EngineError, Result};
use crate::op::Op;
use crate::profile::SizeProfile;
use serde_json::{json, Map, Value};

pub struct RocksDb {
    db: ::rocksdb::DB,
    write_options: ::rocksdb::WriteOptions,
    /// Kept alive with the database that uses it.
    _cache: ::rocksdb::Cache,
    cache_bytes: u64,
    tenants: usize,
    layout: LayoutArg,
    /// `min_blob_size` when blob files are on.
    blob_min_size: Option<u64>,
}

/// Values of at least this many bytes go to blob files (`rocksdb-blob`): those Cerberus keeps
/// only in its value log (shorter ones it also stores inline in its tables).
pub fn blob_min_size() -> u64 {
    cerberus_engine::Options::default().inline_value_threshold as u64
}

/// Turns on integrated blob files, sized as Cerberus's value log.
fn apply_blob_files(options: &mut ::rocksdb::Options) {
    let engine = cerberus_engine::Options::default();
    options.set_enable_blob_files(true);
    options.set_min_blob_size(blob_min_size());
    options.set_blob_file_size(engine.vlog_segment_bytes);
    options.set_enable_blob_gc(true);
}

/// All memtables' bytes without a profile: Cerberus's default memtable (shared by its
/// namespaces) and fjall's default cap on its keyspace's.
const DEFAULT_MEMTABLE_BYTES: usize = 64 << 20;

/// Sets the sizes of a profile; `write_buffer` is the memtable size of one column family.
fn apply_profile(
    p: &SizeProfile,
    write_buffer: u64,
    options: &mut ::rocksdb::Options,
    table: &mut ::rocksdb::BlockBasedOptions,
) {
    options.set_write_buffer_size(write_buffer as usize);
    options.set_max_bytes_for_level_base(p.level1_bytes);
    options.set_max_bytes_for_level_multiplier(p.level_size_ratio as f64);
    options.set_target_file_size_base(p.target_table_bytes);
    options.set_level_zero_file_num_compaction_trigger(p.l0_compaction_trigger as i32);
    options.set_num_levels(p.num_levels as i32);
    table.set_block_size(p.block_size);
}

impl RocksDb {
    /// Opens RocksDB at `config.path`, with blob files if `blob_files` (`rocksdb-blob`).
    pub fn open(config: &OpenConfig, blob_files: bool) -> Result<RocksDb> {
        let cache =
            ::rocksdb::Cache::new_lru_cache(config.cache_bytes as usize).doing(Op::CreateCache)?;
        let per_cf = config.tenants > 0 && config.layout == LayoutArg::PerNamespace;
        let mut table = ::rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&cache);
        let mut options = ::rocksdb::Options::default();
        options.create_if_missing(true);
        let mut bloom_bits = 10.0;
        if let Some(p) = &config.profile {
            // Per-tenant column families each have a write buffer; one shared column family
            // gets the memtable of all tenants, as Cerberus's shared memtable.
            let write_buffer = if per_cf {
                p.memtable_bytes_per_tenant
            } else {
                p.memtable_bytes
            };
            apply_profile(p, write_buffer, &mut options, &mut table);
            bloom_bits = f64::from(p.filter_bits_per_key);
        } else if per_cf {
            // Without a profile every column family has RocksDB's 64 MiB write buffer: 8
            // tenants would hold 512 MiB of memtables where Cerberus's shared memtable and
            // fjall's keyspace hold 64 MiB in all. The same cap on all of them here.
            options.set_db_write_buffer_size(DEFAULT_MEMTABLE_BYTES);
        }
        table.set_bloom_filter(bloom_bits, false);
        options.set_block_based_table_factory(&table);
        if blob_files {
            apply_blob_files(&mut options);
        }
        let db = if per_cf {
            // Every existing column family must be opened; add the tenants' if missing.
            let mut names = ::rocksdb::DB::list_cf(&options, &config.path).unwrap_or_default();
            for name in std::iter::once(::rocksdb::DEFAULT_COLUMN_FAMILY_NAME.to_string())
                .chain((0..config.tenants).map(TenantHandle::name_of))
            {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            options.create_missing_column_families(true);
            let cfs = names
                .iter()
                .map(|n| ::rocksdb::ColumnFamilyDescriptor::new(n, options.clone()));
            ::rocksdb::DB::open_cf_descriptors(&options, &config.path, cfs)
        } else {
            ::rocksdb::DB::open(&options, &config.path)
        }
        .doing(Op::Open {
            path: config.path.clone(),
        })?;
        let mut write_options = ::rocksdb::WriteOptions::default();
        write_options.set_sync(config.sync);
        write_options.disable_wal(false);
        Ok(RocksDb {
            db,
            write_options,
            _cache: cache,
            cache_bytes: config.cache_bytes,
            tenants: config.tenants,
            layout: config.layout,
            blob_min_size: blob_files.then(blob_min_size),
        })
    }

    fn int_property(&self, name: &str) -> Option<u64> {
        self.db.property_int_value(name).ok().flatten()
    }

    /// Files per level of a column family (the default one for `None`).
    fn levels_json(&self, cf: Option<&::rocksdb::ColumnFamily>) -> Value {
        let mut levels = Vec::new();
        for level in 0..7 {
            let name = format!("rocksdb.num-files-at-level{level}");
            let value = match cf {
                Some(cf) => self.db.property_value_cf(cf, &name),
                None => self.db.property_value(&name),
            };
            let files = value
                .ok()
                .flatten()
                .and_then(|s| s.trim().parse::<u64>().ok());
            levels.push(json!({ "level": level, "tables": files }));
        }
        Value::Array(levels)
    }

    fn cf(&self, tenant: &TenantHandle) -> Result<&::rocksdb::ColumnFamily> {
        match self.db.cf_handle(&tenant.name) {
            Some(cf) => Ok(cf),
            None => Err(EngineError::TenantNotCreated {
                engine: "rocksdb",
                tenant: tenant.name.clone(),
            }),
        }
    }
}

impl BenchDb for RocksDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db
            .put_opt(key, value, &self.write_options)
            .doing(Op::Put)
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        Ok(read_value(self.db.get_pinned(key).doing(Op::Get)?))
    }

    fn flush(&self) -> Result<()> {
        self.db.flush().doing(Op::Flush)
    }

    fn compact(&self) -> Result<()> {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        let names: Vec<String> = (0..self.tenants)
            .map(TenantHandle::name_of)
            .chain(std::iter::once(
                ::rocksdb::DEFAULT_COLUMN_FAMILY_NAME.to_string(),
            ))
            .collect();
        let cfs: Vec<_> = names.iter().filter_map(|n| self.db.cf_handle(n)).collect();
        for cf in &cfs {
            self.db.flush_cf(cf).doing(Op::Flush)?;
        }
        // Done when no column family has a compaction pending or running.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
        loop {
            let busy = self
                .int_property("rocksdb.num-running-compactions")
                .unwrap_or(0)
                > 0
                || cfs.iter().any(|cf| {
                    self.db
                        .property_int_value_cf(cf, "rocksdb.compaction-pending")
                        .ok()
                        .flatten()
                        .unwrap_or(0)
                        > 0
                });
            if !busy || std::time::Instant::now() > deadline {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn stats_json(&self) -> Value {
        let mut props = Map::new();
        for name in [
            "rocksdb.estimate-num-keys",
            "rocksdb.total-sst-files-size",
            "rocksdb.live-sst-files-size",
            "rocksdb.estimate-live-data-size",
            "rocksdb.cur-size-all-mem-tables",
            "rocksdb.num-running-compactions",
            "rocksdb.estimate-pending-compaction-bytes",
            "rocksdb.block-cache-usage",
            "rocksdb.num-blob-files",
            "rocksdb.total-blob-file-size",
            "rocksdb.live-blob-file-size",
        ] {
            let key = name.trim_start_matches("rocksdb.").replace('-', "_");
            props.insert(key, json!(self.int_property(name)));
        }
        props.insert("levels".into(), self.levels_json(None));
        props.insert("block_cache_capacity".into(), json!(self.cache_bytes));
        props.insert("blob_files".into(), json!(self.blob_min_size.is_some()));
        props.insert("min_blob_size".into(), json!(self.blob_min_size));
        if self.tenants > 0 && self.layout == LayoutArg::PerNamespace {
            // The levels above are the default column family's (empty here); each tenant's:
            let mut cfs = Map::new();
            for i in 0..self.tenants {
                let name = TenantHandle::name_of(i);
                if let Some(cf) = self.db.cf_handle(&name) {
                    let int = |p: &str| self.db.property_int_value_cf(cf, p).ok().flatten();
                    cfs.insert(
                        name,
                        json!({
                            "estimate_num_keys": int("rocksdb.estimate-num-keys"),
                            "total_sst_files_size": int("rocksdb.total-sst-files-size"),
                            "levels": self.levels_json(Some(cf)),
                        }),
                    );
                }
            }
            props.insert("column_families".into(), Value::Object(cfs));
        }
        Value::Object(props)
    }

    fn close(&self) -> Result<()> {
        self.db.flush_wal(true).doing(Op::Close)?;
        Ok(())
    }

    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        if n != self.tenants {
            return Err(EngineError::TenantCount {
                engine: "rocksdb",
                opened: self.tenants,
                asked: n,
            });
        }
        let handles: Vec<TenantHandle> = (0..n)
            .map(|index| TenantHandle {
                index,
                id: index as u32,
                name: TenantHandle::name_of(index),
            })
            .collect();
        if self.layout == LayoutArg::PerNamespace {
            for t in &handles {
                self.cf(t)?;
            }
        }
        Ok(handles)
    }

    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        match shared_affix(self.layout) {
            None => self
                .db
                .put_cf_opt(self.cf(tenant)?, key, value, &self.write_options)
                .doing(Op::Put),
            Some(affix) => with_tenant_key(affix, tenant.id, key, |k| {
                self.db
                    .put_opt(k, value, &self.write_options)
                    .doing(Op::Put)
            }),
        }
    }

    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        match shared_affix(self.layout) {
            None => {
                let value = self
                    .db
                    .get_pinned_cf(self.cf(tenant)?, key)
                    .doing(Op::Get)?;
                Ok(read_value(value))
            }
            Some(affix) => with_tenant_key(affix, tenant.id, key, |k| {
                Ok(read_value(self.db.get_pinned(k).doing(Op::Get)?))
            }),
        }
    }

    fn cursor(&self, opts: &CursorOptions) -> Result<Box<dyn BenchCursor + '_>> {
        let mut read = ::rocksdb::ReadOptions::default();
        if opts.readahead_bytes > 0 {
            read.set_readahead_size(opts.readahead_bytes);
        }
        Ok(Box::new(RocksCursor {
            iter: self.db.raw_iterator_opt(read),
            started: false,
            keys_only: opts.keys_only,
        }))
    }
}

/// A raw iterator with default read options (and `--readahead-bytes`), as db_bench's
/// seekrandom.
struct RocksCursor<'a> {
    iter: ::rocksdb::DBRawIterator<'a>,
    /// An entry was yielded since the last seek: the next `next` moves on first.
    started: bool,
    keys_only: bool,
}

impl BenchCursor for RocksCursor<'_> {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.iter.seek(key);
        self.started = false;
        Ok(())
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.started && self.iter.valid() {
            self.iter.next();
        }
        self.started = true;
        match self.iter.item() {
            Some((k, v)) => Ok(Some((k, if self.keys_only { &[] } else { v }))),
            None => {
                self.iter.status().doing(Op::Next)?;
                Ok(None)
            }
        }
    }
}

/// Where the tenant index goes in the default column family; `None`: a column family per
/// tenant.
fn shared_affix(layout: LayoutArg) -> Option<Affix> {
    match layout {
        LayoutArg::PerNamespace => None,
        LayoutArg::Shared => Some(Affix::Prefix),
        LayoutArg::Baseline => Some(Affix::Suffix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_layouts_place_the_tenant_index() {
        assert_eq!(shared_affix(LayoutArg::PerNamespace), None);
        assert_eq!(shared_affix(LayoutArg::Shared), Some(Affix::Prefix));
        assert_eq!(shared_affix(LayoutArg::Baseline), Some(Affix::Suffix));
    }
}
