//! Settled trees at their best shape: waiting until background work has nothing left to do.

use super::inner::Inner;
use crate::error::{Error, Result};
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
                let compactions = self.compactions();
                let view = compactions.view(&version, bg.policy.draining());
                if !bg.policy.busy() && view.frozen == 0 {
                    let ratio = self.opts.vlog_gc_dead_ratio;
                    // GC moves live values and so writes index entries: settled means it
                    // has nothing left to collect either.
                    let gc_due = self.opts.auto_compaction
                        && ratio > 0.0
                        && (bg.policy.gc_running()
                            || self.value_log_gc().gc_candidate(ratio)?.is_some());
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
}
