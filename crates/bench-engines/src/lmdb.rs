//! LMDB, the embedded engine's read peer (`--engine lmdb`, cargo feature `lmdb`), through the
//! `heed` crate, which compiles LMDB's own C source (bundled in `lmdb-master-sys`). One
//! environment in the run's directory, its map 64 GiB of address space (the file grows with
//! the data only). Without `--sync` the environment is opened `NO_SYNC` (a commit writes
//! through the map's pages, nothing is fsynced: as Cerberus without `--sync`); with it, every
//! commit is synced. Each put is a write transaction of its own (`--pipeline`: one per
//! batch), each get a read transaction of its own, so a get sees every put before it.
//!
//! Tenants: per_namespace, a named database per tenant; shared and baseline, the unnamed
//! database with the tenant's index before (shared) or after (baseline) the key.

use crate::config::OpenConfig;
use crate::db::{read_value, with_tenant_key, BenchDb, LayoutArg, TenantHandle};
use crate::error::{Doing, EngineError, Result};
use crate::op::Op;
use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions};
use parking_lot::RwLock;
use std::collections::HashMap;

type Db = Database<Bytes, Bytes>;

/// Address space of the map: more than any run here writes.
const MAP_SIZE: usize = 64 << 30;

pub struct LmdbDb {
    env: Env,
    /// The unnamed database: the single-tenant workloads, and the shared layouts' tenants.
    main: Db,
    /// Tenants' named databases by tenant index (per_namespace).
    tenants: RwLock<HashMap<u32, Db>>,
    /// Named databases the environment has room for (`OpenConfig::tenants`, at least 1).
    max_dbs: u32,
    layout: LayoutArg,
}

impl LmdbDb {
    pub fn open(config: &OpenConfig) -> Result<LmdbDb> {
        let mut options = EnvOpenOptions::new();
        // Named databases: as many as the run's tenants, no more. Every transaction, a get's
        // too, allocates and zeroes room for this many databases (at 4,096 that memset was
        // more than half of a get's time).
        let max_dbs = u32::try_from(config.tenants.max(1)).map_err(EngineError::TooManyTenants)?;
        options
            .map_size(MAP_SIZE)
            .max_dbs(max_dbs)
            .max_readers(1024);
        if !config.sync {
            // SAFETY: NO_SYNC only gives up durability at a crash, which the run does not need
            // (it is what Cerberus without --sync gives up too).
            unsafe { options.flags(EnvFlags::NO_SYNC) };
        }
        // SAFETY: the directory is the run's own, opened once by this process.
        let env = unsafe { options.open(&config.path) }.doing(Op::Open {
            path: config.path.clone(),
        })?;
        let mut wtxn = env.write_txn().doing(Op::WriteTxn)?;
        let main: Db = env
            .create_database(&mut wtxn, None)
            .doing(Op::CreateDatabase { name: None })?;
        wtxn.commit().doing(Op::Commit)?;
        Ok(LmdbDb {
            env,
            main,
            tenants: RwLock::new(HashMap::new()),
            max_dbs,
            layout: config.layout,
        })
    }

    fn put_in(&self, db: Db, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut wtxn = self.env.write_txn().doing(Op::WriteTxn)?;
        for (k, v) in pairs {
            db.put(&mut wtxn, k, v).doing(Op::Put)?;
        }
        wtxn.commit().doing(Op::Commit)
    }

    fn get_in(&self, db: Db, key: &[u8]) -> Result<bool> {
        let rtxn = self.env.read_txn().doing(Op::ReadTxn)?;
        Ok(read_value(db.get(&rtxn, key).doing(Op::Get)?))
    }

    fn tenant_db(&self, tenant: &TenantHandle) -> Result<Db> {
        self.tenants
            .read()
            .get(&tenant.id)
            .copied()
            .ok_or_else(|| EngineError::TenantNotCreated {
                engine: "lmdb",
                tenant: tenant.name.clone(),
            })
    }
}

impl BenchDb for LmdbDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_in(self.main, &[(key, value)])
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        self.get_in(self.main, key)
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        self.put_in(self.main, pairs)
    }

    /// Gets sent together: one read transaction.
    fn get_many(&self, keys: &[&[u8]]) -> Result<u64> {
        let rtxn = self.env.read_txn().doing(Op::ReadTxn)?;
        let mut found = 0;
        for k in keys {
            found += u64::from(read_value(self.main.get(&rtxn, k).doing(Op::Get)?));
        }
        Ok(found)
    }

    /// Writes the map's dirty pages and syncs (LMDB has no memtable).
    fn flush(&self) -> Result<()> {
        self.env.force_sync().doing(Op::Sync)
    }

    /// LMDB's B+tree has nothing to compact.
    fn compact(&self) -> Result<()> {
        Ok(())
    }

    fn stats_json(&self) -> serde_json::Value {
        let stat = self.env.read_txn().and_then(|rtxn| self.main.stat(&rtxn));
        let info = self.env.info();
        match stat {
            Ok(s) => serde_json::json!({
                "entries": s.entries,
                "depth": s.depth,
                "page_size": s.page_size,
                "branch_pages": s.branch_pages,
                "leaf_pages": s.leaf_pages,
                "overflow_pages": s.overflow_pages,
                "last_page_number": info.last_page_number,
                "map_size": info.map_size,
            }),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        }
    }

    fn close(&self) -> Result<()> {
        self.env.force_sync().doing(Op::Sync)
    }

    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        if n > self.max_dbs as usize {
            return Err(EngineError::TenantCount {
                engine: "lmdb",
                opened: self.max_dbs as usize,
                asked: n,
            });
        }
        let tenants: Vec<TenantHandle> = (0..n)
            .map(|index| TenantHandle {
                index,
                id: index as u32,
                name: TenantHandle::name_of(index),
            })
            .collect();
        if self.layout.affix().is_none() {
            let mut wtxn = self.env.write_txn().doing(Op::WriteTxn)?;
            let mut map = self.tenants.write();
            for t in &tenants {
                let db: Db = self.env.create_database(&mut wtxn, Some(&t.name)).doing(
                    Op::CreateDatabase {
                        name: Some(t.name.clone()),
                    },
                )?;
                map.insert(t.id, db);
            }
            wtxn.commit().doing(Op::Commit)?;
        }
        Ok(tenants)
    }

    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        match self.layout.affix() {
            None => self.put_in(self.tenant_db(tenant)?, &[(key, value)]),
            Some(a) => {
                with_tenant_key(a, tenant.id, key, |k| self.put_in(self.main, &[(k, value)]))
            }
        }
    }

    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        match self.layout.affix() {
            None => self.get_in(self.tenant_db(tenant)?, key),
            Some(a) => with_tenant_key(a, tenant.id, key, |k| self.get_in(self.main, k)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(path: &std::path::Path, layout: LayoutArg) -> OpenConfig {
        OpenConfig::at(path, layout)
    }

    #[test]
    fn puts_are_found_and_tenants_are_apart() {
        for layout in [
            LayoutArg::PerNamespace,
            LayoutArg::Shared,
            LayoutArg::Baseline,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut c = config(dir.path(), layout);
            c.tenants = 2;
            let db = LmdbDb::open(&c).unwrap();
            db.put(b"a", b"1").unwrap();
            db.put_many(&[(b"b", b"2"), (b"c", b"3")]).unwrap();
            assert!(db.get(b"a").unwrap());
            assert!(!db.get(b"z").unwrap());
            assert_eq!(db.get_many(&[b"b", b"c", b"d"]).unwrap(), 2);
            assert!(db.create_tenants(3).is_err());
            let t = db.create_tenants(2).unwrap();
            db.put_tenant(&t[0], b"k", b"v").unwrap();
            assert!(db.get_tenant(&t[0], b"k").unwrap());
            assert!(!db.get_tenant(&t[1], b"k").unwrap(), "{layout:?}");
            assert!(!db.get(b"k").unwrap(), "{layout:?}");
            db.flush().unwrap();
            // The unnamed database holds a, b, c and either the named databases' names or
            // the tenant's key.
            let entries = if layout == LayoutArg::PerNamespace {
                5
            } else {
                4
            };
            assert_eq!(db.stats_json()["entries"], entries, "{layout:?}");
            db.close().unwrap();
        }
    }
}
