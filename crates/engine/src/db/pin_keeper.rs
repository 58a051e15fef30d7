//! What the snapshot pins mean to the rest of the database: the floors flushes and
//! compactions keep versions above, and the releases and expiries that hand value-log
//! segments back to GC (see snapshot.rs for the model).

use super::background_state::Background;
use super::gc_state::GcState;
use super::index_set::IndexSet;
use super::snapshots::{Expired, Snapshots};
use super::write_queue::WriteQueue;
use crate::compaction::SnapshotFloors;
use crate::key::{Nsid, SeqNo};
use crate::options::Options;
use parking_lot::RwLock;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The parts a pin's floors, release and expiry touch, borrowed.
pub(super) struct PinKeeper<'a> {
    pub(super) snapshots: &'a Snapshots,
    pub(super) writes: &'a WriteQueue,
    pub(super) indexes: &'a RwLock<Arc<IndexSet>>,
    pub(super) gc: &'a GcState,
    pub(super) bg: &'a Background,
    pub(super) opts: &'a Options,
}

impl PinKeeper<'_> {
    /// For each key space, the seqno at or below which a version shadowed by a newer one at
    /// or below it is invisible to every reader, now and later: the oldest live snapshot of
    /// the namespace, or the visible seqno if it has none. An index's entries (keyed by the
    /// index's id) take the floor of the namespace that owns the index.
    pub(super) fn floors(&self) -> SnapshotFloors {
        // The seqno first: a snapshot pinned after it reads at or above it.
        let now = self.writes.visible_seq.load(Ordering::Acquire);
        let mut pinned = self.snapshots.oldest_per_namespace();
        if !pinned.is_empty() {
            // Loaded after the pins: every index that existed when they were listed is in it
            // (or dropped, its entries dead); one created since holds no entry a flush or
            // compaction that took these floors reads.
            let set = self.indexes.read().clone();
            for (owner, indexes) in set.iter() {
                if let Some(&seq) = pinned.get(&owner) {
                    for idx in indexes {
                        pinned.insert(idx.def.id, seq);
                    }
                }
            }
        }
        SnapshotFloors::new(now, pinned)
    }

    pub(super) fn release(&self, ns: Nsid, seq: SeqNo, id: u64) {
        if self.snapshots.release(ns, seq, id) && self.gc.deferred.lock().released(ns) {
            // Segments kept for this namespace's snapshots may be collectable now. Most
            // releases (every query's) find none: they wake nobody.
            self.bg.state.lock().policy.check_gc();
            self.bg.wake(self.opts.background_runner.as_ref());
        }
    }

    /// Releases the pins past `Options::snapshot_max_age`: true if segments value-log GC
    /// left for them may be collectable now (the caller has GC look again), and their
    /// expiries, whose readers' state the caller releases ([`Expired::release`]) once it
    /// holds no lock (the background's lock is held here).
    pub(super) fn expire(&self) -> (bool, Expired) {
        if self.opts.snapshot_max_age.is_none() {
            return (false, Expired(Vec::new()));
        }
        let gone = self.snapshots.expire(Instant::now());
        let mut deferred = self.gc.deferred.lock();
        // Every namespace's segments go back (no short circuit).
        let mut any = false;
        let mut expired = Vec::with_capacity(gone.len());
        for (ns, e) in gone {
            any |= deferred.released(ns);
            expired.push(e);
        }
        (any, Expired(expired))
    }

    /// [`expire`](Self::expire), releasing the readers' state and waking GC if it gave
    /// segments back (not with the background state's lock held, nor a reader's).
    pub(super) fn reap(&self) {
        let (gc, expired) = self.expire();
        expired.release();
        if gc {
            self.bg.state.lock().policy.check_gc();
            self.bg.wake(self.opts.background_runner.as_ref());
        }
    }

    /// A background thread runs a job: true if pins with an expiry are live (another
    /// thread should plan for them).
    pub(super) fn plan_running(&self) -> bool {
        self.snapshots.plan_running()
    }

    /// How long the background may wait, `wait` at most, before a pin expires; pins taken
    /// later that expire sooner wake it.
    pub(super) fn plan_look(&self, wait: Option<Duration>) -> Option<Duration> {
        self.snapshots.plan_look(Instant::now(), wait)
    }
}
