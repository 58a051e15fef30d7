//! Snapshots: a sequence number of one namespace pinned for as long as a handle to it lives.
//!
//! Snapshots count per namespace: the registry keeps `(namespace, seqno)` pins, and what a
//! pin holds back is its own namespace's garbage alone. Flushes and compactions keep, for
//! each entry, every version a live snapshot of the entry's namespace can see (the oldest such
//! snapshot bounds what they drop, [`SnapshotFloors`](crate::compaction::SnapshotFloors)); the entries of a secondary index are
//! keyed by the index's id and count under the namespace that owns the index. Value-log GC
//! leaves a segment alone while a snapshot of a namespace can reach that namespace's record
//! in it, and only a release in one of those namespaces looks at the segment again. One
//! tenant's long-lived iterator thus never keeps another tenant's overwritten versions,
//! tombstones or value-log segments.

use super::handle::Namespace;
use super::inner::Inner;
use super::snapshots::{Expiry, Release};
use crate::error::{Error, Result};
use crate::key::{Nsid, SeqNo};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

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
        self.inner.pins().release(self.ns, self.seq, self.id);
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
        Self::taken(ns, true)
    }

    /// The view of one call (a query), released when it returns: it never expires, so
    /// taking it wakes no background thread to keep its expiry.
    pub(super) fn for_call(ns: Namespace) -> Snapshot {
        Self::taken(ns, false)
    }

    fn taken(ns: Namespace, expires: bool) -> Snapshot {
        let nsid = ns.entry.id;
        let max_age = ns.inner.opts.snapshot_max_age.filter(|_| expires);
        let expiry = max_age
            .and_then(crate::uptime::Deadline::after)
            .map(|deadline| {
                Arc::new(Expiry {
                    deadline,
                    expired: AtomicBool::new(false),
                    readers: Mutex::new(Vec::new()),
                })
            });
        let (seq, id, wake) =
            ns.inner
                .snapshots
                .acquire(nsid, &ns.inner.writes.visible_seq, expiry.clone());
        if wake {
            // It expires before the background's planned look. Under the background's lock:
            // a background between its plan and its wait is woken once it waits.
            ns.inner
                .bg
                .wake_locked(ns.inner.opts.background_runner.as_ref());
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
        if !self.past_age() {
            return Ok(());
        }
        self.ns.inner.pins().reap();
        Err(self.expired_error())
    }

    /// Whether it is past its maximum age, without releasing anything (`check` releases it):
    /// what a reader holding its own lock asks between steps.
    pub(super) fn past_age(&self) -> bool {
        let e = self.pin.expiry.as_ref();
        e.is_some_and(|e| e.expired.load(Ordering::Acquire) || e.deadline.passed())
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
        self.pin.expiry.as_ref().map(|e| e.deadline.at())
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
