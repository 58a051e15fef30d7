//! The trait every engine implements for the workloads, and how tenants share a database.

use crate::error::{EngineError, Result};
use cerberus_engine::{DbStats, GetPath, NamespaceStats};

/// All of `DbStats` as JSON, through its own `Serialize`, each level numbered (`level`) as
/// readers of the JSON index them.
pub fn db_stats_json(s: &DbStats) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or(serde_json::Value::Null);
    if let Some(levels) = v
        .get_mut("levels")
        .and_then(serde_json::Value::as_array_mut)
    {
        for (i, l) in levels.iter_mut().enumerate() {
            l["level"] = i.into();
        }
    }
    v
}

/// Whether a get found a value, having read every byte of it as the caller of a get does:
/// an engine that hands out a reference into its memory without touching the value (LMDB,
/// RocksDB's pinned slices) and one that has read it (to check its checksum, or off a
/// socket) then cost what a user who reads the value pays.
pub fn read_value(value: Option<impl AsRef<[u8]>>) -> bool {
    let Some(v) = value else {
        return false;
    };
    // Whole words as loads; a copy per word (as a tail takes) cost more than most gets.
    let words = v.as_ref().chunks_exact(8);
    let tail = words.remainder();
    let sum = words.fold(0u64, |s, c| {
        s.wrapping_add(u64::from_le_bytes(c.try_into().unwrap_or_default()))
    });
    let mut w = [0u8; 8];
    w[..tail.len()].copy_from_slice(tail);
    std::hint::black_box(sum.wrapping_add(u64::from_le_bytes(w)));
    true
}

/// What the workloads need from a database. Shared by all worker threads of a phase.
pub trait BenchDb: Send + Sync {
    /// Puts `value` under `key`.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Whether the key was found.
    fn get(&self, key: &[u8]) -> Result<bool>;
    /// Puts sent together, without waiting for each (`--pipeline`; one after the other on
    /// an embedded engine).
    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        pairs.iter().try_for_each(|(k, v)| self.put(k, v))
    }
    /// Gets sent together; how many keys were found.
    fn get_many(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut found = 0;
        for k in keys {
            found += u64::from(self.get(k)?);
        }
        Ok(found)
    }
    /// Writes the memtable out.
    fn flush(&self) -> Result<()>;
    /// Compacts the whole key range.
    fn compact(&self) -> Result<()>;
    /// Flushes and waits until background compactions are done (db_bench's
    /// `waitforcompaction`).
    fn settle(&self) -> Result<()> {
        self.flush()
    }
    /// Cerberus's own counters; `None` for other engines.
    fn db_stats(&self) -> Option<DbStats> {
        None
    }
    /// Whole-run statistics of the engine, as JSON.
    fn stats_json(&self) -> serde_json::Value;
    /// Flushes what must be durable and releases the database.
    fn close(&self) -> Result<()>;

    /// Creates the tenants `tenant-0` .. `tenant-{n-1}` (Cerberus: namespaces; RocksDB: column
    /// families or key prefixes, set up at open from `OpenConfig::tenants`), or finds them if
    /// the database already has them.
    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        let _ = n;
        Err(EngineError::NoTenants)
    }
    /// Puts into a tenant's key space.
    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        let _ = (tenant, key, value);
        Err(EngineError::NoTenants)
    }
    /// Puts into a tenant's key space sent together (pipelined on the device; one after the
    /// other elsewhere).
    fn put_many_tenant(&self, tenant: &TenantHandle, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        pairs
            .iter()
            .try_for_each(|(k, v)| self.put_tenant(tenant, k, v))
    }
    /// Gets from a tenant's key space; whether the key was found.
    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        let _ = (tenant, key);
        Err(EngineError::NoTenants)
    }
    /// The tables a get of `key` in a tenant's key space would consult now (Cerberus's
    /// `Namespace::get_path`); `None` for other engines.
    fn tenant_get_path(&self, tenant: &TenantHandle, key: &[u8]) -> Result<Option<GetPath>> {
        let _ = (tenant, key);
        Ok(None)
    }
    /// The counters of one tenant (Cerberus's namespace); `None` for other engines.
    fn tenant_stats(&self, tenant: &TenantHandle) -> Result<Option<NamespaceStats>> {
        let _ = tenant;
        Ok(None)
    }

    /// A new ordered cursor over the key space of `put` and `get`, at the database as it is
    /// now (`seekrandom` makes one per seek, as db_bench makes an iterator per seek).
    fn cursor(&self, opts: &CursorOptions) -> Result<Box<dyn BenchCursor + '_>> {
        let _ = opts;
        Err(EngineError::NoIterator)
    }
}

/// How a [`BenchCursor`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CursorOptions {
    /// Keys only: Cerberus reads nothing from its value log, RocksDB's value is not looked at
    /// (`value()` is not called; RocksDB still reads blobs as it positions).
    pub keys_only: bool,
    /// Cerberus: value-log reads issued ahead of the caller (`ReadOptions::prefetch_degree`);
    /// other engines ignore it.
    pub prefetch_degree: usize,
    /// Cerberus: `ReadOptions::index_prefetch`; other engines ignore it.
    pub index_prefetch: bool,
    /// Entries the caller means to read after each seek (seekrandom's scan length; 0: not
    /// known). The device asks for that many in the first batch after a seek, as does the
    /// embedded Cerberus with `whole_scan`; the other engines ignore it.
    pub scan_length: usize,
    /// The caller times a scan as one operation, seek and entries together (YCSB's scan of
    /// N): the embedded Cerberus reads the `scan_length` entries in one batch at the seek.
    /// Otherwise (seekrandom, which times the seek and each next apart) it reads them one
    /// at a time.
    pub whole_scan: bool,
    /// RocksDB: `ReadOptions::readahead_size`, bytes read ahead of the iterator in each
    /// table file (0: RocksDB's own, which starts after a few reads of one file); other
    /// engines ignore it.
    pub readahead_bytes: usize,
}

/// Seek and next over one engine's keys, in byte order.
pub trait BenchCursor {
    /// Positions at the first key `>= key`; the next `next` yields it.
    fn seek(&mut self, key: &[u8]) -> Result<()>;
    /// The entry at the position, moving past it: after `seek`, the first call yields the
    /// entry the seek found. `None` at the end of the key space. The value is empty with
    /// `keys_only`.
    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>>;
}

/// One tenant of a database, as `BenchDb::create_tenants` made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantHandle {
    /// Position in `0..tenants`.
    pub index: usize,
    /// Cerberus: the namespace id; RocksDB: the index (the key prefix of the shared layout).
    pub id: u32,
    /// `tenant-{index}`: the namespace or column family name.
    pub name: String,
}

impl TenantHandle {
    /// The name of tenant `index`: `tenant-{index}`.
    pub fn name_of(index: usize) -> String {
        format!("tenant-{index}")
    }
}

/// The tenants `tenant-0` .. `tenant-{n-1}`, each in the namespace `namespace` finds or makes
/// under its name, or in the baseline layout all in one namespace.
pub fn tenants_in_namespaces(
    n: usize,
    layout: LayoutArg,
    namespace: impl Fn(&str) -> Result<u32>,
) -> Result<Vec<TenantHandle>> {
    let shared = match layout {
        LayoutArg::Baseline => Some(namespace(BASELINE_NAMESPACE)?),
        LayoutArg::PerNamespace | LayoutArg::Shared => None,
    };
    (0..n)
        .map(|index| {
            let name = TenantHandle::name_of(index);
            let id = match shared {
                Some(id) => id,
                None => namespace(&name)?,
            };
            Ok(TenantHandle { index, id, name })
        })
        .collect()
}

/// How tenants share the database (`--layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    /// Cerberus: one tree per namespace below L0; RocksDB: one column family per tenant.
    #[default]
    #[value(name = "per_namespace", alias = "per-namespace")]
    PerNamespace,
    /// One tree for all tenants, keys prefixed by the tenant (Cerberus: `Layout::Shared`, a
    /// namespace per tenant; RocksDB: the default column family, keys prefixed by the 4-byte
    /// big-endian tenant index).
    Shared,
    /// The paper's KVSSD baseline, without namespaces: all tenants in one key space, each
    /// key followed by the 4-byte big-endian tenant index, so tenants' keys interleave
    /// (Cerberus: `Layout::Shared`, one namespace `baseline` for all; RocksDB: the default
    /// column family).
    Baseline,
}

impl LayoutArg {
    /// Its `--layout` value, as the reports and JSON documents name it.
    pub fn name(self) -> &'static str {
        match self {
            LayoutArg::PerNamespace => "per_namespace",
            LayoutArg::Shared => "shared",
            LayoutArg::Baseline => "baseline",
        }
    }

    /// Where a tenant's index goes in a key space all tenants share; `None`: a key space of
    /// its own per tenant (a namespace, partition or database).
    #[cfg_attr(not(any(feature = "fjall", feature = "lmdb")), allow(dead_code))]
    pub(crate) fn affix(self) -> Option<Affix> {
        match self {
            LayoutArg::PerNamespace => None,
            LayoutArg::Shared => Some(Affix::Prefix),
            LayoutArg::Baseline => Some(Affix::Suffix),
        }
    }

    /// Whether all tenants share one namespace, and so its counters.
    pub fn one_namespace(self) -> bool {
        self == LayoutArg::Baseline
    }
}

/// The namespace all tenants share in the baseline layout.
pub const BASELINE_NAMESPACE: &str = "baseline";

/// Where a tenant's index goes in a key space all tenants share: 4 bytes big-endian before
/// the user key (`shared` on RocksDB) or after it (`baseline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Affix {
    #[cfg_attr(
        not(any(
            feature = "rocksdb",
            feature = "fjall",
            feature = "lmdb",
            feature = "redis"
        )),
        allow(dead_code)
    )]
    Prefix,
    Suffix,
}

/// Calls `f` with `key` and the tenant index `index` (4 bytes big-endian) placed as `affix`
/// says, on the stack when it fits.
#[inline]
pub(crate) fn with_tenant_key<R>(
    affix: Affix,
    index: u32,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> R {
    let id = index.to_be_bytes();
    let len = 4 + key.len();
    let fill = |buf: &mut [u8]| match affix {
        Affix::Prefix => {
            buf[..4].copy_from_slice(&id);
            buf[4..].copy_from_slice(key);
        }
        Affix::Suffix => {
            buf[..key.len()].copy_from_slice(key);
            buf[key.len()..].copy_from_slice(&id);
        }
    };
    let mut stack = [0u8; 64];
    if len <= stack.len() {
        fill(&mut stack[..len]);
        f(&stack[..len])
    } else {
        let mut v = vec![0u8; len];
        fill(&mut v);
        f(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(affix: Affix, index: u32, key: &[u8]) -> Vec<u8> {
        with_tenant_key(affix, index, key, |k| k.to_vec())
    }

    #[test]
    fn a_value_is_found_whatever_its_length_and_an_absent_one_is_not() {
        assert!(!read_value(None::<&[u8]>));
        for n in [0, 1, 7, 8, 9, 1024, 1031] {
            assert!(read_value(Some(vec![3u8; n])));
        }
    }

    #[test]
    fn prefix_is_the_big_endian_index_then_the_key() {
        assert_eq!(
            key(Affix::Prefix, 0x0102_0304, b"abc"),
            b"\x01\x02\x03\x04abc"
        );
        let long = vec![b'x'; 100];
        let k = key(Affix::Prefix, 7, &long);
        assert_eq!(k.len(), 104);
        assert_eq!(&k[..4], &[0, 0, 0, 7]);
        assert_eq!(&k[4..], &long[..]);
    }

    #[test]
    fn baseline_key_is_the_key_then_the_big_endian_index() {
        assert_eq!(
            key(Affix::Suffix, 0x0102_0304, b"abc"),
            b"abc\x01\x02\x03\x04"
        );
        assert_eq!(key(Affix::Suffix, 2, b""), [0, 0, 0, 2]);
        let long = vec![b'y'; 61];
        let k = key(Affix::Suffix, 9, &long);
        assert_eq!(k.len(), 65);
        assert_eq!(&k[..61], &long[..]);
        assert_eq!(&k[61..], &[0, 0, 0, 9]);
    }

    #[test]
    fn baseline_keys_of_tenants_interleave() {
        // Fixed-width user keys, as the benchmark writes: in key order, each user key's
        // tenants come together (tenant order within), then the next user key.
        let mut keys = Vec::new();
        for t in [2u32, 0, 1] {
            for k in [b"0002", b"0001", b"0010"] {
                keys.push((key(Affix::Suffix, t, k), t, k));
            }
        }
        keys.sort();
        let order: Vec<(u32, &[u8])> = keys.iter().map(|(_, t, k)| (*t, &k[..])).collect();
        assert_eq!(
            order,
            vec![
                (0, &b"0001"[..]),
                (1, b"0001"),
                (2, b"0001"),
                (0, b"0002"),
                (1, b"0002"),
                (2, b"0002"),
                (0, b"0010"),
                (1, b"0010"),
                (2, b"0010"),
            ]
        );
        // The prefix layout instead keeps each tenant's keys together.
        let mut p: Vec<Vec<u8>> = [(1u32, b"0001"), (0, b"0002"), (1, b"0000")]
            .iter()
            .map(|(t, k)| key(Affix::Prefix, *t, *k))
            .collect();
        p.sort();
        assert_eq!(p[0][..4], [0, 0, 0, 0]);
        assert_eq!(p[1][4..], *b"0000");
    }

    #[test]
    fn layouts_are_named() {
        assert_eq!(LayoutArg::Baseline.name(), "baseline");
        assert!(LayoutArg::Baseline.one_namespace());
        assert!(!LayoutArg::Shared.one_namespace());
        assert!(!LayoutArg::PerNamespace.one_namespace());
    }
}
