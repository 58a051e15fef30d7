//! Settled trees at their best shape: which namespaces are idle, and the consolidation of an
//! idle namespace's tree into one sorted run (`docs/per-namespace-trees.md`, rule 5).

use super::Inner;
use crate::compaction::{CompactionTask, IdleNs};
use crate::error::Result;
use crate::key::{Nsid, SeqNo};
use crate::stats::Counters;
use crate::version::Version;
use std::sync::atomic::Ordering;

impl Inner {
    /// Namespaces without a write for `idle_settle_ms`, with the time of their last write,
    /// by id; none when consolidation is off. With `drain` (`wait_for_compactions`: a caller
    /// asks for the trees at their settled shape now) every namespace counts as idle.
    pub(super) fn idle_namespaces(&self, drain: bool) -> Vec<IdleNs> {
        let ms = self.opts.idle_settle_ms;
        if self.opts.consolidation_bound() == 0 || !self.opts.auto_compaction {
            return Vec::new();
        }
        let now = self.opened.elapsed().as_millis() as u64;
        let mut idle: Vec<IdleNs> = self
            .namespaces
            .read()
            .live
            .values()
            .map(|e| IdleNs {
                ns: e.id,
                period: e.last_write_ms.load(Ordering::Relaxed),
                // No write since the opening: any L0 table may hold its entries. Draining,
                // neither may any: value-log GC's rewrites of its records (newer than its
                // last write) must reach its tree before the consolidation.
                last_seq: match e.last_write_seq.load(Ordering::Relaxed) {
                    _ if drain => SeqNo::MAX,
                    0 => SeqNo::MAX,
                    seq => seq,
                },
            })
            .filter(|i| drain || now.saturating_sub(i.period) >= ms)
            .collect();
        idle.sort_unstable();
        idle
    }

    /// Carries out the consolidation of `ns`'s tree: a compaction like any other (snapshot
    /// floors, dead namespaces), counted in the namespace's compaction bytes and, apart, as
    /// a consolidation.
    pub(super) fn consolidate(
        &self,
        ns: Nsid,
        task: &CompactionTask,
        version: &Version,
    ) -> Result<()> {
        let written = self.run_compaction(task, version)?;
        if let Ok(e) = self.ns_entry(ns) {
            let c = e.counters.local();
            Counters::add(&c.consolidations, 1);
            Counters::add(&c.consolidation_bytes_written, written);
        }
        tracing::debug!(ns, bytes = written, "consolidated an idle namespace's tree");
        Ok(())
    }
}
