//! Read-only namespaces: a namespace that refuses every write while reads go on, as a cluster
//! move needs of the parts it copies (`docs/cluster.md`, "Moving a tenant"). The flag is kept
//! in the manifest (`VersionEdit::ns_read_only`), so a restart keeps it.

use super::namespace_set::NsEntry;
use super::versions::Versions;
use super::write_queue::WriteQueue;
use crate::error::Result;
use crate::version::VersionEdit;
use std::sync::atomic::Ordering;

/// Makes namespace `e` read-only (or writable again) in the manifest and on its entry;
/// idempotent. Writes queued before the flag holds are not waited for here: the caller
/// waits for them to leave the queue (see `Namespace::set_read_only`).
pub(super) fn set_read_only(
    versions: &Versions,
    writes: &WriteQueue,
    e: &NsEntry,
    read_only: bool,
) -> Result<()> {
    e.check_live()?;
    let mut vs = versions.lock();
    // Checked under the manifest's lock: a destroy is logged under it too.
    e.check_live()?;
    if e.read_only.load(Ordering::Acquire) != read_only {
        versions.log_edit(
            &mut vs,
            VersionEdit {
                ns_read_only: vec![(e.id, read_only)],
                ..VersionEdit::default()
            },
        )?;
        // Under the commit queue's lock, where each write checks it before it is
        // queued (`commit`): a write is queued before this, or refused.
        let _queue = writes.queue.lock();
        e.read_only.store(read_only, Ordering::Release);
    }
    Ok(())
}
