//! Namespace handles: what applications read and write through, as RocksDB's column family
//! handles and fjall's keyspaces. A handle holds its namespace's entry, so an operation needs
//! no lookup by id; once the namespace is destroyed every operation on a handle returns
//! [`Error::UnknownNamespace`](crate::error::Error::UnknownNamespace).

use super::index_set::IndexInfo;
use super::inner::Inner;
use super::namespace_set::NsEntry;
use super::read_only::set_read_only;
use crate::batch::{BatchOp, WriteBatch};
use crate::error::Result;
use crate::index::IndexKind;
use crate::key::{Kind, Nsid};
use crate::namespace_options::NamespaceOptions;
use crate::options::WriteOptions;
use crate::space::Usage;
use crate::stats::{GetPath, NamespaceStats};
use std::sync::Arc;

/// One namespace of a [`Db`](super::database::Db): its writes here, its reads (at the newest state) those
/// of [`Readable`](super::readable::Readable). Cheap to clone and to send between threads; it keeps the
/// database's state alive, and fails with [`Error::Closed`](crate::error::Error::Closed)
/// once the database is closed.
#[derive(Clone)]
pub struct Namespace {
    pub(super) inner: Arc<Inner>,
    pub(super) entry: Arc<NsEntry>,
    pub(super) write_options: WriteOptions,
    /// Most units of work one query through this handle may take (`with_query_work_limit`).
    pub(super) query_work: Option<u64>,
}

impl std::fmt::Debug for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Namespace")
            .field("id", &self.entry.id)
            .field("name", &self.entry.name)
            .field("write_options", &self.write_options)
            .field("query_work", &self.query_work)
            .finish()
    }
}

impl Namespace {
    pub(super) fn new(inner: Arc<Inner>, entry: Arc<NsEntry>) -> Namespace {
        Namespace {
            inner,
            entry,
            write_options: WriteOptions::default(),
            query_work: None,
        }
    }

    /// The namespace's id (never reused).
    pub fn id(&self) -> Nsid {
        self.entry.id
    }

    /// The name the namespace was created with.
    pub fn name(&self) -> &str {
        &self.entry.name
    }

    /// This handle with other options for its writes (for example `sync`); the original
    /// keeps its own.
    pub fn with_write_options(&self, options: WriteOptions) -> Namespace {
        Namespace {
            write_options: options,
            ..self.clone()
        }
    }

    /// This handle with a limit on the work of each query through it (find, top, aggregate,
    /// get_by_secondary; snapshots taken from it keep the limit): a query that would examine
    /// more than `units` live index entries, counting each record it reads as
    /// [`RECORD_WORK`](crate::RECORD_WORK) entries, stops with [`Error::WorkLimit`](crate::Error::WorkLimit) and
    /// returns nothing. The charge depends on the data the query sees, never on where flushes
    /// and compactions left it (docs/queries.md, Work limits). For a caller that answers small
    /// queries where it stands and hands the others to threads of their own (the device's
    /// network threads do).
    pub fn with_query_work_limit(&self, units: u64) -> Namespace {
        Namespace {
            query_work: Some(units),
            ..self.clone()
        }
    }

    /// Sets `key` to `value`, replacing any value it had.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.apply(&[(Kind::Put, key, value)])
    }

    /// Deletes `key`; deleting a key that has no value is not an error.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.apply(&[(Kind::Delete, key, &[])])
    }

    /// Applies every write of `batch`, or none of them, even across a crash.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        let ops: Vec<(Kind, &[u8], &[u8])> = batch
            .ops
            .iter()
            .map(|op| match op {
                BatchOp::Put { key, value } => (Kind::Put, key.as_slice(), value.as_slice()),
                BatchOp::Delete { key } => (Kind::Delete, key.as_slice(), &[][..]),
            })
            .collect();
        self.apply(&ops)
    }

    fn apply(&self, ops: &[(Kind, &[u8], &[u8])]) -> Result<()> {
        self.inner
            .write_path()
            .write(&self.entry, ops, self.write_options.sync)
    }

    /// Creates a secondary index on the JSON attribute `attr` (a top-level name, or dotted
    /// names into embedded objects: `user.id`), and returns once it holds every record
    /// (writes go on meanwhile and index themselves). Values that are not JSON, or hold no
    /// scalar at `attr`, are not indexed. One index per attribute.
    pub fn create_index(&self, attr: &str, kind: IndexKind) -> Result<()> {
        self.inner.check_open()?;
        let id = self.inner.index_admin().register(&self.entry, attr, kind)?;
        self.inner
            .backfiller()
            .backfill_in_background(&self.entry, id)
    }

    /// Drops the index on `attr`; [`Error::UnknownIndex`](crate::error::Error::UnknownIndex)
    /// if there is none.
    pub fn drop_index(&self, attr: &str) -> Result<()> {
        self.inner.check_open()?;
        let admin = self.inner.index_admin();
        let id = admin.unlink(&self.entry, attr)?;
        admin.unlinked(id, self.inner.namespace_admin().drop_trees(&[id]))
    }

    /// This namespace's indexes.
    pub fn list_indexes(&self) -> Result<Vec<IndexInfo>> {
        self.inner.index_admin().list(&self.entry)
    }

    /// The namespace's settings: its capacity and I/O shares.
    pub fn options(&self) -> NamespaceOptions {
        *self.entry.options.read()
    }

    /// Gives the namespace new settings (validated, kept in the manifest). A capacity below
    /// what it uses is allowed: it only refuses further growth until deletes give space back.
    pub fn configure(&self, options: NamespaceOptions) -> Result<()> {
        self.inner
            .namespace_admin()
            .configure_namespace(&self.entry, options)
    }

    /// Makes the namespace read-only (`true`) or writable again (`false`), kept in the
    /// manifest across restarts; setting what it is already is no error. While read-only,
    /// every write (put, delete, batch, index create or drop) fails with
    /// [`Error::NamespaceReadOnly`](crate::error::Error::NamespaceReadOnly) and writes
    /// nothing; reads, scans, iterators and queries go on. Once this returns with `true`,
    /// every write acknowledged before it is readable, and none is acknowledged after.
    pub fn set_read_only(&self, read_only: bool) -> Result<()> {
        let inner = &self.inner;
        inner.check_open()?;
        set_read_only(&inner.versions, &inner.writes, &self.entry, read_only)?;
        if read_only {
            // Writes queued before the flag held are done (committed to the memtable, or
            // failed and not acknowledged) once they have left the queue.
            inner.writes.wait_queued();
        }
        Ok(())
    }

    /// Whether the namespace refuses writes ([`set_read_only`](Self::set_read_only)).
    pub fn is_read_only(&self) -> bool {
        self.entry.is_read_only()
    }

    /// Its space and settings (what `stats().space` shows), without the rest of the stats.
    pub fn space(&self) -> Result<crate::space::NamespaceSpace> {
        self.inner.quotas().namespace_space(&self.entry)
    }

    /// Flushes, then returns the live bytes kept (what `stats().space` shows) and a recount
    /// of the same tables (its records and index entries scanned), equal unless the
    /// accounting is wrong: background writes (a value-log GC's) cannot come between them.
    pub fn check_usage(&self) -> Result<(Usage, Usage)> {
        self.inner.quotas().recount_usage(&self.entry)
    }

    /// The tables a get of `key` would consult now below the memtables, level by level:
    /// the tree's shape as one key meets it (its filter loads without a cache).
    pub fn get_path(&self, key: &[u8]) -> Result<GetPath> {
        self.entry.check_live()?;
        self.inner.reader().get_path(self.entry.id, key)
    }

    /// Counters, tree shape, space and settings of this namespace.
    pub fn stats(&self) -> Result<NamespaceStats> {
        let mut s = self.inner.namespace_admin().namespace_stats(&self.entry)?;
        s.space = self.inner.quotas().namespace_space(&self.entry)?;
        Ok(s)
    }

    /// Compacts every table of this namespace holding keys in `[start, end]` (`None` =
    /// unbounded) down to the deepest level that has data.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.entry.check_live()?;
        self.inner
            .compactions()
            .compact_range(Some(self.entry.id), start, end)?;
        // Its compaction of the shared L0 may have dropped a destroyed id's last entries.
        self.inner.namespace_admin().forget_destroyed_quietly();
        Ok(())
    }
}
