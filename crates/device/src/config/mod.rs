//! The device's settings: command-line flags and an optional TOML file fill one
//! [`DeviceConfig`].

pub(crate) mod nvme;

use crate::dedup::DedupConfig;
use crate::error::DeviceError;
use crate::scheduler::SchedulerConfig;
use crate::shares::SharesConfig;
use cerberus_engine::{Options, StorageKind};
use nvme::NvmeConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where the engine keeps its data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageChoice {
    /// Real files (the default).
    #[default]
    Posix,
    /// Real files behind the NAND-flash timing model.
    Nand,
}

/// Everything the device needs to run. Unknown keys in a TOML file are an error, so a typo
/// does not silently fall back to a default.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeviceConfig {
    /// Directory of the device: the engine's files under `db/`, `admin.secret`,
    /// `credentials.json`.
    pub data_dir: PathBuf,
    /// Address the command set is served on.
    pub listen: String,
    /// Files as they are, or behind the NAND timing model.
    pub storage: StorageChoice,
    /// Every write is durable before it is acknowledged (else only stores with the sync flag).
    pub sync: bool,
    /// Connections served at once. When all are taken, the oldest connection that has not
    /// authenticated is closed to make room; when every one has, the newcomer is closed.
    pub max_connections: usize,
    /// A connection must authenticate within this (Identify does not count), or it is closed.
    pub auth_timeout_ms: u64,
    /// A frame, once its first byte arrived, must be complete within this (slow senders).
    pub frame_timeout_ms: u64,
    /// An authenticated connection that sends nothing and waits for nothing this long is
    /// closed (0: never).
    pub idle_timeout_secs: u64,
    /// Replies the client does not take within this close its connection: what it does not
    /// read does not pile up in the device.
    pub write_timeout_ms: u64,
    /// Commands one connection may have in flight; the device stops reading that connection
    /// until some complete.
    pub max_inflight: u32,
    /// Longest key accepted, in bytes (1 to 65535; default 255). Longer (or empty) keys are
    /// refused with `InvalidKeySize`; clients learn it from Identify.
    pub max_key_len: u32,
    /// Longest value accepted, in bytes (at most the engine's 64 MiB; default 2 MiB); longer
    /// ones are refused with `InvalidValueSize`. With `max_key_len`, it bounds a request
    /// frame.
    pub max_value_len: u32,
    /// Most bytes the device holds for its clients, every wire together (`docs/device.md`,
    /// Memory): native replies not yet written and request frames of 4 KiB or more, NVMe/TCP
    /// queues' started commands and unfetched vendor responses. Past it new work waits (a
    /// native connection that holds nothing still runs one command at a time). Default
    /// 256 MiB. Native connections start waiting one value per network thread before it
    /// (answers not counted yet), so keep it well above `network_threads` x `max_value_len`.
    pub max_held_bytes: u64,
    /// Most keys one List returns.
    pub max_list_keys: u32,
    /// Most keys one DeleteRange command deletes (default 10,000): a range delete is this
    /// many keys' work at most, and the client sends another command for the rest.
    pub max_delete_range_keys: u32,
    /// Iterators one connection may have open at once.
    pub max_iterators: u32,
    /// Most bytes of keys and values one IterNext returns (at least one entry is always
    /// returned, whatever its size).
    pub max_iter_batch_bytes: u32,
    /// An iterator unused this long is closed and its snapshot released.
    pub iterator_idle_secs: u32,
    /// Most records one query answers with: a top's `k` and a get_by_secondary's `limit`
    /// (given or not) are cut to this, and an answer that would hold more is refused with
    /// `ReplyTooLarge` (a find pages instead, and is not limited by this).
    pub max_query_results: u32,
    /// Most bytes one reply's body holds. Every bounded command fits below it (iterator
    /// batches and find pages are cut to `max_iter_batch_bytes`, a value to
    /// `max_value_len`); a query answer that would not fit is refused with `ReplyTooLarge`.
    /// At least `max_frame_body() + 4 * max_iter_batch_bytes + 64 KiB`, so no get, page or
    /// batch is ever refused. Unset: 8 MiB, or that least if larger (`reply_bytes_bound`);
    /// with the default limits, well under the 64 MiB a host client accepts.
    pub max_reply_bytes: Option<u32>,
    /// Value reads an iterator issues ahead (the engine's `ReadOptions::prefetch_degree`).
    /// Unset: 8 on the NAND model, where reads on different dies overlap; 0 on posix, where
    /// the page cache answers faster than a hand-off to a reader thread.
    pub iterator_prefetch_degree: Option<usize>,
    /// Threads that run engine calls (the foreground cores). 0: one per core.
    pub workers: usize,
    /// Point commands that cannot block for long (gets, and puts and deletes that do not
    /// wait for durability, on files) run on the network thread that read them instead of
    /// going to a worker and back.
    pub inline_commands: bool,
    /// Queries are first tried on the network thread that read them, under a limit of this
    /// many units of engine work (an index entry read is 1, a record read
    /// `cerberus_engine::RECORD_WORK`: 4,096 is 150-250 us on files, about what the two
    /// hand-offs cost on a virtual machine); one that needs more stops there and runs whole
    /// on a worker. A small find, count or top-K (the top 50 of 104,000 flights, 2,313
    /// units) then costs a loopback round trip instead of two hand-offs between threads.
    /// Only where point commands run inline (`inline_commands`, files, no sync); 0: never.
    pub inline_query_work: u64,
    /// Network threads: each runs an event loop of its own and serves the connections
    /// given to it in turn.
    pub network_threads: usize,
    /// Microseconds a network thread keeps polling its sockets after a command before it
    /// sleeps (0: sleeps at once). A command that arrives meanwhile is read without waking a
    /// sleeping thread, which on a virtual machine costs ~100 us. Polling happens only while
    /// threads ready to run waited for a CPU less than 30 % of the last 5 ms
    /// (`/proc/pressure/cpu`; without it, never), by at most one thread fewer than the CPUs:
    /// with many busy clients on few cores nobody polls. One client's gets went from 8.0-8.2k
    /// to 13.4-14.4k/s with 50 here, 16 and 64 clients' stayed level.
    pub network_spin_us: u64,
    /// Frames a connection's reader handles before the other connections of its network
    /// thread get a turn (0: it reads on until its socket is empty or tokio's budget ends).
    /// A client that keeps its socket full otherwise holds the thread for thousands of
    /// frames, and a reader beside it waits milliseconds for one get.
    pub network_frames_per_turn: usize,
    /// The admin credential. Unset: read from `data_dir/admin.secret`, generated there (mode
    /// 0600) at first start.
    pub admin_secret: Option<String>,
    /// TLS certificate chain and private key (PEM). Both or neither; plain TCP without.
    pub tls_cert: Option<PathBuf>,
    /// The private key of `tls_cert` (PEM).
    pub tls_key: Option<PathBuf>,
    /// Address of the Prometheus text endpoint (`/metrics`); off when unset.
    pub metrics_listen: Option<String>,
    /// Address of the NVMe/TCP target (`docs/nvme-tcp.md`; 127.0.0.1:4420, the IANA port,
    /// from `cerberus serve --nvme-listen`); off when unset, so that devices a process
    /// embeds (tests, benchmarks) do not contend for one port.
    pub nvme_listen: Option<String>,
    /// The NVMe/TCP target's limits and host grants.
    pub nvme: NvmeConfig,
    /// Engine settings.
    pub engine: EngineConfig,
    /// The scheduler of background tasks over the network threads (the cores).
    pub scheduler: SchedulerConfig,
    /// The deduplication service (a background task per write).
    pub dedup: DedupConfig,
    /// I/O shares per namespace (reservation, weight, limit) in the command scheduler.
    pub shares: SharesConfig,
}

/// The engine options a device operator may set.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Bytes of memory a memtable takes before it is flushed: its entries, the records
    /// their values keep, its search tree, key filter and point index (the engine's
    /// `Options::memtable_bytes`).
    pub memtable_bytes: usize,
    /// Bytes of table blocks cached (the engine's `Options::cache_bytes`; 0: none).
    pub cache_bytes: u64,
    /// Filter and index blocks in that cache rather than kept by each open table (the
    /// engine's `Options::cache_filters_and_indexes`; default off).
    pub cache_filters_and_indexes: bool,
    /// Bytes of recently read records' values cached (the engine's
    /// `Options::row_cache_bytes`; 0: off). Default off, as the engine's: on data the page
    /// cache holds, a get through the device runs faster without it (`docs/device.md`).
    pub row_cache_bytes: u64,
    /// Bytes the open tables' point indexes may keep in memory together (the engine's
    /// `Options::point_index_memory_bytes`; default 256 MiB, some 12 million keys; 0: none,
    /// gets read the tables' data blocks).
    pub point_index_memory_bytes: u64,
    /// Engine jobs (flushes, compactions, GC) run at once (the engine's
    /// `Options::background_threads`; on the device they run on the scheduler's lanes).
    pub background_threads: usize,
    /// `per_namespace` (default) or `shared`.
    pub layout: String,
    /// Read files through memory maps (see the engine's `Options::mmap_reads`: faster, but
    /// an I/O error on a mapped page stops the device instead of failing one command).
    pub mmap_reads: bool,
    /// Table files the engine keeps open at most (the engine's `Options::max_open_files`;
    /// also no more than half the device's descriptor limit).
    pub max_open_files: usize,
    /// Free disk bytes kept for background work: below them stores are refused with
    /// `CapacityExceeded` (the engine's `Options::reserve_bytes`; unset: 1% of the file
    /// system, at most 256 MiB; 0: none).
    pub reserve_bytes: Option<u64>,
    /// Most secondary indexes a namespace may have: a create past it is refused with
    /// `IndexLimit` (the engine's `Options::max_indexes_per_namespace`; default 16).
    pub max_indexes_per_namespace: usize,
    /// Longest life of an iterator (or snapshot) in milliseconds, from its opening however
    /// often it is used: past it, it is released (GC may collect what it held) and its next
    /// use fails with `SnapshotExpired` (the engine's `Options::snapshot_max_age`; default
    /// 600,000: 10 minutes; 0: no limit).
    pub snapshot_max_age_ms: u64,
    /// The share of the value log that may be garbage (superseded and deleted values) before
    /// background GC collects it, deadest segments first (the engine's
    /// `Options::vlog_gc_dead_ratio`; default 0.5: the log up to about twice its live bytes;
    /// lower keeps less garbage and rewrites more; 0 or 1: no GC, the log only grows).
    pub vlog_gc_dead_ratio: f64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        let o = Options::default();
        EngineConfig {
            memtable_bytes: o.memtable_bytes,
            cache_bytes: o.cache_bytes,
            cache_filters_and_indexes: o.cache_filters_and_indexes,
            row_cache_bytes: o.row_cache_bytes,
            point_index_memory_bytes: o.point_index_memory_bytes,
            background_threads: o.background_threads,
            layout: "per_namespace".into(),
            mmap_reads: o.mmap_reads,
            max_open_files: o.max_open_files,
            reserve_bytes: o.reserve_bytes,
            max_indexes_per_namespace: o.max_indexes_per_namespace,
            snapshot_max_age_ms: o.snapshot_max_age.map_or(0, |a| a.as_millis() as u64),
            vlog_gc_dead_ratio: o.vlog_gc_dead_ratio,
        }
    }
}

/// The address the native protocol serves on unless told otherwise (loopback only); 4420,
/// the IANA port of NVMe/TCP, belongs to the NVMe/TCP target (`nvme_listen`).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9420";

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            data_dir: PathBuf::from("cerberus-data"),
            listen: DEFAULT_LISTEN.into(),
            storage: StorageChoice::Posix,
            sync: false,
            max_connections: 1024,
            auth_timeout_ms: 10_000,
            frame_timeout_ms: 10_000,
            idle_timeout_secs: 300,
            write_timeout_ms: 30_000,
            max_inflight: 128,
            // As Samsung's KV SSD: keys up to 255 bytes, values up to 2 MiB.
            max_key_len: 255,
            max_value_len: 2 << 20,
            max_held_bytes: 256 << 20,
            max_list_keys: 1000,
            max_delete_range_keys: 10_000,
            max_iterators: 16,
            max_iter_batch_bytes: 1 << 20,
            iterator_idle_secs: 60,
            max_query_results: 10_000,
            max_reply_bytes: None,
            iterator_prefetch_degree: None,
            workers: 0,
            inline_commands: true,
            inline_query_work: 4096,
            network_threads: 2,
            network_spin_us: 50,
            network_frames_per_turn: 32,
            admin_secret: None,
            tls_cert: None,
            tls_key: None,
            metrics_listen: None,
            nvme_listen: None,
            nvme: NvmeConfig::default(),
            engine: EngineConfig::default(),
            scheduler: SchedulerConfig::default(),
            dedup: DedupConfig::default(),
            shares: SharesConfig::default(),
        }
    }
}

impl DeviceConfig {
    /// Reads a TOML file; keys it leaves out keep their defaults.
    pub fn from_toml_file(path: &Path) -> Result<DeviceConfig, DeviceError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DeviceError::Config(format!("reading {}: {e}", path.display())))?;
        toml::from_str(&text)
            .map_err(|e| DeviceError::Config(format!("parsing {}: {e}", path.display())))
    }

    /// Checks every limit and that the settings agree with one another; the error names
    /// what is wrong.
    pub(crate) fn validate(&self) -> Result<(), DeviceError> {
        let bad = |m: &str| Err(DeviceError::Config(m.to_string()));
        if self.max_key_len == 0 || self.max_key_len > u32::from(u16::MAX) {
            return bad("max_key_len must be between 1 and 65535");
        }
        if self.max_value_len as usize > Options::default().max_value_size {
            return bad("max_value_len is above the engine's limit (64 MiB)");
        }
        if self.max_inflight == 0 || self.max_connections == 0 || self.max_list_keys == 0 {
            return bad("max_inflight, max_connections and max_list_keys must be at least 1");
        }
        if self.max_delete_range_keys == 0 {
            return bad("max_delete_range_keys must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.engine.vlog_gc_dead_ratio) {
            return bad("engine.vlog_gc_dead_ratio must be between 0 and 1");
        }
        if self.auth_timeout_ms == 0 || self.frame_timeout_ms == 0 || self.write_timeout_ms == 0 {
            return bad(
                "auth_timeout_ms, frame_timeout_ms and write_timeout_ms must be at least 1",
            );
        }
        if self.max_iterators == 0 || self.max_iter_batch_bytes == 0 || self.iterator_idle_secs == 0
        {
            return bad(
                "max_iterators, max_iter_batch_bytes and iterator_idle_secs must be at least 1",
            );
        }
        if self.max_query_results == 0 {
            return bad("max_query_results must be at least 1");
        }
        if self
            .max_reply_bytes
            .is_some_and(|b| u64::from(b) < self.min_reply_bytes())
        {
            return bad(
                "max_reply_bytes must be at least max_value_len + max_key_len + 2 + \
                 4 * max_iter_batch_bytes + 64 KiB (a value, a find page or a batch must fit)",
            );
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return bad("tls_cert and tls_key go together");
        }
        if let Some(s) = &self.admin_secret {
            if s.len() < 16 || s.len() > cerberus_proto::MAX_SECRET_LEN {
                return bad("admin_secret must have 16 to 256 bytes");
            }
        }
        if !(-20..=19).contains(&self.scheduler.network_nice) {
            return bad("scheduler.network_nice is a nice value, -20 to 19");
        }
        if !(-20..=19).contains(&self.scheduler.background_nice) {
            return bad("scheduler.background_nice is a nice value, -20 to 19");
        }
        let t = self.scheduler.load_threshold;
        if !(t > 0.0 && t <= 1.0) || self.scheduler.sample_every == 0 {
            return bad(
                "scheduler.load_threshold is in (0, 1] and scheduler.sample_every at least 1",
            );
        }
        if !(16..=65536).contains(&self.dedup.chunk_bytes) {
            return bad("dedup.chunk_bytes is between 16 and 65536");
        }
        if self.dedup.max_backlog == 0 {
            return bad("dedup.max_backlog is at least 1");
        }
        if self.engine.row_cache_bytes != 0 && self.engine.row_cache_bytes < 1 << 20 {
            // Smaller, a 64 KiB value cannot be cached (an entry takes at most 1/8).
            return bad("engine.row_cache_bytes is 0 (off) or at least 1 MiB");
        }
        if !matches!(self.engine.layout.as_str(), "per_namespace" | "shared") {
            return bad("engine.layout is per_namespace or shared");
        }
        let queue = u64::from(self.nvme.max_queue_bytes);
        if self.max_held_bytes < queue || self.max_held_bytes > 1 << 40 {
            return bad("max_held_bytes is between nvme.max_queue_bytes and 1 TiB");
        }
        self.nvme.check().map_err(DeviceError::Config)
    }

    /// Largest request body the device reads: a store of the largest key and value.
    pub(crate) fn max_frame_body(&self) -> u32 {
        self.max_value_len
            .saturating_add(self.max_key_len)
            .saturating_add(2)
    }

    /// The least `max_reply_bytes` may be: a get of the largest value, and the largest
    /// iterator batch or find page (budgeted at `max_iter_batch_bytes` of keys and values,
    /// at least a byte of each record's key and value, as much again in lengths), each with
    /// its one record allowed past the budget and a summary.
    pub(crate) fn min_reply_bytes(&self) -> u64 {
        u64::from(self.max_frame_body()) + 4 * u64::from(self.max_iter_batch_bytes) + (64 << 10)
    }

    /// The bound on a reply's body: `max_reply_bytes`, or unset, 8 MiB or
    /// `min_reply_bytes` if larger.
    pub(crate) fn reply_bytes_bound(&self) -> u32 {
        self.max_reply_bytes.unwrap_or_else(|| {
            u32::try_from(self.min_reply_bytes().max(8 << 20)).unwrap_or(u32::MAX)
        })
    }

    /// Worker threads to start: `workers`, or one per CPU when it is 0.
    pub(crate) fn worker_threads(&self) -> usize {
        if self.workers > 0 {
            self.workers
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        }
    }

    /// The value read-ahead of device iterators.
    pub(crate) fn iterator_prefetch_degree(&self) -> usize {
        self.iterator_prefetch_degree.unwrap_or(match self.storage {
            StorageChoice::Nand => 8,
            StorageChoice::Posix => 0,
        })
    }

    pub(crate) fn engine_options(&self) -> Options {
        let mut o = Options::default();
        o.sync = self.sync;
        o.memtable_bytes = self.engine.memtable_bytes;
        o.cache_bytes = self.engine.cache_bytes;
        o.cache_filters_and_indexes = self.engine.cache_filters_and_indexes;
        o.row_cache_bytes = self.engine.row_cache_bytes;
        o.point_index_memory_bytes = self.engine.point_index_memory_bytes;
        o.background_threads = self.engine.background_threads;
        o.mmap_reads = self.engine.mmap_reads;
        o.max_open_files = self.engine.max_open_files;
        o.reserve_bytes = self.engine.reserve_bytes;
        o.max_indexes_per_namespace = self.engine.max_indexes_per_namespace;
        o.vlog_gc_dead_ratio = self.engine.vlog_gc_dead_ratio;
        o.snapshot_max_age = match self.engine.snapshot_max_age_ms {
            0 => None,
            ms => Some(std::time::Duration::from_millis(ms)),
        };
        if self.engine.layout == "shared" {
            o.layout = cerberus_engine::Layout::Shared;
        }
        o
    }

    /// The storage the engine is opened on (with [`engine_options`](Self::engine_options)).
    pub(crate) fn engine_storage(&self) -> StorageKind {
        match self.storage {
            StorageChoice::Nand => StorageKind::Nand(Default::default()),
            StorageChoice::Posix => StorageKind::Posix,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_overrides_defaults_and_rejects_unknown_keys() {
        let c: DeviceConfig = toml::from_str(
            "listen = \"127.0.0.1:9999\"\nstorage = \"nand\"\n[engine]\nlayout = \"shared\"\n",
        )
        .unwrap();
        assert_eq!(c.listen, "127.0.0.1:9999");
        assert_eq!(c.storage, StorageChoice::Nand);
        assert_eq!(c.max_key_len, 255);
        assert!(c.validate().is_ok());
        assert!(toml::from_str::<DeviceConfig>("lisen = \"x\"").is_err());
    }

    #[test]
    fn max_held_bytes_is_the_devices_not_the_nvme_targets() {
        let c: DeviceConfig = toml::from_str("max_held_bytes = 16777216\n").unwrap();
        assert_eq!(c.max_held_bytes, 16 << 20);
        assert!(c.validate().is_ok());
        assert_eq!(DeviceConfig::default().max_held_bytes, 256 << 20);
        let moved = toml::from_str::<DeviceConfig>("[nvme]\nmax_held_bytes = 16777216\n");
        assert!(moved.is_err(), "the key moved to the top level");
        // Below one NVMe/TCP queue's own bound (4 MiB).
        let small = DeviceConfig {
            max_held_bytes: 1 << 20,
            ..DeviceConfig::default()
        };
        assert!(small.validate().is_err());
    }

    #[test]
    fn max_open_files_reaches_the_engine() {
        let c: DeviceConfig = toml::from_str("[engine]\nmax_open_files = 300\n").unwrap();
        assert_eq!(c.engine_options().max_open_files, 300);
        assert!(!c.engine_options().cache_filters_and_indexes);
        let toml = "[engine]\ncache_filters_and_indexes = true\n";
        let c: DeviceConfig = toml::from_str(toml).unwrap();
        assert!(c.engine_options().cache_filters_and_indexes);
        let d = DeviceConfig::default().engine_options();
        assert_eq!(d.max_open_files, Options::default().max_open_files);
    }

    #[test]
    fn row_cache_is_off_unless_set() {
        let d = DeviceConfig::default();
        assert_eq!(d.engine_options().row_cache_bytes, 0);
        assert_eq!(Options::default().row_cache_bytes, 0);
        let c: DeviceConfig = toml::from_str("[engine]\nrow_cache_bytes = 33554432\n").unwrap();
        assert!(c.validate().is_ok());
        assert_eq!(c.engine_options().row_cache_bytes, 32 << 20);
        let pi: DeviceConfig =
            toml::from_str("[engine]\npoint_index_memory_bytes = 1048576\n").unwrap();
        assert_eq!(pi.engine_options().point_index_memory_bytes, 1 << 20);
        let off: DeviceConfig = toml::from_str("[engine]\nrow_cache_bytes = 0\n").unwrap();
        assert!(off.validate().is_ok());
        assert_eq!(off.engine_options().row_cache_bytes, 0);
        let tiny: DeviceConfig = toml::from_str("[engine]\nrow_cache_bytes = 4096\n").unwrap();
        assert!(tiny.validate().is_err());
    }

    #[test]
    fn validation_catches_bad_limits() {
        let c = DeviceConfig {
            tls_cert: Some("c.pem".into()),
            ..DeviceConfig::default()
        };
        assert!(c.validate().is_err());
        let c = DeviceConfig {
            max_key_len: 0,
            ..DeviceConfig::default()
        };
        assert!(c.validate().is_err());
        // A reply bound a get of the largest value or a find page would not fit in.
        let c = DeviceConfig {
            max_reply_bytes: Some(2 << 20),
            ..DeviceConfig::default()
        };
        assert!(c.validate().is_err());
        let c = DeviceConfig {
            max_query_results: 0,
            ..DeviceConfig::default()
        };
        assert!(c.validate().is_err());
        let mut c = DeviceConfig::default();
        c.scheduler.network_nice = -21;
        assert!(c.validate().is_err());
        c.scheduler.network_nice = -20;
        assert!(c.validate().is_ok());
        c.scheduler.background_nice = 20;
        assert!(c.validate().is_err());
        c.scheduler.background_nice = 19;
        assert!(c.validate().is_ok());
        for ratio in [-0.1, 1.5, f64::NAN] {
            c.engine.vlog_gc_dead_ratio = ratio;
            assert!(c.validate().is_err(), "{ratio}");
        }
        c.engine.vlog_gc_dead_ratio = 0.3;
        assert!(c.validate().is_ok());
        assert_eq!(c.engine_options().vlog_gc_dead_ratio, 0.3);
        assert!(DeviceConfig::default().validate().is_ok());
        assert_eq!(DeviceConfig::default().reply_bytes_bound(), 8 << 20);
        // Unset, the bound follows larger values.
        let c = DeviceConfig {
            max_value_len: 32 << 20,
            ..DeviceConfig::default()
        };
        assert!(c.validate().is_ok());
        assert!(u64::from(c.reply_bytes_bound()) >= c.min_reply_bytes());
    }

    #[test]
    fn the_toml_file_sets_the_target_and_its_grants() {
        let c: DeviceConfig = toml::from_str(
            "nvme_listen = \"127.0.0.1:4420\"\n[nvme]\nin_capsule_bytes = 16384\n\
             [nvme.hosts]\n\"nqn.h:1\" = [\"orders\", \"7\"]\n",
        )
        .unwrap();
        assert_eq!(c.nvme_listen.as_deref(), Some("127.0.0.1:4420"));
        assert_eq!(c.nvme.in_capsule_bytes, 16384);
        assert_eq!(c.nvme.hosts["nqn.h:1"], vec!["orders", "7"]);
        assert!(nvme::grant_matches("id:7", "orders", 7));
        assert!(nvme::grant_matches("7", "7", 9), "a name");
        assert!(!nvme::grant_matches("7", "orders", 7), "never also an id");
        assert!(!nvme::grant_matches("id:7", "7", 9));
        assert!(nvme::grant_matches("*", "x", 1));
        assert!(c.validate().is_ok());
        assert!(DeviceConfig::default().nvme_listen.is_none());
        let mut bad = DeviceConfig::default();
        bad.nvme.in_capsule_bytes = 512; // a Connect's 1,024 bytes would not fit
        assert!(bad.validate().is_err());
        assert!(toml::from_str::<DeviceConfig>("[nvme]\nmax_conections = 1\n").is_err());
    }
}
