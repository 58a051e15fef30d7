//! The Cerberus engine.

use super::{BenchDb, OpenConfig, StorageArg};
use crate::report::db_stats_json;
use anyhow::{Context, Result};
use cerberus_engine::storage::NandConfig;
use cerberus_engine::{Db, DbStats, Options, StorageKind};

pub struct CerberusDb {
    db: Db,
}

impl CerberusDb {
    pub fn open(config: &OpenConfig) -> Result<CerberusDb> {
        let options = Options {
            storage: match config.storage {
                StorageArg::Posix => StorageKind::Posix,
                StorageArg::Nand => StorageKind::Nand(NandConfig::default()),
            },
            cache_bytes: config.cache_bytes,
            sync: config.sync,
            ..Options::default()
        };
        let db = Db::open(&config.path, options)
            .with_context(|| format!("opening cerberus at {}", config.path.display()))?;
        Ok(CerberusDb { db })
    }
}

impl BenchDb for CerberusDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        Ok(self.db.get(key)?.is_some())
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> Result<()> {
        Ok(self.db.compact_all()?)
    }

    fn db_stats(&self) -> Option<DbStats> {
        Some(self.db.stats())
    }

    fn stats_json(&self) -> serde_json::Value {
        db_stats_json(&self.db.stats())
    }

    fn close(&self) -> Result<()> {
        Ok(self.db.close()?)
    }
}
