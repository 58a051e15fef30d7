//! RocksDB (feature `rocksdb`), configured for a fair comparison with Cerberus: WAL on, no
//! fsync per write unless `--sync`, `--cache-bytes` as the LRU block cache, a 10 bits/key
//! bloom filter; every other option is RocksDB's default.

use super::{BenchDb, OpenConfig};
use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

pub struct RocksDb {
    db: ::rocksdb::DB,
    write_options: ::rocksdb::WriteOptions,
    /// Kept alive with the database that uses it.
    _cache: ::rocksdb::Cache,
    cache_bytes: u64,
}

impl RocksDb {
    pub fn open(config: &OpenConfig) -> Result<RocksDb> {
        let cache = ::rocksdb::Cache::new_lru_cache(config.cache_bytes as usize)
            .context("creating the RocksDB block cache")?;
        let mut table = ::rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(10.0, false);
        let mut options = ::rocksdb::Options::default();
        options.create_if_missing(true);
        options.set_block_based_table_factory(&table);
        let db = ::rocksdb::DB::open(&options, &config.path)
            .with_context(|| format!("opening rocksdb at {}", config.path.display()))?;
        let mut write_options = ::rocksdb::WriteOptions::default();
        write_options.set_sync(config.sync);
        write_options.disable_wal(false);
        Ok(RocksDb {
            db,
            write_options,
            _cache: cache,
            cache_bytes: config.cache_bytes,
        })
    }

    fn int_property(&self, name: &str) -> Option<u64> {
        self.db.property_int_value(name).ok().flatten()
    }
}

impl BenchDb for RocksDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.write_options)?)
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        Ok(self.db.get_pinned(key)?.is_some())
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> Result<()> {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn stats_json(&self) -> Value {
        let mut levels = Vec::new();
        for level in 0..7 {
            let files = self
                .db
                .property_value(&format!("rocksdb.num-files-at-level{level}"))
                .ok()
                .flatten()
                .and_then(|s| s.trim().parse::<u64>().ok());
            levels.push(json!({ "level": level, "tables": files }));
        }
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
        ] {
            let key = name.trim_start_matches("rocksdb.").replace('-', "_");
            props.insert(key, json!(self.int_property(name)));
        }
        props.insert("levels".into(), Value::Array(levels));
        props.insert("block_cache_capacity".into(), json!(self.cache_bytes));
        Value::Object(props)
    }

    fn close(&self) -> Result<()> {
        self.db.flush_wal(true)?;
        Ok(())
    }
}
