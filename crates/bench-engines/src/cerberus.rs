//! The Cerberus engine.

use crate::config::{OpenConfig, StorageArg};
use crate::db::{
    db_stats_json, read_value, tenants_in_namespaces, with_tenant_key, Affix, BenchCursor, BenchDb,
    CursorOptions, LayoutArg, TenantHandle,
};
use crate::error::{Doing, EngineError, Result};
use crate::op::Op;
use cerberus_engine::storage::NandConfig;
use cerberus_engine::Readable;
use cerberus_engine::{
    Db, DbStats, GetPath, Iter, Layout, Namespace, NamespaceStats, Options, ReadOptions,
    StorageKind,
};
use parking_lot::RwLock;
use std::collections::HashMap;

pub struct CerberusDb {
    db: Db,
    /// The default namespace, for the single-tenant workloads.
    default: Namespace,
    /// Tenants' namespaces by id.
    tenants: RwLock<HashMap<u32, Namespace>>,
    layout: LayoutArg,
}

impl CerberusDb {
    /// Calls `f` with a tenant's namespace and its key as stored there (the baseline layout
    /// suffixes the tenant).
    fn in_tenant<R>(
        &self,
        tenant: &TenantHandle,
        key: &[u8],
        f: impl FnOnce(&Namespace, &[u8]) -> Result<R>,
    ) -> Result<R> {
        let tenants = self.tenants.read();
        let ns = namespace_of(&tenants, tenant)?;
        match self.layout {
            LayoutArg::Baseline => {
                with_tenant_key(Affix::Suffix, tenant.index as u32, key, |k| f(ns, k))
            }
            _ => f(ns, key),
        }
    }

    pub fn open(config: &OpenConfig) -> Result<CerberusDb> {
        let mut options = Options::default();
        if let Some(profile) = &config.profile {
            profile.apply(&mut options);
        }
        options.layout = match config.layout {
            LayoutArg::PerNamespace => Layout::PerNamespace,
            LayoutArg::Shared | LayoutArg::Baseline => Layout::Shared,
        };
        options.cache_bytes = config.cache_bytes;
        if let Some(b) = crate::config::row_cache_bytes() {
            options.row_cache_bytes = b;
        }
        options.mmap_reads = config.mmap_reads;
        options.time_get_steps = config.time_get_steps;
        options.sync = config.sync;
        let storage = match config.storage {
            StorageArg::Posix => StorageKind::Posix,
            StorageArg::Nand => StorageKind::Nand(NandConfig::default()),
        };
        let db = Db::builder(options)
            .storage(storage)
            .open(&config.path)
            .doing(Op::Open {
                path: config.path.clone(),
            })?;
        Ok(CerberusDb {
            default: db.default_namespace(),
            db,
            tenants: RwLock::new(HashMap::new()),
            layout: config.layout,
        })
    }
}

impl BenchDb for CerberusDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.default.put(key, value).doing(Op::Put)
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        Ok(read_value(self.default.get(key).doing(Op::Get)?))
    }

    /// The engine's batched get (`--pipeline`), in pieces of its bound.
    fn get_many(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut found = 0;
        for piece in keys.chunks(cerberus_engine::MAX_GET_MANY_KEYS) {
            let got = self.default.get_many(piece).doing(Op::GetMany)?;
            found += got.into_iter().filter(|v| read_value(v.as_ref())).count() as u64;
        }
        Ok(found)
    }

    fn flush(&self) -> Result<()> {
        self.db.flush().doing(Op::Flush)
    }

    fn compact(&self) -> Result<()> {
        self.db.compact_all().doing(Op::Compact)
    }

    fn settle(&self) -> Result<()> {
        self.db.wait_for_compactions().doing(Op::WaitForCompactions)
    }

    fn db_stats(&self) -> Option<DbStats> {
        Some(self.db.stats())
    }

    fn stats_json(&self) -> serde_json::Value {
        db_stats_json(&self.db.stats())
    }

    fn close(&self) -> Result<()> {
        self.db.close().doing(Op::Close)
    }

    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        let existing = self.db.list_namespaces();
        let namespace = |name: &str| -> Result<u32> {
            let ns = match existing.iter().find(|ns| ns.name == name) {
                Some(ns) => self
                    .db
                    .namespace(ns.nsid)
                    .doing(Op::FindNamespace { nsid: ns.nsid })?,
                None => self
                    .db
                    .create_namespace(name)
                    .doing(Op::CreateNamespace { name: name.into() })?,
            };
            let id = ns.id();
            self.tenants.write().insert(id, ns);
            Ok(id)
        };
        tenants_in_namespaces(n, self.layout, namespace)
    }

    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        self.in_tenant(tenant, key, |ns, k| ns.put(k, value).doing(Op::Put))
    }

    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        self.in_tenant(tenant, key, |ns, k| {
            Ok(read_value(ns.get(k).doing(Op::Get)?))
        })
    }

    fn tenant_get_path(&self, tenant: &TenantHandle, key: &[u8]) -> Result<Option<GetPath>> {
        self.in_tenant(tenant, key, |ns, k| {
            Ok(Some(ns.get_path(k).doing(Op::GetPath)?))
        })
    }

    /// In the baseline layout every tenant gets its one namespace's counters.
    fn tenant_stats(&self, tenant: &TenantHandle) -> Result<Option<NamespaceStats>> {
        let stats = namespace_of(&self.tenants.read(), tenant)?
            .stats()
            .doing(Op::NamespaceStats)?;
        Ok(Some(stats))
    }

    fn cursor(&self, opts: &CursorOptions) -> Result<Box<dyn BenchCursor + '_>> {
        let iter = self
            .default
            .iter(ReadOptions {
                keys_only: opts.keys_only,
                prefetch_degree: opts.prefetch_degree,
                index_prefetch: opts.index_prefetch,
                ..ReadOptions::default()
            })
            .doing(Op::Iterate)?;
        Ok(Box::new(CerberusCursor {
            iter,
            scan_length: if opts.whole_scan { opts.scan_length } else { 0 },
            batch: Vec::new(),
            at: 0,
        }))
    }
}

/// The `(key, value)` the engine's iterator yields (`Bytes` both; named through the iterator
/// so that this crate needs no `bytes` dependency of its own).
type Entry = <<Iter as Iterator>::Item as IntoIterator>::Item;

/// An engine iterator, and the entries it read in its last batch: after a seek, the scan's
/// length in one call when the caller times the scan whole (as YCSB's scan asks for its
/// count), else one at a time.
struct CerberusCursor {
    iter: Iter,
    /// Entries read at each seek (0: none, one at a time).
    scan_length: usize,
    batch: Vec<Entry>,
    /// The entry of `batch` the last `next` yielded, plus one.
    at: usize,
}

impl BenchCursor for CerberusCursor {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.batch.clear();
        self.at = 0;
        self.iter.seek(key).doing(Op::Seek)?;
        if self.scan_length > 1 {
            let max = self.scan_length;
            self.iter.next_batch(max, &mut self.batch).doing(Op::Next)?;
        }
        Ok(())
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.at >= self.batch.len() {
            self.batch.clear();
            self.at = 0;
            // One at a time, length not known: `next`, which reads values ahead.
            if let Some(e) = self.iter.next().transpose().doing(Op::Next)? {
                self.batch.push(e);
            }
        }
        self.at += 1;
        Ok(self.batch.get(self.at - 1).map(|(k, v)| (&k[..], &v[..])))
    }
}

fn namespace_of<'a>(
    tenants: &'a HashMap<u32, Namespace>,
    tenant: &TenantHandle,
) -> Result<&'a Namespace> {
    tenants
        .get(&tenant.id)
        .ok_or_else(|| EngineError::TenantNotCreated {
            engine: "cerberus",
            tenant: tenant.name.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::BASELINE_NAMESPACE;

    fn open(dir: &std::path::Path, layout: LayoutArg) -> CerberusDb {
        CerberusDb::open(&OpenConfig {
            cache_bytes: 1 << 20,
            tenants: 2,
            ..OpenConfig::at(dir, layout)
        })
        .unwrap()
    }

    /// The keys of a namespace, in order.
    fn all_keys(ns: &Namespace) -> Vec<Vec<u8>> {
        let opts = ReadOptions {
            keys_only: true,
            ..ReadOptions::default()
        };
        ns.iter(opts)
            .unwrap()
            .map(|e| e.unwrap().0.to_vec())
            .collect()
    }

    #[test]
    fn baseline_keys_interleave_in_one_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), LayoutArg::Baseline);
        let t = db.create_tenants(2).unwrap();
        assert_eq!(t[0].id, t[1].id);
        assert_eq!(t[1].name, "tenant-1");
        for (tenant, key) in [(1, b"k2"), (0, b"k2"), (1, b"k1"), (0, b"k1")] {
            db.put_tenant(&t[tenant], key, b"v").unwrap();
        }
        assert!(db.get_tenant(&t[1], b"k1").unwrap());
        assert!(!db.get_tenant(&t[0], b"k3").unwrap());
        let ns = &db.db.list_namespaces();
        assert!(ns
            .iter()
            .any(|n| n.name == BASELINE_NAMESPACE && n.nsid == t[0].id));
        assert!(!ns.iter().any(|n| n.name.starts_with("tenant-")));
        let keys = all_keys(&db.db.namespace(t[0].id).unwrap());
        let expected: [&[u8]; 4] = [
            b"k1\0\0\0\0",
            b"k1\0\0\0\x01",
            b"k2\0\0\0\0",
            b"k2\0\0\0\x01",
        ];
        assert_eq!(keys, expected);
        // The per-tenant counters are the one namespace's.
        let a = db.tenant_stats(&t[0]).unwrap().unwrap();
        let b = db.tenant_stats(&t[1]).unwrap().unwrap();
        assert_eq!((a.puts, b.puts), (4, 4));
        db.close().unwrap();
    }

    #[test]
    fn other_layouts_have_a_namespace_per_tenant() {
        for layout in [LayoutArg::PerNamespace, LayoutArg::Shared] {
            let dir = tempfile::tempdir().unwrap();
            let db = open(dir.path(), layout);
            let t = db.create_tenants(2).unwrap();
            assert_ne!(t[0].id, t[1].id);
            db.put_tenant(&t[0], b"k", b"v").unwrap();
            assert!(!db.get_tenant(&t[1], b"k").unwrap());
            let ns = db.db.namespace(t[0].id).unwrap();
            assert_eq!(all_keys(&ns), vec![b"k".to_vec()]);
            db.close().unwrap();
        }
    }
}
