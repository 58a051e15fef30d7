//! `Db`: the database's public face. Each call hands over to the parts (see inner.rs).

use super::gc_state::GcStats;
use super::handle::Namespace;
use super::inner::Inner;
use super::verify::VerifyReport;
use crate::error::Result;
use crate::key::{Nsid, DEFAULT_NS};
use crate::stats::{DbStats, NamespaceInfo};
use crate::storage::StorageRef;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A key-value store. Cheap to share between threads (`&Db` is enough).
pub struct Db {
    pub(super) inner: Arc<Inner>,
    pub(super) threads: Mutex<Vec<JoinHandle<()>>>,
    /// Keeps other processes out of the directory while this instance is open.
    pub(super) _lock: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Db {
    /// A handle to live namespace `ns`, or [`Error::UnknownNamespace`](crate::error::Error::UnknownNamespace).
    pub fn namespace(&self, ns: Nsid) -> Result<Namespace> {
        let entry = self.inner.namespace_admin().ns_entry(ns)?;
        Ok(Namespace::new(self.inner.clone(), entry))
    }

    /// The namespace every database has (id 0, never destroyed).
    pub fn default_namespace(&self) -> Namespace {
        self.namespace(DEFAULT_NS)
            .expect("the default namespace is never destroyed")
    }

    /// Syncs the value log: every write acknowledged so far survives a crash.
    pub fn sync_log(&self) -> Result<()> {
        self.inner.write_path().sync_log()
    }

    /// Creates a namespace with the default settings (no capacity, equal shares) and
    /// returns a handle to it. Ids are never reused.
    pub fn create_namespace(&self, name: &str) -> Result<Namespace> {
        self.create_namespace_with(name, crate::namespace_options::NamespaceOptions::default())
    }

    /// Creates a namespace with `options` (validated; kept in the manifest) and returns a
    /// handle to it.
    pub fn create_namespace_with(
        &self,
        name: &str,
        options: crate::namespace_options::NamespaceOptions,
    ) -> Result<Namespace> {
        let entry = self
            .inner
            .namespace_admin()
            .create_namespace(name, options)?;
        Ok(Namespace::new(self.inner.clone(), entry))
    }

    /// Destroys a namespace: its own tables go at once, its entries in the shared memtable
    /// and L0 become unreachable at once and are dropped by the next flush or compaction.
    /// The default namespace (0) cannot be destroyed.
    pub fn destroy_namespace(&self, ns: Nsid) -> Result<()> {
        self.inner.namespace_admin().destroy_namespace(ns)
    }

    /// The id of the live namespace called `name`: no copy of the catalog, no sort (a
    /// device resolves names for clients that have proved nothing yet).
    pub fn namespace_id(&self, name: &str) -> Option<Nsid> {
        self.inner.namespaces.read().id_of(name)
    }

    /// Live namespaces, by id.
    pub fn list_namespaces(&self) -> Vec<NamespaceInfo> {
        self.inner.namespaces.read().list()
    }

    /// Flushes, then waits until no flush, compaction or value-log GC is pending or running,
    /// as db_bench's `waitforcompaction` does: the tree is in the shape background work leaves
    /// it in, with nothing in the shared L0 or in namespace runs. Writes made during the wait
    /// are not waited for (a steady writer would keep the tree from ever settling): once
    /// they come, the call returns as soon as everything written before it has left L0 and
    /// the runs.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.settle().wait()
    }

    /// Collects the value log now: seals the active segment, flushes, then rewrites the live
    /// records of every segment holding dead ones (overwritten, deleted or destroyed) and
    /// deletes those segments.
    pub fn gc_value_log(&self) -> Result<GcStats> {
        let stats = self.inner.value_log_gc().collect_now()?;
        // Its flushes may have dropped the last entries of a destroyed id.
        self.inner.namespace_admin().forget_destroyed_quietly();
        Ok(stats)
    }

    /// Reads every table and value-log segment back and checks every checksum, and that
    /// every table entry belongs to a namespace or index the manifest knows (live, or
    /// destroyed and not yet dropped); what it found wrong is in the report (file, offset,
    /// what), nothing is repaired. Reads of the database go on meanwhile.
    pub fn verify(&self) -> Result<VerifyReport> {
        let inner = &self.inner;
        // The owners of the tables' entries as the manifest held them with this version: an
        // id leaves the live namespaces or indexes for the destroyed ones in one edit.
        let (version, owners) = {
            let vs = inner.versions.lock();
            let n = &vs.namespaces;
            let live = n.live.keys().chain(n.indexes.keys());
            (vs.current(), live.chain(&n.destroyed).copied().collect())
        };
        super::verify::verify(
            inner.storage.as_ref(),
            &version,
            &owners,
            inner.counters.page_size(),
            || inner.writes.writer.lock().vlog.position(),
        )
    }

    /// The value-log segments GC found damaged since open, with the corruption it met in
    /// each: GC keeps them (their intact values stay readable) and does not read them again.
    pub fn damaged_segments(&self) -> Vec<(u64, String)> {
        let damaged = self.inner.gc.damaged.lock();
        damaged.iter().map(|(s, e)| (*s, e.clone())).collect()
    }

    /// Writes the memtable to an L0 table and waits until it and every memtable frozen before
    /// it are flushed (not those that writes made meanwhile fill and freeze).
    pub fn flush(&self) -> Result<()> {
        self.inner.flusher().flush()
    }

    /// Compacts, in every live namespace, every table holding keys in `[start, end]`
    /// (`None` = unbounded) down to the deepest level that has data.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.compactions().compact_range(None, start, end)?;
        // It may have dropped the last entries of a destroyed id.
        self.inner.namespace_admin().forget_destroyed_quietly();
        Ok(())
    }

    /// Compacts every table of every live namespace down to the deepest level that has data
    /// (`compact_range(None, None)`).
    pub fn compact_all(&self) -> Result<()> {
        self.compact_range(None, None)
    }

    /// Makes every write durable, waits for background work and stops it. Later calls fail
    /// with [`Error::Closed`](crate::error::Error::Closed). Dropping a `Db` closes it too.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let synced = self.inner.writes.writer.lock().vlog.sync();
        {
            let mut bg = self.inner.bg.state.lock();
            bg.policy.shutdown = true;
            self.inner.wake_background();
            self.inner.bg.done_cv.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        synced
    }

    /// Counters and tree shape of the whole database: background work and every namespace,
    /// destroyed ones included.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// Whether a write made now would be slowed down or wait for background work. A caller
    /// that must not block (an event loop serving other tenants) hands its writes to a thread
    /// that may while this is not `None`.
    pub fn write_pressure(&self) -> crate::options::WritePressure {
        self.inner.write_path().write_pressure()
    }

    /// Runs the most urgent background job (a flush first, then an L0 split or a
    /// compaction, then an index backfill or value-log GC) on the calling thread, for the
    /// runner of [`Options::background_runner`](crate::options::Options::background_runner). Without one, the database's own threads
    /// call it.
    pub fn run_background_job(&self) -> crate::options::BackgroundStep {
        self.inner.jobs().run_one()
    }

    /// The storage this database lives on.
    pub fn storage(&self) -> &StorageRef {
        &self.inner.storage
    }

    /// Times a compaction started while another held the same slot: always 0 unless the
    /// scheduling is broken (tests check it).
    #[doc(hidden)]
    pub fn compaction_slot_overlaps(&self) -> u64 {
        self.inner.bg.slot_overlaps()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
