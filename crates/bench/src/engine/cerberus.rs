//! The Cerberus engine.

use super::{BenchDb, LayoutArg, OpenConfig, StorageArg, TenantHandle};
use crate::report::db_stats_json;
use anyhow::{Context, Result};
use cerberus_engine::storage::NandConfig;
use cerberus_engine::{Db, DbStats, Layout, NamespaceStats, Options, StorageKind};

pub struct CerberusDb {
    db: Db,
}

impl CerberusDb {
    pub fn open(config: &OpenConfig) -> Result<CerberusDb> {
        let mut options = Options::default();
        if let Some(profile) = &config.profile {
            profile.apply(&mut options);
        }
        let options = Options {
            storage: match config.storage {
                StorageArg::Posix => StorageKind::Posix,
                StorageArg::Nand => StorageKind::Nand(NandConfig::default()),
            },
            layout: match config.layout {
                LayoutArg::PerNamespace => Layout::PerNamespace,
                LayoutArg::Shared => Layout::Shared,
            },
            cache_bytes: config.cache_bytes,
            sync: config.sync,
            ..options
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

    fn settle(&self) -> Result<()> {
        Ok(self.db.wait_for_compactions()?)
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

    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        let existing = self.db.list_namespaces();
        (0..n)
            .map(|index| {
                let name = TenantHandle::name_of(index);
                let id = match existing.iter().find(|ns| ns.name == name) {
                    Some(ns) => ns.nsid,
                    None => self
                        .db
                        .create_namespace(&name)
                        .with_context(|| format!("creating namespace {name}"))?,
                };
                Ok(TenantHandle { index, id, name })
            })
            .collect()
    }

    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_ns(tenant.id, key, value)?)
    }

    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        Ok(self.db.get_ns(tenant.id, key)?.is_some())
    }

    fn tenant_stats(&self, tenant: &TenantHandle) -> Result<Option<NamespaceStats>> {
        Ok(Some(self.db.namespace_stats(tenant.id)?))
    }
}
