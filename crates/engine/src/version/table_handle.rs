//! A table as a version holds it: its properties, the context that opens it, and the
//! deletion of its file once no version holds it.

use crate::error::Result;
use crate::key::ikey_user;
use crate::stats::Counters;
use crate::storage::StorageRef;
use crate::table::{table_name, BlockCache, TableCache, TableProps, TableReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a table handle needs to open its file and to clean up after itself.
#[derive(Clone)]
pub struct TableCtx {
    pub storage: StorageRef,
    pub cache: Arc<BlockCache>,
    pub counters: Arc<Counters>,
    /// The open tables (`Options::max_open_files`).
    pub readers: Arc<TableCache>,
}

impl TableCtx {
    /// A context over `storage` whose tables share the block cache `cache` and count their
    /// reads in `counters`; at most about `max_open_files` tables are kept open.
    pub fn new(
        storage: StorageRef,
        cache: Arc<BlockCache>,
        counters: Arc<Counters>,
        max_open_files: usize,
    ) -> TableCtx {
        TableCtx {
            storage,
            cache,
            counters,
            readers: Arc::new(TableCache::new(max_open_files)),
        }
    }
}

/// A table in some version. The file is deleted when the last version holding it goes away
/// after the table was dropped from the current version. Its reader (and open file) lives
/// in the table cache, [`TableCtx::readers`].
pub struct TableHandle {
    pub props: TableProps,
    obsolete: AtomicBool,
    ctx: TableCtx,
}

impl TableHandle {
    pub fn new(props: TableProps, ctx: TableCtx) -> Arc<TableHandle> {
        Arc::new(TableHandle {
            props,
            obsolete: AtomicBool::new(false),
            ctx,
        })
    }

    pub fn id(&self) -> u64 {
        self.props.id
    }

    /// The open table from the table cache, opened if the cache does not hold it. The file
    /// stays open while the answer is held, whatever the cache evicts meanwhile.
    pub fn reader(&self) -> Result<Arc<TableReader>> {
        self.ctx.readers.get_or_open(self.props.id, || {
            TableReader::open(
                self.ctx.storage.as_ref(),
                self.props.id,
                self.ctx.cache.clone(),
                self.ctx.counters.clone(),
            )
        })
    }

    /// The open table if the table cache holds it: nothing is opened.
    pub fn open_reader(&self) -> Option<Arc<TableReader>> {
        self.ctx.readers.get_open(self.props.id)
    }

    /// Smallest `nsid ++ user key`.
    pub fn smallest_user(&self) -> &[u8] {
        ikey_user(&self.props.smallest)
    }

    /// Largest `nsid ++ user key`.
    pub fn largest_user(&self) -> &[u8] {
        ikey_user(&self.props.largest)
    }

    /// Whether the table's key range covers `user`.
    pub fn covers(&self, user: &[u8]) -> bool {
        self.smallest_user() <= user && user <= self.largest_user()
    }

    pub fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest_user() <= hi && lo <= self.largest_user()
    }

    /// The namespace of every key in the table, if there is only one.
    pub fn only_namespace(&self) -> Option<crate::key::Nsid> {
        let lo = crate::key::ikey_nsid(&self.props.smallest);
        (lo == crate::key::ikey_nsid(&self.props.largest)).then_some(lo)
    }

    /// Entries (versions and tombstones) of namespace `ns` in the table; a table of several
    /// namespaces is opened to read its namespace table.
    pub fn entries_of(&self, ns: crate::key::Nsid) -> Result<u64> {
        if !self.may_hold_namespace(ns) {
            return Ok(0);
        }
        if self.only_namespace() == Some(ns) {
            return Ok(self.props.entries);
        }
        let r = self.reader()?;
        Ok(r.nstable()
            .iter()
            .filter(|n| n.nsid == ns)
            .map(|n| n.count)
            .sum())
    }

    /// Whether the table's key range reaches into namespace `ns`.
    pub fn may_hold_namespace(&self, ns: crate::key::Nsid) -> bool {
        let lo = crate::key::ikey_nsid(&self.props.smallest);
        let hi = crate::key::ikey_nsid(&self.props.largest);
        lo <= ns && ns <= hi
    }

    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }
}

impl Drop for TableHandle {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            self.ctx.cache.evict_table(self.props.id);
            self.ctx.readers.evict(self.props.id);
            let name = table_name(self.props.id);
            if let Err(e) = self.ctx.storage.delete(&name) {
                tracing::warn!(file = %name, error = %e, "could not delete obsolete table");
            }
        }
    }
}
