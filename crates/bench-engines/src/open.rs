//! The engines by name, and opening one.

use crate::cerberus::CerberusDb;
use crate::config::{OpenConfig, StorageArg};
use crate::db::BenchDb;
use crate::device::DeviceDb;
use crate::error::{EngineError, Result};
#[cfg(feature = "fjall")]
use crate::fjall::FjallDb;
use crate::floor::{self, FloorDb, LogMode};
use crate::kvs::KvsDb;
#[cfg(feature = "lmdb")]
use crate::lmdb::LmdbDb;
#[cfg(feature = "redis")]
use crate::redis::RedisDb;
#[cfg(feature = "rocksdb")]
use crate::rocksdb::RocksDb;
use std::sync::Arc;

/// An engine named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Cerberus embedded in the bench's process.
    Cerberus,
    /// RocksDB (cargo feature `rocksdb`).
    RocksDb,
    /// RocksDB with integrated blob files (BlobDB): values of at least Cerberus's
    /// `inline_value_threshold` bytes go to blob files, as Cerberus's go to its value log.
    RocksDbBlob,
    /// fjall (cargo feature `fjall`), the Rust LSM-tree peer: values inline in its tables.
    Fjall,
    /// fjall with key-value separation: values of at least Cerberus's `inline_value_threshold`
    /// bytes go to its blob files, as Cerberus's go to its value log.
    FjallBlob,
    /// Cerberus through the network, as a device (`--device`).
    Device,
    /// A local device whose clients speak NVMe/TCP (`--wire nvme` for this engine only):
    /// `device,device-nvme` compares the two wires in one run.
    DeviceNvme,
    /// The device through the SNIA key-value library in C (`crates/kvs`): its sync calls,
    /// and its async calls for `--pipeline` batches.
    Kvs,
    /// A `redis-server` started on a loopback port (the device's peer).
    Redis,
    /// The floor of Cerberus's write path: a buffered log append and a skiplist insert per
    /// put (puts only; see `floor.rs`).
    Floor,
    /// The floor with one `write(2)` per put, as the engine hands each write to the kernel.
    FloorWrite,
    /// The floor writing its log as the engine does: segments synced in order, written
    /// back early by a thread of its own (see `floor_log.rs`).
    FloorLog,
    /// LMDB (cargo feature `lmdb`, the `heed` crate), the embedded engine's read peer.
    Lmdb,
}

impl Engine {
    /// Its name on the command line and in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cerberus => "cerberus",
            Engine::RocksDb => "rocksdb",
            Engine::RocksDbBlob => "rocksdb-blob",
            Engine::Fjall => "fjall",
            Engine::FjallBlob => "fjall-blob",
            Engine::Device => "device",
            Engine::DeviceNvme => "device-nvme",
            Engine::Kvs => "kvs",
            Engine::Redis => "redis",
            Engine::Floor => "floor",
            Engine::FloorWrite => "floor-write",
            Engine::FloorLog => "floor-log",
            Engine::Lmdb => "lmdb",
        }
    }

    /// The engine named `s` (case and surrounding spaces ignored; `rocksdb_blob` and
    /// `fjall_blob` also accepted).
    pub fn parse(s: &str) -> Result<Engine> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cerberus" => Ok(Engine::Cerberus),
            "rocksdb" => Ok(Engine::RocksDb),
            "rocksdb-blob" | "rocksdb_blob" => Ok(Engine::RocksDbBlob),
            "fjall" => Ok(Engine::Fjall),
            "fjall-blob" | "fjall_blob" => Ok(Engine::FjallBlob),
            "device" => Ok(Engine::Device),
            "device-nvme" | "device_nvme" => Ok(Engine::DeviceNvme),
            "kvs" => Ok(Engine::Kvs),
            "redis" => Ok(Engine::Redis),
            "floor" => Ok(Engine::Floor),
            "floor-write" | "floor_write" => Ok(Engine::FloorWrite),
            "floor-log" | "floor_log" => Ok(Engine::FloorLog),
            "lmdb" => Ok(Engine::Lmdb),
            other => Err(EngineError::UnknownEngine { name: other.into() }),
        }
    }

    /// Checks, before anything runs, that this binary can open the engine with `config`.
    pub fn check(self, config: &OpenConfig) -> Result<()> {
        match self {
            Engine::Cerberus | Engine::Device | Engine::Kvs => Ok(()),
            Engine::DeviceNvme => match config.device.as_deref() {
                None | Some("local") => Ok(()),
                Some(_) => Err(EngineError::NeedsLocalDevice {
                    what: "device-nvme",
                }),
            },
            Engine::Floor | Engine::FloorWrite | Engine::FloorLog => floor::check(config),
            Engine::Lmdb => {
                if !cfg!(feature = "lmdb") {
                    return Err(EngineError::NotBuilt {
                        engine: "LMDB",
                        how: "build with `--features lmdb` (it compiles LMDB's bundled source; \
                              no system package needed)",
                    });
                }
                if config.storage == StorageArg::Nand {
                    return Err(EngineError::NandUnsupported {
                        engine: self.name(),
                    });
                }
                Ok(())
            }
            Engine::Redis => {
                if !cfg!(feature = "redis") {
                    return Err(EngineError::NotBuilt {
                        engine: "Redis",
                        how: "run scripts/install-peers, then build with `--features redis`",
                    });
                }
                if config.storage == StorageArg::Nand {
                    return Err(EngineError::NandUnsupported { engine: "redis" });
                }
                Ok(())
            }
            Engine::Fjall | Engine::FjallBlob => {
                if !cfg!(feature = "fjall") {
                    return Err(EngineError::NotBuilt {
                        engine: "fjall",
                        how: "build with `--features fjall` (pure Rust: no system package, \
                              nothing downloaded at build time)",
                    });
                }
                if config.storage == StorageArg::Nand {
                    return Err(EngineError::NandUnsupported {
                        engine: self.name(),
                    });
                }
                Ok(())
            }
            Engine::RocksDb | Engine::RocksDbBlob => {
                if !cfg!(feature = "rocksdb") {
                    return Err(EngineError::NotBuilt {
                        engine: "RocksDB",
                        how: "run scripts/install-peers, then build with `--features rocksdb` \
                              (or run scripts/bench-rocksdb, which does both)",
                    });
                }
                if config.storage == StorageArg::Nand {
                    return Err(EngineError::NandUnsupported {
                        engine: self.name(),
                    });
                }
                Ok(())
            }
        }
    }
}

/// Opens (creating if needed) the database of `engine` at `config.path`.
pub fn open(engine: Engine, config: &OpenConfig) -> Result<Arc<dyn BenchDb>> {
    engine.check(config)?;
    std::fs::create_dir_all(&config.path).map_err(|source| EngineError::CreateDir {
        path: config.path.clone(),
        source,
    })?;
    match engine {
        Engine::Cerberus => Ok(Arc::new(CerberusDb::open(config)?)),
        Engine::Device => Ok(Arc::new(DeviceDb::open(config)?)),
        Engine::DeviceNvme => Ok(Arc::new(DeviceDb::open_nvme(config)?)),
        Engine::Kvs => Ok(Arc::new(KvsDb::open(config)?)),
        Engine::Floor => Ok(Arc::new(FloorDb::open(config, LogMode::Buffered)?)),
        Engine::FloorWrite => Ok(Arc::new(FloorDb::open(config, LogMode::Write)?)),
        Engine::FloorLog => Ok(Arc::new(FloorDb::open(config, LogMode::Segments)?)),
        #[cfg(feature = "lmdb")]
        Engine::Lmdb => Ok(Arc::new(LmdbDb::open(config)?)),
        #[cfg(not(feature = "lmdb"))]
        Engine::Lmdb => unreachable!("checked above"),
        #[cfg(feature = "rocksdb")]
        Engine::RocksDb => Ok(Arc::new(RocksDb::open(config, false)?)),
        #[cfg(feature = "rocksdb")]
        Engine::RocksDbBlob => Ok(Arc::new(RocksDb::open(config, true)?)),
        #[cfg(not(feature = "rocksdb"))]
        Engine::RocksDb | Engine::RocksDbBlob => unreachable!("checked above"),
        #[cfg(feature = "fjall")]
        Engine::Fjall => Ok(Arc::new(FjallDb::open(config, false)?)),
        #[cfg(feature = "fjall")]
        Engine::FjallBlob => Ok(Arc::new(FjallDb::open(config, true)?)),
        #[cfg(not(feature = "fjall"))]
        Engine::Fjall | Engine::FjallBlob => unreachable!("checked above"),
        #[cfg(feature = "redis")]
        Engine::Redis => Ok(Arc::new(RedisDb::open(config)?)),
        #[cfg(not(feature = "redis"))]
        Engine::Redis => unreachable!("checked above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::LayoutArg;

    #[test]
    fn device_nvme_is_named_and_drives_only_a_local_device() {
        assert_eq!(Engine::parse("device-nvme").unwrap(), Engine::DeviceNvme);
        assert_eq!(Engine::DeviceNvme.name(), "device-nvme");
        let mut config = OpenConfig::at(std::path::Path::new("/nonexistent"), LayoutArg::default());
        assert!(Engine::DeviceNvme.check(&config).is_ok());
        config.device = Some("local".into());
        assert!(Engine::DeviceNvme.check(&config).is_ok());
        config.device = Some("10.0.0.1:7070".into());
        let err = Engine::DeviceNvme.check(&config).unwrap_err().to_string();
        assert!(err.contains("--device local"), "{err}");
    }

    #[test]
    fn fjall_is_named_and_runs_on_files_only() {
        assert_eq!(Engine::parse("fjall").unwrap(), Engine::Fjall);
        assert_eq!(Engine::parse(" Fjall_Blob ").unwrap(), Engine::FjallBlob);
        assert_eq!(Engine::FjallBlob.name(), "fjall-blob");
        let mut config = OpenConfig::at(std::path::Path::new("/nonexistent"), LayoutArg::default());
        for engine in [Engine::Fjall, Engine::FjallBlob] {
            let err = engine.check(&config).map_err(|e| e.to_string());
            if cfg!(feature = "fjall") {
                assert!(err.is_ok(), "{err:?}");
            } else {
                assert!(err.unwrap_err().contains("--features fjall"));
            }
        }
        config.storage = StorageArg::Nand;
        assert!(Engine::Fjall.check(&config).is_err());
    }
}
