//! Background work charged to the namespaces that caused it.
//!
//! The engine counts, per namespace, the table bytes its compactions (L0 splits included)
//! wrote into that namespace's runs and tree (`NamespaceStats::compaction_bytes_written`).
//! After a compaction job, the growth of that counter since the last look is charged to the
//! namespace (its P and L tags, see `tags`). Looking costs a namespace stats call each, so
//! it is done at most every [`EVERY`], and only for namespaces the shares know (given shares,
//! or seen contending): the first look at a namespace sets its baseline, charging nothing.
//!
//! Not charged, as the engine does not split them per namespace: flushes (the memtable's
//! bytes were the namespaces' own puts, which their commands already paid for), value-log
//! GC and index backfills.

use super::Shares;
use cerberus_engine::{BackgroundStep, Db, JobKind};
use std::time::Duration;

/// Least time between two looks at the namespaces' compaction counters.
pub const EVERY: Duration = Duration::from_millis(200);

impl Shares {
    /// After an engine job on a lane: charges compactions to their namespaces (see the
    /// module's notes). Cheap unless a compaction ran and the last look is old enough.
    pub fn after_job(&self, db: &Db, step: BackgroundStep) {
        if !self.enabled || step != BackgroundStep::Ran(JobKind::Compaction) {
            return;
        }
        // Another lane is looking: it will see this job's bytes too.
        let Some(mut st) = self.charges.state.try_lock() else {
            return;
        };
        if st.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        st.last = Some(quanta::Instant::now());
        let ids = self.book.lock().ids();
        // A namespace forgotten (destroyed) while the last look ran may have been seen after
        // its `forget`: it goes at this look.
        st.seen.retain(|ns, _| ids.binary_search(ns).is_ok());
        for ns in ids {
            let Ok(written) = db
                .namespace(ns)
                .and_then(|h| h.stats())
                .map(|s| s.compaction_bytes_written)
            else {
                continue;
            };
            let before = st.seen.insert(ns, written);
            if let Some(delta) = before.map(|b| written.saturating_sub(b)) {
                if delta > 0 {
                    self.charge(ns, 0, delta);
                }
            }
        }
    }
}
