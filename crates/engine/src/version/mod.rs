//! Versions: the immutable set of tables per level, the edits that move from one version to
//! the next, and the manifest that logs those edits.

mod edit;
mod manifest;
mod namespaces;

pub use edit::VersionEdit;
pub(crate) use manifest::append_record;
pub use manifest::{Recovered, VersionSet};
pub use namespaces::{IndexDef, Namespaces};

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

/// The level number edits use for namespace runs (see [`Version::runs`]).
pub const RUNS: usize = u32::MAX as usize;

/// The tables of the database at one moment. L0 is ordered newest first and its tables may
/// overlap; deeper levels are ordered by key and do not overlap.
#[derive(Clone, Default)]
pub struct Version {
    pub levels: Vec<Vec<Arc<TableHandle>>>,
    /// Namespace runs (per-namespace layout): each is one namespace's part of the L0 tables
    /// an L0 compaction took, waiting to be merged into that namespace's L1. They sit between
    /// L0 and L1: newer than the namespace's L1, older than every table left in L0. Ordered
    /// by namespace, then newest first; runs of one namespace may overlap each other.
    pub runs: Vec<Arc<TableHandle>>,
    /// The most runs any one namespace has.
    pub max_runs: usize,
}

impl Version {
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![Vec::new(); num_levels],
            runs: Vec::new(),
            max_runs: 0,
        }
    }

    /// The runs of namespace `ns`, newest first.
    pub fn runs_of(&self, ns: crate::key::Nsid) -> &[Arc<TableHandle>] {
        let nsid = |t: &Arc<TableHandle>| crate::key::ikey_nsid(&t.props.smallest);
        let lo = self.runs.partition_point(|t| nsid(t) < ns);
        let hi = self.runs.partition_point(|t| nsid(t) <= ns);
        &self.runs[lo..hi]
    }

    fn tables_mut(&mut self, level: usize) -> Option<&mut Vec<Arc<TableHandle>>> {
        if level == RUNS {
            Some(&mut self.runs)
        } else {
            self.levels.get_mut(level)
        }
    }

    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Tables of `level` whose user range meets `[lo, hi]`.
    pub fn overlapping(&self, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<TableHandle>> {
        self.levels[level]
            .iter()
            .filter(|t| t.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// The one table of a sorted level (1 and deeper) that may hold `user`.
    pub fn find_in_level(&self, level: usize, user: &[u8]) -> Option<&Arc<TableHandle>> {
        let tables = &self.levels[level];
        let i = tables.partition_point(|t| t.largest_user() < user);
        tables.get(i).filter(|t| t.smallest_user() <= user)
    }

    /// Whether anything older than output written to `level` may hold keys in `[lo, hi]`:
    /// deeper levels, and for output into [`RUNS`] the runs already there.
    pub fn deeper_overlaps(&self, level: usize, lo: &[u8], hi: &[u8]) -> bool {
        let first = if level == RUNS { 1 } else { level + 1 };
        let runs = level == RUNS || level == 0;
        (runs && self.runs.iter().any(|t| t.overlaps(lo, hi)))
            || (first..self.levels.len()).any(|l| self.levels[l].iter().any(|t| t.overlaps(lo, hi)))
    }

    /// The version after `edit`, and the tables it drops (not re-added elsewhere). Callers
    /// mark the dropped tables obsolete once the edit is durable.
    pub fn apply(&self, edit: &VersionEdit, ctx: &TableCtx) -> (Version, Vec<Arc<TableHandle>>) {
        let mut v = self.clone();
        let mut removed = Vec::new();
        for &(level, id) in &edit.deleted {
            if let Some(tables) = v.tables_mut(level) {
                if let Some(i) = tables.iter().position(|t| t.id() == id) {
                    removed.push(tables.remove(i));
                }
            }
        }
        for (level, props) in &edit.added {
            if let Some(tables) = v.tables_mut(*level) {
                // A table moved between levels keeps its handle and its file.
                let handle = match removed.iter().position(|t| t.id() == props.id) {
                    Some(i) => removed.swap_remove(i),
                    None => TableHandle::new(props.clone(), ctx.clone()),
                };
                tables.push(handle);
            }
        }
        for (level, tables) in v.levels.iter_mut().enumerate() {
            if level == 0 {
                tables.sort_by_key(|t| std::cmp::Reverse((t.props.max_seq, t.id())));
            } else {
                tables.sort_by(|a, b| crate::key::cmp_ikey(&a.props.smallest, &b.props.smallest));
            }
        }
        v.runs.sort_by(|a, b| {
            let ns = |t: &TableHandle| crate::key::ikey_nsid(&t.props.smallest);
            ns(a)
                .cmp(&ns(b))
                .then(b.props.max_seq.cmp(&a.props.max_seq))
                .then_with(|| crate::key::cmp_ikey(&a.props.smallest, &b.props.smallest))
        });
        v.max_runs = 0;
        let mut i = 0;
        while i < v.runs.len() {
            let n = v
                .runs_of(crate::key::ikey_nsid(&v.runs[i].props.smallest))
                .len();
            v.max_runs = v.max_runs.max(n);
            i += n.max(1);
        }
        if cfg!(debug_assertions) {
            for (level, tables) in v.levels.iter().enumerate().skip(1) {
                for w in tables.windows(2) {
                    assert!(
                        w[0].largest_user() < w[1].smallest_user(),
                        "tables {} and {} overlap in L{level}",
                        w[0].id(),
                        w[1].id()
                    );
                }
            }
        }
        (v, removed)
    }

    /// All table ids of this version.
    pub fn table_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels
            .iter()
            .flatten()
            .chain(&self.runs)
            .map(|t| t.id())
    }
}
