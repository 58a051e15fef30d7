//! How to open a database: where, on which storage, with which sizes and tenants.

use crate::db::LayoutArg;
use crate::profile::SizeProfile;
use std::path::PathBuf;

/// Storage under the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageArg {
    /// Real files.
    Posix,
    /// Real files behind Cerberus's NAND-flash timing model.
    Nand,
}

impl StorageArg {
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
    pub path: PathBuf,
    pub storage: StorageArg,
    pub cache_bytes: u64,
    /// Cerberus: `Options::mmap_reads`.
    pub mmap_reads: bool,
    pub sync: bool,
    /// Tenants the run will create (0: not a multitenant run). RocksDB makes its column
    /// families at open.
    #[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
    pub tenants: usize,
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
}
