//! Settled trees at their best shape: waiting until background work has nothing left to do.

use super::compactions::Compactions;
use super::gc::ValueLogGc;
use crate::error::{Error, Result};
use std::sync::Arc;

/// What waiting for a settled tree touches: the compactions (their flusher, the policy's
/// view) and value-log GC (whether a segment is worth collecting).
pub(super) struct Settle<'a, C, G, R> {
    pub(super) compactions: Compactions<'a, C>,
    pub(super) gc: ValueLogGc<'a, G, R>,
}

impl<C: Fn(), G: Fn(), R: Fn()> Settle<'_, C, G, R> {
    /// Returns once background work has nothing left to do with what was written before the
    /// call (`Db::wait_for_compactions`).
    pub(super) fn wait(&self) -> Result<()> {
        let c = &self.compactions;
        let (opts, bg, versions) = (c.opts, c.bg, c.versions);
        let flusher = &c.flusher;
        flusher.flush()?;
        // Everything at or below `before` is in the tables now.
        let before = flusher.writes.read_seq(None);
        bg.state.lock().policy.drainers += 1;
        let mut gc_seen = false;
        let result = (|| loop {
            {
                let bg = bg.state.lock();
                if let Some(e) = &bg.policy.error {
                    return Err(Error::Background(e.clone()));
                }
                let version = versions.lock().current();
                // Writes during the wait could keep the tree from ever settling: once they
                // came, what was written before the call out of L0 and the runs is enough.
                let older = |t: &Arc<crate::version::TableHandle>| t.props.min_seq <= before;
                if c.namespaces.read().written_since(before)
                    && !version.levels[0].iter().chain(&version.runs).any(older)
                {
                    return Ok(());
                }
                let view = c.view(&version, bg.policy.draining());
                if !bg.policy.busy() && view.frozen == 0 {
                    let ratio = opts.vlog_gc_dead_ratio;
                    // GC moves live values and so writes index entries: settled means it
                    // has nothing left to collect either.
                    let gc_due = opts.auto_compaction
                        && ratio > 0.0
                        && (bg.policy.gc_running()
                            || self
                                .gc
                                .gc_candidate(ratio, bg.policy.gc_urgency())?
                                .is_some());
                    gc_seen |= gc_due;
                    if bg.policy.settled(&view, gc_due)? {
                        return Ok(());
                    }
                }
            }
            bg.state.lock().policy.check_gc();
            bg.wait(opts.background_runner.as_ref())?;
            if std::mem::take(&mut gc_seen) {
                // What GC moved sits in the memtable: into the tree with the rest.
                flusher.flush()?;
            }
        })();
        bg.state.lock().policy.drainers -= 1;
        result
    }
}
