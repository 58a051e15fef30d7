//! Which backfilled indexes wait for a flush to be logged as ready, and when a backfill may
//! flush.

use crate::key::{Nsid, SeqNo};
use crate::memtable::Memtable;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Least time between two flushes index backfills make (device-wide): a backfill within it
/// leaves its entries in the memtable, and the flush that writes that memtable (any flush)
/// records the index as ready.
pub(super) const INDEX_FLUSH_EVERY: Duration = Duration::from_secs(1);

/// An index whose backfill is done (queries use it) and whose entries wait in a memtable:
/// the flush of that memtable logs it as ready.
struct Unlogged {
    id: Nsid,
    from: SeqNo,
    mem: Weak<Memtable>,
}

/// Flushes backfills made, and the indexes waiting for one.
#[derive(Default)]
pub(super) struct IndexFlushes {
    /// Time after the database opened of the last one (`None`: never).
    last: parking_lot::Mutex<Option<Duration>>,
    unlogged: parking_lot::Mutex<Vec<Unlogged>>,
}

impl IndexFlushes {
    /// Whether a backfill may flush at `now` (and, if so, it is counted as done then).
    pub(super) fn allow(&self, now: Duration) -> bool {
        let mut last = self.last.lock();
        if last.is_some_and(|t| now.saturating_sub(t) < INDEX_FLUSH_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }

    /// Index `id`, answering from seqno `from`, is ready once `mem` is flushed.
    pub(super) fn wait_for(&self, id: Nsid, from: SeqNo, mem: &Arc<Memtable>) {
        self.unlogged.lock().push(Unlogged {
            id,
            from,
            mem: Arc::downgrade(mem),
        });
    }

    /// Indexes ready in memory only, with the seqno they answer from.
    pub(super) fn ready_unlogged(&self) -> Vec<(Nsid, SeqNo)> {
        self.unlogged
            .lock()
            .iter()
            .map(|u| (u.id, u.from))
            .collect()
    }

    /// The indexes whose entries the flush of `mem` makes durable.
    pub(super) fn logged_by(&self, mem: &Arc<Memtable>) -> Vec<(Nsid, SeqNo)> {
        let unlogged = self.unlogged.lock();
        let of = |u: &&Unlogged| std::ptr::eq(u.mem.as_ptr(), Arc::as_ptr(mem));
        unlogged.iter().filter(of).map(|u| (u.id, u.from)).collect()
    }

    /// Forgets `ids` (logged as ready, or dropped).
    pub(super) fn forget(&self, ids: &[Nsid]) {
        self.unlogged.lock().retain(|u| !ids.contains(&u.id));
    }
}
