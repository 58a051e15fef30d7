//! A version: the immutable set of tables per level and the namespace runs.

use super::edit::VersionEdit;
use super::table_handle::{TableCtx, TableHandle};
use std::sync::Arc;

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
