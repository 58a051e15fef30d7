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
use super::Inner;
use crate::compaction::SnapshotFloors;
use crate::error::{Error, Result};
use crate::key::{Nsid, SeqNo};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// What a reader of a snapshot holds beyond the pin (an iterator's tables, memtables and
/// read-ahead), given up when the snapshot expires: an iterator kept open and touched now
/// and then must not hold the tree it was opened on for longer than the pin.
pub(super) trait Release: Send + Sync {
    fn release(&self);
}

/// The expiry of one snapshot that has a maximum age: when, whether it has passed, and the
/// readers whose state goes with it.
pub(super) struct Expiry {
    at: Instant,
    /// Set by the sweep that released the pin, before it releases the readers.
    expired: AtomicBool,
    readers: Mutex<Vec<Weak<dyn Release>>>,
}

impl Expiry {
    /// Marks it expired and releases its readers' state (with no other lock held: a reader
    /// in the middle of a step is waited for).
    fn release(&self) {
        self.expired.store(true, Ordering::SeqCst);
        let readers = std::mem::take(&mut *self.readers.lock());
        for r in readers.iter().filter_map(Weak::upgrade) {
            r.release();
        }
    }
}

/// A pin: `(namespace, seqno, pin id)`.
type PinKey = (Nsid, SeqNo, u64);

/// The sequence numbers live snapshots read at, per namespace: one pin per snapshot, with
/// its expiry (`None`: no maximum age, as the engine's own snapshots).
#[derive(Default)]
pub(super) struct Snapshots {
    /// `(namespace, seqno, pin id)`: ordered by namespace, so each namespace's pins are one
    /// range with its oldest first.
    live: Mutex<BTreeMap<PinKey, Option<Arc<Expiry>>>>,
    next_id: AtomicU64,
    /// Seqnos unpinned so far, in any namespace (value-log GC's check that none went while it
    /// deferred a segment).
    releases: AtomicU64,
}

impl Snapshots {
    /// Pins, for namespace `ns`, the seqno in `visible` (read under the registry's lock, so a
    /// collection that lists the registry after this sees the pin, and one that listed it
    /// before made its changes visible first) until `expires`. Returns the seqno and the pin.
    pub(super) fn acquire(
        &self,
        ns: Nsid,
        visible: &AtomicU64,
        expires: Option<Arc<Expiry>>,
    ) -> (SeqNo, u64) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut live = self.live.lock();
        let seq = visible.load(Ordering::Acquire);
        live.insert((ns, seq, id), expires);
        (seq, id)
    }

    /// Unpins pin `id` (at `seq` of `ns`); true if it was pinned and no snapshot of `ns`
    /// reads at `seq` any more.
    pub(super) fn release(&self, ns: Nsid, seq: SeqNo, id: u64) -> bool {
        let mut live = self.live.lock();
        if live.remove(&(ns, seq, id)).is_none() {
            return false;
        }
        self.releases.fetch_add(1, Ordering::SeqCst);
        live.range((ns, seq, 0)..=(ns, seq, u64::MAX))
            .next()
            .is_none()
    }

    /// Unpins every pin expired at `now`; returns their namespaces and expiries.
    fn expire(&self, now: Instant) -> Vec<(Nsid, Arc<Expiry>)> {
        let mut live = self.live.lock();
        let mut gone = Vec::new();
        live.retain(|&(ns, ..), expiry| match expiry {
            Some(e) if e.at <= now => {
                gone.push((ns, e.clone()));
                false
            }
            _ => true,
        });
        if !gone.is_empty() {
            self.releases.fetch_add(1, Ordering::SeqCst);
        }
        gone
    }

    /// The soonest a pin expires.
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        self.live.lock().values().flatten().map(|e| e.at).min()
    }

    pub(super) fn releases(&self) -> u64 {
        self.releases.load(Ordering::SeqCst)
    }

    /// The oldest pinned seqno of every namespace that has one.
    pub(super) fn oldest_per_namespace(&self) -> BTreeMap<Nsid, SeqNo> {
        let mut out = BTreeMap::new();
        for &(ns, seq, _) in self.live.lock().keys() {
            // Each namespace's pins come oldest first.
            out.entry(ns).or_insert(seq);
        }
        out
    }

    /// Every pinned seqno, by namespace, oldest first within each.
    pub(super) fn list(&self) -> Vec<(Nsid, SeqNo)> {
        let mut out: Vec<(Nsid, SeqNo)> = self.live.lock().keys().map(|k| (k.0, k.1)).collect();
        out.dedup();
        out
    }

    /// Snapshots open now, in every namespace.
    pub(super) fn count(&self) -> usize {
        self.live.lock().len()
    }

    /// Snapshots of `ns` open now.
    pub(super) fn count_of(&self, ns: Nsid) -> usize {
        self.live
            .lock()
            .range((ns, 0, 0)..=(ns, SeqNo::MAX, u64::MAX))
            .count()
    }
}

/// Segments value-log GC left because a live snapshot can reach a record in them, with the
/// namespaces of those snapshots: a release in one of them looks at the segment again.
#[derive(Default)]
pub(super) struct DeferredSegments {
    by_segment: HashMap<u64, Vec<Nsid>>,
}

impl DeferredSegments {
    pub(super) fn contains(&self, seg: &u64) -> bool {
        self.by_segment.contains_key(seg)
    }

    /// Leaves `seg` until a snapshot of one of `namespaces` goes.
    pub(super) fn insert(&mut self, seg: u64, namespaces: Vec<Nsid>) {
        self.by_segment.insert(seg, namespaces);
    }

    pub(super) fn remove(&mut self, seg: &u64) {
        self.by_segment.remove(seg);
    }

    /// The segments left for a snapshot of `ns`.
    pub(super) fn waiting_for(&self, ns: Nsid) -> Vec<u64> {
        let by = self.by_segment.iter();
        by.filter(|(_, w)| w.contains(&ns))
            .map(|(s, _)| *s)
            .collect()
    }

    /// Gives back the segments waiting for a snapshot of `ns`; true if there were any.
    fn released(&mut self, ns: Nsid) -> bool {
        let before = self.by_segment.len();
        self.by_segment.retain(|_, waits| !waits.contains(&ns));
        self.by_segment.len() != before
    }
}

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

/// Expiries just passed, whose readers still hold their state until [`Expired::release`].
#[must_use = "the readers of expired snapshots keep their state until released"]
pub(super) struct Expired(Vec<Arc<Expiry>>);

impl Expired {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn release(self) {
        for e in self.0 {
            e.release();
        }
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
/// [`Namespace::snapshot`]); its reads are those of [`Readable`](super::Readable). Clones share
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
