//! How to open a database: where, on which storage, with which sizes and tenants.

use crate::db::LayoutArg;
use crate::profile::SizeProfile;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `--row-cache-bytes`: the row cache of the embedded Cerberus engine and of a local device
/// (`Options::row_cache_bytes`, the device's `engine.row_cache_bytes`). Process-wide rather
/// than an [`OpenConfig`] field, so that every experiment's configuration literal stays as it
/// is; `u64::MAX`: unset, each engine's default (the engine's off, the device's 256 MiB).
static ROW_CACHE_BYTES: AtomicU64 = AtomicU64::new(u64::MAX);

/// Sets the row cache of every Cerberus engine and local device opened from now on (`None`:
/// their defaults).
pub fn set_row_cache_bytes(bytes: Option<u64>) {
    ROW_CACHE_BYTES.store(bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The row cache set with [`set_row_cache_bytes`], if any.
pub fn row_cache_bytes() -> Option<u64> {
    Some(ROW_CACHE_BYTES.load(Ordering::Relaxed)).filter(|&b| b != u64::MAX)
}

/// `--wire nvme`: the device engine's clients speak NVMe/TCP (the vendor pair) to a local
/// device's NVMe/TCP target instead of the native port. Process-wide, as the row cache.
static WIRE_NVME: AtomicBool = AtomicBool::new(false);

/// Sets the wire of every device engine opened from now on (true: NVMe/TCP).
pub fn set_wire_nvme(nvme: bool) {
    WIRE_NVME.store(nvme, Ordering::Relaxed);
}

/// Whether [`set_wire_nvme`] chose NVMe/TCP.
pub fn wire_nvme() -> bool {
    WIRE_NVME.load(Ordering::Relaxed)
}

/// Storage under the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageArg {
    /// Real files.
    Posix,
    /// Real files behind Cerberus's NAND-flash timing model.
    Nand,
}

impl StorageArg {
    /// Its `--storage` value, as the reports and JSON documents name it.
    pub fn name(self) -> &'static str {
        match self {
            StorageArg::Posix => "posix",
            StorageArg::Nand => "nand",
        }
    }
}

/// How to open a database.
#[derive(Clone, Debug)]
pub struct OpenConfig {
    /// Directory of the database (made if missing).
    pub path: PathBuf,
    /// Storage under the database (`--storage`).
    pub storage: StorageArg,
    /// Cache bytes: Cerberus's filter and index cache, RocksDB's LRU block cache.
    pub cache_bytes: u64,
    /// Cerberus: `Options::mmap_reads`.
    pub mmap_reads: bool,
    /// Cerberus: `Options::time_get_steps` (the multitenant report's cost model needs each
    /// step's time).
    pub time_get_steps: bool,
    /// Whether every write is synced (fsync).
    pub sync: bool,
    /// Tenants the run will create (0: not a multitenant run). RocksDB makes its column
    /// families at open.
    #[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
    pub tenants: usize,
    /// How tenants share the database (`--layout`).
    pub layout: LayoutArg,
    /// Engine sizes of `--profile`; `None` keeps each engine's defaults.
    pub profile: Option<SizeProfile>,
    /// The device engine: `HOST:PORT` of a running device, or `local` (start one here).
    pub device: Option<String>,
    /// Admin credential of a remote device.
    pub admin_secret: Option<String>,
    /// `--device local`: the value read-ahead of the device's iterators
    /// (`DeviceConfig::iterator_prefetch_degree`; seekrandom's `--prefetch-degree`, so that the
    /// device scans as the embedded engine does). `None`: the device's default.
    pub device_prefetch_degree: Option<usize>,
    /// Redis: also keep the keys in a sorted set, so that cursors scan them in order (as
    /// YCSB's Redis binding keeps an index for its scans; each put then adds its key there
    /// too). Other engines scan in order anyway and ignore it.
    pub ordered_keys: bool,
    /// The largest value the run writes (0: unknown). A local device accepts values up to
    /// its default `max_value_len`, or this if larger; its other limits stay its defaults.
    pub largest_value: usize,
}

impl OpenConfig {
    /// A database at `path` on files, with `layout`: no cache, no sync, no profile, no
    /// device, not a multitenant run (tests and simple runs; change what differs).
    pub fn at(path: &std::path::Path, layout: LayoutArg) -> OpenConfig {
        OpenConfig {
            path: path.to_path_buf(),
            storage: StorageArg::Posix,
            cache_bytes: 0,
            mmap_reads: true,
            time_get_steps: false,
            sync: false,
            tenants: 0,
            layout,
            profile: None,
            device: None,
            admin_secret: None,
            device_prefetch_degree: None,
            ordered_keys: false,
            largest_value: 0,
        }
    }
}
