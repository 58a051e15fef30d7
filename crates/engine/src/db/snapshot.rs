//! Snapshots: a sequence number of one namespace pinned for as long as a handle to it lives.
//!
//! Snapshots count per namespace: the registry keeps `(namespace, seqno)` pins, and what a
//! pin holds back is its own namespace's garbage alone. Flushes and compactions keep, for
//! each entry, every version a live snapshot of the entry's namespace can see (the oldest such
//! snapshot bounds what they drop, [`SnapshotFloors`]); the entries of a secondary index are
//! keyed by the index's id and count under the namespace that owns the index. Value-log GC
//! leaves a segment alone while a snapshot of a namespace can reach that namespace's record
//! in it, and only a release in one of those namespaces looks at the segment again. One
//! tenant's long-lived iterator thus never keeps another tenant's overwritten versions,
//! tombstones or value-log segments.

use super::handle::Namespace;
use super::inner::Inner;
use super::snapshots::{Expired, Expiry, Release};
use crate::compaction::SnapshotFloors;
use crate::error::{Error, Result};
use crate::key::{Nsid, SeqNo};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

impl Inner {
    /// For each key space, the seqno at or below which a version shadowed by a newer one at
    /// or below it is invisible to every reader, now and later: the oldest live snapshot of
    /// the namespace, or the visible seqno if it has none. An index's entries (keyed by the
    /// index's id) take the floor of the namespace that owns the index.
    pub(super) fn snapshot_floors(&self) -> SnapshotFloors {
        // The seqno first: a snapshot pinned after it reads at or above it.
        let now = self.writes.visible_seq.load(Ordering::Acquire);
        let mut pinned = self.snapshots.oldest_per_namespace();
        if !pinned.is_empty() {
            // Loaded after the pins: every index that existed when they were listed is in it
            // (or dropped, its entries dead); one created since holds no entry a flush or
            // compaction that took these floors reads.
            let set = self.index_set();
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

    pub(super) fn release_snapshot(&self, ns: Nsid, seq: SeqNo, id: u64) {
        if self.snapshots.release(ns, seq, id) && self.gc.deferred.lock().released(ns) {
            // Segments kept for this namespace's snapshots may be collectable now. Most
            // releases (every query's) find none: they wake nobody.
            self.bg.state.lock().policy.check_gc();
            self.wake_background();
        }
    }

    /// Releases the pins past `Options::snapshot_max_age`: true if segments value-log GC
    /// left for them may be collectable now (the caller has GC look again), and their
    /// expiries, whose readers' state the caller releases ([`Expired::release`]) once it
    /// holds no lock (the background's lock is held here).
    pub(super) fn expire_snapshots(&self) -> (bool, Expired) {
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

    /// [`expire_snapshots`](Self::expire_snapshots), releasing the readers' state and
    /// waking GC if it gave segments back (not with the background state's lock held, nor
    /// a reader's).
    pub(super) fn reap_snapshots(&self) {
        let (gc, expired) = self.expire_snapshots();
        expired.release();
        if gc {
            self.bg.state.lock().policy.check_gc();
            self.wake_background();
        }
    }

    /// How long the background may sleep before a pin expires.
    pub(super) fn until_expiry(&self) -> Option<Duration> {
        let at = self.snapshots.next_expiry()?;
        Some(at.saturating_duration_since(Instant::now()) + Duration::from_millis(1))
    }
}

/// The pin behind one or more [`Snapshot`] clones.
struct Pin {
    inner: Arc<Inner>,
    ns: Nsid,
    seq: SeqNo,
    id: u64,
    /// When it expires (`None`: never).
    expiry: Option<Arc<Expiry>>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        // An expired pin is gone already: the release finds nothing.
        self.inner.release_snapshot(self.ns, self.seq, self.id);
    }
}

/// A consistent, read-only view of one namespace at the moment it was taken (see
/// [`Namespace::snapshot`]); its reads are those of [`Readable`](super::readable::Readable). Clones share
/// the view; it is released when the last one drops.
/// While it lives, flushes, compactions and value-log GC keep what it reads: the garbage of
/// its own namespace, never another namespace's.
#[derive(Clone)]
pub struct Snapshot {
    ns: Namespace,
    pin: Arc<Pin>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("namespace", &self.ns.id())
            .field("seq", &self.pin.seq)
            .finish()
    }
}

impl Snapshot {
    pub(super) fn new(ns: Namespace) -> Snapshot {
        let nsid = ns.entry.id;
        let max_age = ns.inner.opts.snapshot_max_age;
        let expiry = max_age
            .and_then(|a| Instant::now().checked_add(a))
            .map(|at| {
                Arc::new(Expiry {
                    at,
                    expired: AtomicBool::new(false),
                    readers: Mutex::new(Vec::new()),
                })
            });
        let (seq, id) =
            ns.inner
                .snapshots
                .acquire(nsid, &ns.inner.writes.visible_seq, expiry.clone());
        if expiry.is_some() {
            // The background sleeps no longer than until the first expiry.
            ns.inner.wake_background();
        }
        Snapshot {
            pin: Arc::new(Pin {
                inner: ns.inner.clone(),
                ns: nsid,
                seq,
                id,
                expiry,
            }),
            ns,
        }
    }

    /// Fails with [`Error::SnapshotExpired`] once past `Options::snapshot_max_age` (its pin
    /// released then, if the background has not yet).
    pub fn check(&self) -> Result<()> {
        let Some(e) = &self.pin.expiry else {
            return Ok(());
        };
        if !e.expired.load(Ordering::Acquire) && Instant::now() < e.at {
            return Ok(());
        }
        self.ns.inner.reap_snapshots();
        Err(self.expired_error())
    }

    /// The error of a use past its maximum age.
    pub(super) fn expired_error(&self) -> Error {
        let max_age = self.ns.inner.opts.snapshot_max_age.unwrap_or_default();
        Error::SnapshotExpired {
            max_age_ms: max_age.as_millis() as u64,
        }
    }

    /// Whether a sweep has released it for its age (readers check it under their own lock,
    /// which the sweep takes after setting it).
    pub(super) fn released(&self) -> bool {
        let e = self.pin.expiry.as_ref();
        e.is_some_and(|e| e.expired.load(Ordering::Acquire))
    }

    /// When it expires (`None`: never): uses from then on fail with
    /// [`Error::SnapshotExpired`].
    pub fn expires_at(&self) -> Option<Instant> {
        self.pin.expiry.as_ref().map(|e| e.at)
    }

    /// Has `reader`'s state released when this snapshot expires (it keeps only a weak
    /// reference); false if it has expired already: the caller releases it now.
    pub(super) fn hold(&self, reader: Weak<dyn Release>) -> bool {
        let Some(e) = &self.pin.expiry else {
            return true;
        };
        let mut readers = e.readers.lock();
        // Checked under the lock the sweep takes after setting it: a reader added after
        // the sweep took the list sees it set.
        if e.expired.load(Ordering::SeqCst) {
            return false;
        }
        // Readers of one snapshot come and go (a snapshot can open many iterators).
        readers.retain(|r| r.strong_count() > 0);
        readers.push(reader);
        true
    }

    /// The namespace this is a view of.
    pub fn namespace(&self) -> &Namespace {
        &self.ns
    }

    pub(super) fn seq(&self) -> SeqNo {
        self.pin.seq
    }
}

impl Namespace {
    /// A consistent view of this namespace as it is now: reads through it see exactly the
    /// writes made before it, whatever is written, flushed, compacted or collected after.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.clone())
    }
}
