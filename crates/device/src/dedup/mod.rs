//! The deduplication service, the BTS paper's background storage service: after a write,
//! a background task splits the key's value into chunks, names each by a digest and keeps a
//! chunk index with reference counts (offline deduplication: writes are acknowledged first).
//! It measures what deduplication would save; values stay whole in the value log.
//!
//! A task names a key, not a value: it reads the key's value when it runs, under a lock of
//! that key, so tasks of one key may run in any order and on any core and the index still
//! ends up describing the value stored last (each write queues its task after it is applied).
//! The index is saved on a clean stop with the tasks still queued, and loaded (then deleted)
//! at start; after a crash there is no file and it is rebuilt from the stored values.
//!
//! The backlog is bounded (`max_backlog`): where background work cannot keep up (idle cores
//! at the idle class under a full CPU), a write past the bound queues nothing and marks its
//! namespace instead. Once the backlog is down to half the bound, each marked namespace is
//! rescanned: its index dropped and rebuilt from its stored keys, a page at a time, each page
//! queued behind the keys of the one before, so a rescan adds a page to the backlog, not a
//! namespace.

pub mod chunk;
mod index;
mod persist;
mod work;

use bytes::Bytes;
use cerberus_engine::Readable;
use cerberus_engine::{Db, Error as EngineError, ErrorKind, ReadOptions};
pub use chunk::{ChunkHash, Chunker, Chunking};
pub use index::{NsDedupStats, NsIndex};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
pub use work::DedupWork;

/// The service's settings (`[dedup]` in the device's TOML file).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DedupConfig {
    /// Off by default: every write then costs a chunking pass in the background.
    pub enabled: bool,
    /// Where chunk boundaries fall (default fixed).
    pub chunking: Chunking,
    /// How chunks are named (default SHA-1).
    pub hash: ChunkHash,
    /// Fixed chunk size, or the average for content-defined chunks.
    pub chunk_bytes: u32,
    /// Tasks queued at most (each holds its key, ~100 bytes more); past it, writes mark
    /// their namespace for a rescan instead.
    pub max_backlog: u64,
}

impl Default for DedupConfig {
    fn default() -> Self {
        let c = Chunker::default();
        DedupConfig {
            enabled: false,
            chunking: c.chunking,
            hash: c.hash,
            chunk_bytes: c.chunk_bytes,
            max_backlog: DEFAULT_MAX_BACKLOG,
        }
    }
}

/// ~30 MB of queued tasks with 16-byte keys.
pub const DEFAULT_MAX_BACKLOG: u64 = 262_144;

impl DedupConfig {
    /// The chunker these settings describe.
    pub(crate) fn chunker(&self) -> Chunker {
        Chunker {
            chunking: self.chunking,
            hash: self.hash,
            chunk_bytes: self.chunk_bytes,
        }
    }
}

/// Keys a scan task lists before it queues the next page: a task runs to the end on its
/// core, so each stays short.
const SCAN_PAGE: usize = 64;
const KEY_LOCKS: usize = 256;

pub struct Dedup {
    chunker: Chunker,
    indexes: Mutex<HashMap<u32, NsIndex>>,
    key_locks: Vec<Mutex<()>>,
    /// Tasks queued and not yet run.
    backlog: AtomicU64,
    max_backlog: u64,
    /// Namespaces whose writes found the backlog full: rescanned once it is half empty.
    shed: Mutex<BTreeSet<u32>>,
    shed_tasks: AtomicU64,
    rescans: AtomicU64,
    tasks_run: AtomicU64,
    hashed_bytes: AtomicU64,
    hash_ns: AtomicU64,
}

/// The service as the device's stats report it.
#[derive(Clone, Debug, Serialize)]
pub struct DedupStats {
    /// How values are chunked and named.
    pub chunker: Chunker,
    /// Tasks queued and not yet run.
    pub backlog: u64,
    /// The bound on `backlog` past which writes queue no task.
    pub max_backlog: u64,
    /// Writes that found the backlog full (their namespaces rescanned instead).
    pub shed_tasks: u64,
    /// Rescans started for namespaces whose writes were shed.
    pub rescans: u64,
    /// Namespaces waiting for a rescan (until the backlog is down to half its bound).
    pub rescans_pending: usize,
    /// Tasks run since the device started.
    pub tasks_run: u64,
    /// Bytes chunked and hashed.
    pub hashed_bytes: u64,
    /// The rate of chunking and hashing alone, in MB (10^6 bytes) per second of one core.
    pub hash_mb_per_s: f64,
    /// All namespaces together (`dedup_ratio` over the sums).
    pub total: NsDedupStats,
    /// Each namespace with an index, by id.
    pub namespaces: BTreeMap<u32, NsDedupStats>,
}

impl Dedup {
    pub fn new(chunker: Chunker) -> Dedup {
        Dedup {
            chunker,
            indexes: Mutex::default(),
            key_locks: (0..KEY_LOCKS).map(|_| Mutex::new(())).collect(),
            backlog: AtomicU64::new(0),
            max_backlog: DEFAULT_MAX_BACKLOG,
            shed: Mutex::default(),
            shed_tasks: AtomicU64::new(0),
            rescans: AtomicU64::new(0),
            tasks_run: AtomicU64::new(0),
            hashed_bytes: AtomicU64::new(0),
            hash_ns: AtomicU64::new(0),
        }
    }

    /// The service holding `indexes` (loaded from a saved index).
    fn holding(chunker: Chunker, indexes: HashMap<u32, NsIndex>) -> Dedup {
        Dedup {
            indexes: Mutex::new(indexes),
            ..Dedup::new(chunker)
        }
    }

    /// At most `n` (at least 1) tasks queued by writes.
    pub fn with_max_backlog(mut self, n: u64) -> Dedup {
        self.max_backlog = n.max(1);
        self
    }

    #[cfg(test)]
    pub fn chunker(&self) -> Chunker {
        self.chunker
    }

    /// Whether a write's task `w` may be queued: not past the bound, nor for a namespace a
    /// rescan will cover anyway. A task refused marks its namespace for that rescan.
    pub fn admit(&self, w: &DedupWork) -> bool {
        let DedupWork::Key { ns, .. } = w else {
            return true;
        };
        let mut shed = self.shed.lock();
        if !shed.contains(ns) && self.backlog() < self.max_backlog {
            return true;
        }
        shed.insert(*ns);
        self.shed_tasks.fetch_add(1, Relaxed);
        false
    }

    /// The rescans owed to namespaces that shed tasks, taken (at a stop, to be saved).
    pub fn take_rescans(&self) -> Vec<DedupWork> {
        std::mem::take(&mut *self.shed.lock())
            .into_iter()
            .map(|ns| DedupWork::Scan { ns, after: None })
            .collect()
    }

    /// A task was queued (the scheduler calls this; `done` counts it off).
    pub fn queued(&self) {
        self.backlog.fetch_add(1, Relaxed);
    }

    /// A queued task will not run (the scheduler dropped it, e.g. at a stop that saves it).
    pub fn dropped(&self) {
        self.backlog.fetch_sub(1, Relaxed);
    }

    pub fn backlog(&self) -> u64 {
        self.backlog.load(Relaxed)
    }

    /// Runs one queued task; the tasks it makes (a scan's) go to `more`.
    pub fn run(
        &self,
        db: &Db,
        work: DedupWork,
        more: &mut dyn FnMut(DedupWork),
    ) -> Result<(), EngineError> {
        let r = self.run_inner(db, work, more);
        self.tasks_run.fetch_add(1, Relaxed);
        self.backlog.fetch_sub(1, Relaxed);
        for w in self.rescans_due() {
            more(w);
        }
        r
    }

    /// The rescans to queue now: those owed, once the backlog is down to half its bound.
    /// Called after each task and after each refused one (the backlog may have drained
    /// between the refusal's look and its mark, and no task would come to see the mark).
    pub fn rescans_due(&self) -> Vec<DedupWork> {
        if self.backlog() > self.max_backlog / 2 || self.shed.lock().is_empty() {
            return Vec::new();
        }
        let due = self.take_rescans();
        self.rescans.fetch_add(due.len() as u64, Relaxed);
        due
    }

    fn run_inner(
        &self,
        db: &Db,
        work: DedupWork,
        more: &mut dyn FnMut(DedupWork),
    ) -> Result<(), EngineError> {
        match work {
            DedupWork::Key { ns, key } => self.index_key(db, ns, &key),
            DedupWork::Scan { ns, after } => {
                if after.is_none() {
                    // Entries of keys deleted since are dropped with the rest; what is
                    // stored is indexed again by the pages and the writes' own tasks.
                    self.indexes.lock().remove(&ns);
                }
                let handle = match db.namespace(ns) {
                    Ok(h) => h,
                    Err(e) if e.kind() == ErrorKind::UnknownNamespace => return Ok(()),
                    Err(e) => return Err(e),
                };
                let mut it = handle.iter(ReadOptions {
                    keys_only: true,
                    ..ReadOptions::default()
                })?;
                if let Some(a) = &after {
                    // The smallest key after `a`.
                    let mut next = a.to_vec();
                    next.push(0);
                    it.seek(&next)?;
                }
                let mut last = None;
                for entry in it.take(SCAN_PAGE) {
                    let (k, _) = entry?;
                    more(DedupWork::Key { ns, key: k.clone() });
                    last = Some(k);
                }
                if let Some(after) = last {
                    more(DedupWork::Scan {
                        ns,
                        after: Some(after),
                    });
                }
                Ok(())
            }
            DedupWork::Forget { ns } => {
                self.indexes.lock().remove(&ns);
                self.shed.lock().remove(&ns);
                Ok(())
            }
        }
    }

    fn index_key(&self, db: &Db, ns: u32, key: &[u8]) -> Result<(), EngineError> {
        let _key = self.key_locks[lock_index(ns, key)].lock();
        let value = match db.namespace(ns) {
            Ok(h) => h.get(key)?,
            Err(e) if e.kind() == ErrorKind::UnknownNamespace => {
                self.indexes.lock().remove(&ns);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let chunks = value.map(|v| {
            let t = quanta::Instant::now();
            let mut out =
                Vec::with_capacity(v.len() / self.chunker.chunk_bytes.max(1) as usize + 1);
            self.chunker.chunks(&v, |d, n| out.push((d, n)));
            self.hash_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
            self.hashed_bytes.fetch_add(v.len() as u64, Relaxed);
            out
        });
        let mut indexes = self.indexes.lock();
        // Destroyed while the value was chunked: its `Forget` (queued after the engine's
        // destroy, under this lock) may have run already, and the index must stay gone.
        if db.namespace(ns).is_err() {
            indexes.remove(&ns);
            return Ok(());
        }
        indexes.entry(ns).or_default().set(key, chunks.as_deref());
        Ok(())
    }

    pub fn stats(&self) -> DedupStats {
        let namespaces: BTreeMap<u32, NsDedupStats> = self
            .indexes
            .lock()
            .iter()
            .map(|(ns, ix)| (*ns, ix.stats()))
            .collect();
        let mut total = NsDedupStats::default();
        for s in namespaces.values() {
            total.keys += s.keys;
            total.chunks += s.chunks;
            total.unique_chunks += s.unique_chunks;
            total.logical_bytes += s.logical_bytes;
            total.unique_bytes += s.unique_bytes;
        }
        total.dedup_ratio = index::ratio(total.logical_bytes, total.unique_bytes);
        let (bytes, ns) = (self.hashed_bytes.load(Relaxed), self.hash_ns.load(Relaxed));
        DedupStats {
            chunker: self.chunker,
            backlog: self.backlog(),
            max_backlog: self.max_backlog,
            shed_tasks: self.shed_tasks.load(Relaxed),
            rescans: self.rescans.load(Relaxed),
            rescans_pending: self.shed.lock().len(),
            tasks_run: self.tasks_run.load(Relaxed),
            hashed_bytes: bytes,
            hash_mb_per_s: if ns == 0 {
                0.0
            } else {
                bytes as f64 / ns as f64 * 1e3
            },
            total,
            namespaces,
        }
    }

    /// Each indexed key of `ns` with its chunks' reference counts, for checks against a
    /// reference recomputed from the stored values.
    #[cfg(test)]
    pub fn snapshot(&self, ns: u32) -> Option<(NsDedupStats, HashMap<[u8; 20], u32>)> {
        let ix = self.indexes.lock();
        let i = ix.get(&ns)?;
        Some((i.stats(), i.refcounts()))
    }

    /// Writes the index and the tasks still queued to `path` (atomically: a temporary file
    /// renamed over it).
    pub fn save(&self, path: &Path, pending: &[DedupWork]) -> std::io::Result<()> {
        persist::save(self.chunker, &self.indexes, path, pending)
    }

    /// The service in the data directory `data_dir` as `config` asks for it (`wanted`: the
    /// device runs background work), with the tasks to queue first: those a clean stop
    /// saved, or a scan of every namespace (a rebuild) when nothing was saved. A device
    /// started without the service forgets a saved index: it would miss the writes made
    /// meanwhile.
    pub fn open(
        db: &Db,
        data_dir: &Path,
        config: &DedupConfig,
        wanted: bool,
    ) -> (Option<Dedup>, Vec<DedupWork>) {
        let path = index_path(data_dir);
        if !config.enabled || !wanted {
            remove_file(&path);
            return (None, Vec::new());
        }
        let (chunker, max) = (config.chunker(), config.max_backlog);
        if let Some((d, pending)) = Dedup::load(&path, chunker) {
            tracing::info!(queued = pending.len(), "dedup index loaded");
            return (Some(d.with_max_backlog(max)), pending);
        }
        let scans = db
            .list_namespaces()
            .into_iter()
            .filter(|n| n.nsid != 0)
            .map(|n| DedupWork::Scan {
                ns: n.nsid,
                after: None,
            })
            .collect();
        (Some(Dedup::new(chunker).with_max_backlog(max)), scans)
    }

    /// The service from the file a clean stop left, with its queued tasks, if the file is
    /// whole and made with `chunker`; the file is removed, so that a crash from now on
    /// rebuilds. `None` (rebuild) when there is no usable file.
    pub fn load(path: &Path, chunker: Chunker) -> Option<(Dedup, Vec<DedupWork>)> {
        let loaded = persist::load(path, chunker).map(|found| {
            found.map(|(indexes, pending)| (Dedup::holding(chunker, indexes), pending))
        });
        remove_file(path);
        match loaded {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "dedup index not loaded: rebuilt from the stored values");
                None
            }
        }
    }
}

/// Decodes `data` as a saved index's body after the checksum (the fuzz target's entry):
/// never a panic, and what decodes must hold together: dropping every key's recipe leaves
/// each namespace's index empty. True when it decoded.
pub(crate) fn fuzz_decode(data: &[u8]) -> bool {
    let chunker = Chunker::default();
    let mut body = Vec::with_capacity(data.len() + 6);
    persist::put_chunker(&mut body, chunker);
    body.extend_from_slice(data);
    let Some(Some((indexes, _pending))) = persist::decode(&body, chunker) else {
        return false;
    };
    let dedup = Dedup::holding(chunker, indexes);
    let _ = dedup.stats();
    for ix in dedup.indexes.lock().values_mut() {
        let s = ix.stats();
        assert!(
            s.unique_chunks <= s.chunks && s.unique_bytes <= s.logical_bytes,
            "{s:?}"
        );
        ix.clear_keys();
        let empty = NsDedupStats {
            dedup_ratio: 1.0,
            ..NsDedupStats::default()
        };
        assert_eq!(ix.stats(), empty);
    }
    true
}

/// Saved indexes' bodies as [`fuzz_decode`] takes them (past the chunker): seeds for the
/// fuzz target's corpus, made by the service's own encoder.
pub(crate) fn fuzz_seeds() -> Vec<Vec<u8>> {
    let shapes: [&[(u8, u32)]; 3] = [&[], &[(1, 100)], &[(1, 100), (2, 7), (1, 100), (3, 4096)]];
    let mut seeds = Vec::new();
    for (n, pending) in [(1usize, 0usize), (3, 3)] {
        let dedup = Dedup::new(Chunker::default());
        for ns in 0..n as u32 {
            let mut ix = NsIndex::default();
            for (k, chunks) in shapes.iter().enumerate() {
                let chunks: Vec<_> = chunks.iter().map(|&(d, len)| ([d; 20], len)).collect();
                ix.set(&[b'k', k as u8], Some(&chunks));
            }
            dedup.indexes.lock().insert(ns + 3, ix);
        }
        let work = [
            DedupWork::Key {
                ns: 3,
                key: Bytes::from_static(b"k"),
            },
            DedupWork::Scan { ns: 3, after: None },
            DedupWork::Forget { ns: 4 },
        ];
        seeds.push(persist::encode(dedup.chunker, &dedup.indexes, &work[..pending])[6..].to_vec());
    }
    seeds
}

/// Removes `path` and makes the removal durable.
pub fn remove_file(path: &Path) {
    if std::fs::remove_file(path).is_ok() {
        if let Some(dir) = path.parent() {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
    }
}

/// Where the device keeps the saved index.
pub fn index_path(data_dir: &Path) -> PathBuf {
    data_dir.join("dedup.index")
}

fn lock_index(ns: u32, key: &[u8]) -> usize {
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(key, u64::from(ns));
    h as usize % KEY_LOCKS
}

#[cfg(test)]
mod tests;
