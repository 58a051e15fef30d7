//! Settled trees at their best shape: waiting for it, which namespaces are idle, and the
//! consolidation of an idle namespace's tree into one sorted run (`docs/per-namespace-trees.md`, rule 5).

use super::inner::Inner;
use crate::compaction::CompactionTask;
use crate::error::{Error, Result};
use crate::key::Nsid;
use crate::stats::Counters;
use crate::version::Version;
use std::sync::Arc;

impl Inner {
    pub(super) fn wait_for_compactions(&self) -> Result<()> {
        self.flusher().flush()?;
        // Everything at or below `before` is in the tables now.
        let before = self.writes.read_seq(None);
        self.bg.state.lock().policy.drainers += 1;
        let mut gc_seen = false;
        let result = (|| loop {
            {
                let bg = self.bg.state.lock();
                if let Some(e) = &bg.policy.error {
                    return Err(Error::Background(e.clone()));
                }
                let version = self.versions.lock().current();
                // Writes during the wait could keep the tree from ever settling: once they
                // came, what was written before the call out of L0 and the runs is enough.
                let older = |t: &Arc<crate::version::TableHandle>| t.props.min_seq <= before;
                if self.namespaces.read().written_since(before)
                    && !version.levels[0].iter().chain(&version.runs).any(older)
                {
                    return Ok(());
                }
                let view = self.view(&version, bg.policy.draining());
                if !bg.policy.busy() && view.frozen == 0 {
                    let ratio = self.opts.vlog_gc_dead_ratio;
                    // GC moves live values and so writes index entries: settled means it
                    // has nothing left to collect either.
                    let gc_due = self.opts.auto_compaction
                        && ratio > 0.0
                        && (bg.policy.gc_running() || self.gc_candidate(ratio)?.is_some());
                    gc_seen |= gc_due;
                    if bg.policy.settled(&view, gc_due)? {
                        return Ok(());
                    }
                }
            }
            self.bg.state.lock().policy.check_gc();
            self.write_path().wait_for_background()?;
            if std::mem::take(&mut gc_seen) {
                // What GC moved sits in the memtable: into the tree with the rest.
                self.flusher().flush()?;
            }
        })();
        self.bg.state.lock().policy.drainers -= 1;
        result
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
