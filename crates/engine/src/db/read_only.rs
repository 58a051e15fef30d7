//! Read-only namespaces: a namespace that refuses every write while reads go on, as a cluster
//! move needs of the parts it copies (`docs/cluster.md`, "Moving a tenant"). The flag is kept
//! in the manifest (`VersionEdit::ns_read_only`), so a restart keeps it.

use super::inner::Inner;
use super::namespace_set::NsEntry;
use crate::error::Result;
use crate::version::VersionEdit;
use std::sync::atomic::Ordering;

impl Inner {
    /// Makes namespace `e` read-only (or writable again); idempotent. Once it returns with
    /// `true`, no write of `e` is acknowledged any more, and every write acknowledged before
    /// is in the memtable (a scan taken then sees it).
    pub(super) fn set_read_only(&self, e: &NsEntry, read_only: bool) -> Result<()> {
        self.check_open()?;
        e.check_live()?;
        {
            let mut vs = self.versions.lock();
            // Checked under the manifest's lock: a destroy is logged under it too.
            e.check_live()?;
            if e.read_only.load(Ordering::Acquire) != read_only {
                self.versions.log_edit(
                    &mut vs,
                    VersionEdit {
                        ns_read_only: vec![(e.id, read_only)],
                        ..VersionEdit::default()
                    },
                )?;
                // Under the commit queue's lock, where each write checks it before it is
                // queued (`commit`): a write is queued before this, or refused.
                let _queue = self.writes.queue.lock();
                e.read_only.store(read_only, Ordering::Release);
            }
        }
        if read_only {
            // Writes queued before the flag held are done once a barrier behind them is
            // (committed to the memtable, or failed and not acknowledged): its own outcome
            // is theirs, which is not this call's.
            let _ = self.commit(None, false, None);
        }
        Ok(())
    }

    /// Whether namespace `e` refuses writes.
    pub(super) fn is_read_only(&self, e: &NsEntry) -> bool {
        e.read_only.load(Ordering::Acquire)
    }
}
