//! Compactions carried out: a task run and installed, manual compactions of a key range, the
//! consolidation of an idle namespace's tree, and the view of the tree the policy decides on.

use super::background_state::{Background, SlotGuard};
use super::dead_bytes::dead_bytes_by_segment;
use super::flush::Flusher;
use super::flush_table::output_params;
use super::gc_state::GcState;
use super::manual_slots::ManualSlots;
use super::namespace_set::NsState;
use super::versions::Versions;
use crate::background::View;
use crate::compaction::{self, CompactionTask};
use crate::error::{IoContext, Result};
use crate::key::{self, Nsid};
use crate::options::{Layout, Options};
use crate::stats::Counters;
use crate::storage::StorageRef;
use crate::uptime::Uptime;
use crate::version::{Version, RUNS};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The parts compactions touch, borrowed; the flusher flushes before a manual compaction,
/// and installs each compaction's edit.
pub(super) struct Compactions<'a, F> {
    pub(super) opts: &'a Options,
    pub(super) storage: &'a StorageRef,
    /// Counters of background work.
    pub(super) counters: &'a Arc<Counters>,
    pub(super) closed: &'a AtomicBool,
    pub(super) bg: &'a Background,
    pub(super) versions: &'a Versions,
    pub(super) namespaces: &'a RwLock<NsState>,
    pub(super) gc: &'a GcState,
    /// Milliseconds since the database opened, and at the last write (idleness).
    pub(super) uptime: &'a Uptime,
    pub(super) last_write_ms: &'a AtomicU64,
    pub(super) flusher: Flusher<'a, F>,
}

impl<F: Fn()> Compactions<'_, F> {
    /// No write for `idle_settle_ms`.
    pub(super) fn idle(&self) -> bool {
        let ms = self.opts.idle_settle_ms;
        let now = self.uptime.ms();
        ms > 0 && now.saturating_sub(self.last_write_ms.load(Ordering::Relaxed)) >= ms
    }

    /// What the policy looks at, with `version` the current one; `drain`: someone waits for
    /// the trees to settle (every namespace counts as idle).
    pub(super) fn view<'v>(&'v self, version: &'v Arc<Version>, drain: bool) -> View<'v> {
        View {
            version,
            opts: self.opts,
            frozen: self.versions.super_version().imm.len(),
            idle: self.idle(),
            idle_ns: {
                let now = self.uptime.ms();
                self.namespaces.read().idle(self.opts, now, drain)
            },
            now: std::time::Instant::now(),
        }
    }

    /// A manual compaction of `ns`, or of every live namespace.
    pub(super) fn compact_range(
        &self,
        ns: Option<Nsid>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        if let Some(ns) = ns {
            self.namespaces.read().entry(ns)?;
        }
        self.flusher.flush()?;
        let runner = self.opts.background_runner.as_ref();
        let _slots = ManualSlots::acquire(self.bg, self.closed, runner)?;
        let mut all: Vec<Nsid> = match ns {
            Some(ns) => vec![ns],
            None => self.namespaces.read().live.keys().copied().collect(),
        };
        all.sort_unstable();
        for ns in all {
            self.manual_compaction(ns, start, end)?;
        }
        Ok(())
    }

    fn manual_compaction(&self, ns: Nsid, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let lo = key::user_part(ns, start.unwrap_or_default());
        let hi = match end {
            Some(e) => key::user_part(ns, e),
            // Every key of `ns` sorts below the next namespace's prefix.
            None => match ns.checked_add(1) {
                Some(n) => n.to_be_bytes().to_vec(),
                None => vec![0xff; 5],
            },
        };
        let version = self.versions.lock().current();
        let deepest = (1..version.num_levels())
            .rev()
            .find(|&l| !version.levels[l].is_empty())
            .unwrap_or(1);
        let steps = std::iter::once(0)
            .chain((self.opts.layout == Layout::PerNamespace).then_some(RUNS))
            .chain(1..deepest);
        for level in steps {
            let version = self.versions.lock().current();
            if let Some(task) =
                compaction::range_tasks(&version, self.opts.layout, level, &lo, &hi)?
            {
                self.run_compaction(&task, &version)?;
            }
        }
        // The deepest level is rewritten in place as well: what no snapshot reads any more
        // (versions kept for released snapshots, tombstones) goes, as a caller of
        // `compact_range` expects.
        let version = self.versions.lock().current();
        let inputs = version.overlapping(deepest, &lo, &hi);
        if deepest > 0 && !inputs.is_empty() {
            let task = CompactionTask {
                level: deepest,
                output_level: deepest,
                inputs,
                overlapping: Vec::new(),
                moves: false,
            };
            self.run_compaction(&task, &version)?;
        }
        Ok(())
    }

    /// Runs `task` and installs its outcome; returns the table bytes it wrote.
    pub(super) fn run_compaction(&self, task: &CompactionTask, version: &Version) -> Result<u64> {
        let _slots = SlotGuard::enter(self.bg, self.opts.layout, task);
        // A split writes each namespace's part of L0 as one run.
        let target = match task.output_level() {
            RUNS => u64::MAX,
            _ => self.opts.target_table_bytes,
        };
        let params = output_params(self.opts, target);
        // Per key space: a shared tree's or L0's tables mix namespaces, each kept for its own
        // snapshots.
        let floors = self.flusher.pins.floors();
        let alloc = || self.versions.new_file_number();
        let destroyed = self.namespaces.read().destroyed.clone();
        let cx = compaction::RunContext {
            storage: self.storage.as_ref(),
            params,
            floors: &floors,
            destroyed: &destroyed,
            new_file: &alloc,
        };
        let mut out = compaction::run(task, version, &cx)?;
        let (read, written) = (out.bytes_read, out.bytes_written);
        for &(ns, bytes) in &out.written_by_ns {
            let entry = self.namespaces.read().entry(ns);
            if let Ok(e) = entry {
                Counters::add(&e.counters.local().tree_bytes_written, bytes);
            }
        }
        self.storage.sync_dir().ctx("database directory")?;
        out.edit.vlog_dead = dead_bytes_by_segment(&out.dropped);
        self.flusher.installer.install(out.edit, None)?;
        self.gc.liveness.mark_dead(&out.dropped);
        Counters::add(&self.counters.local().compactions, 1);
        Counters::add(&self.counters.local().compaction_bytes_read, read);
        Counters::add(&self.counters.local().compaction_bytes_written, written);
        Ok(written)
    }

    /// Counts the bytes a background compaction wrote in its term of the write
    /// amplification: L0, run merges or levels.
    pub(super) fn count_term(&self, task: &CompactionTask, written: u64) {
        let c = self.counters.local();
        let term = match task.level {
            0 => &c.l0_bytes_written,
            RUNS => &c.run_merge_bytes_written,
            _ => &c.level_bytes_written,
        };
        Counters::add(term, written);
    }

    /// Carries out the consolidation of `ns`'s tree (`docs/per-namespace-trees.md`, rule 5):
    /// a compaction like any other (snapshot floors, dead namespaces), counted in the
    /// namespace's compaction bytes and, apart, as a consolidation.
    pub(super) fn consolidate(
        &self,
        ns: Nsid,
        task: &CompactionTask,
        version: &Version,
    ) -> Result<()> {
        let written = self.run_compaction(task, version)?;
        let entry = self.namespaces.read().entry(ns);
        if let Ok(e) = entry {
            let c = e.counters.local();
            Counters::add(&c.consolidations, 1);
            Counters::add(&c.consolidation_bytes_written, written);
        }
        tracing::debug!(ns, bytes = written, "consolidated an idle namespace's tree");
        Ok(())
    }
}
