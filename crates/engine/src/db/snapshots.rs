//! The snapshot registry: the seqnos pinned per namespace, their expiries, and the segments
//! value-log GC left for them.

use crate::key::{Nsid, SeqNo};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// A pin: `(namespace, seqno, pin id)`.
type PinKey = (Nsid, SeqNo, u64);

/// What a reader of a snapshot holds beyond the pin (an iterator's tables, memtables and
/// read-ahead), given up when the snapshot expires: an iterator kept open and touched now
/// and then must not hold the tree it was opened on for longer than the pin.
pub(super) trait Release: Send + Sync {
    fn release(&self);
}

/// The expiry of one snapshot that has a maximum age: when, whether it has passed, and the
/// readers whose state goes with it.
pub(super) struct Expiry {
    pub(super) deadline: crate::uptime::Deadline,
    /// Set by the sweep before it lets the pin go, and so before it releases the readers.
    pub(super) expired: AtomicBool,
    pub(super) readers: Mutex<Vec<Weak<dyn Release>>>,
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

/// The sequence numbers live snapshots read at, per namespace: one pin per snapshot, with
/// its expiry (`None`: no maximum age, as the engine's own snapshots).
#[derive(Default)]
pub(super) struct Snapshots {
    /// `(namespace, seqno, pin id)`: ordered by namespace, so each namespace's pins are one
    /// range with its oldest first.
    live: Mutex<BTreeMap<PinKey, Option<Arc<Expiry>>>>,
    /// When the background has said it looks at the pins again at the latest (`None`: only
    /// when woken). A pin that expires before it wakes the background; the rest need not (a
    /// scan's cursor: the futex wake and the background's turn cost more than the scan).
    /// Under its own lock, taken inside `live`'s, so that a plan and a pin are ordered.
    looks_by: Mutex<Option<Instant>>,
    next_id: AtomicU64,
    /// Seqnos unpinned so far, in any namespace (value-log GC's check that none went while it
    /// deferred a segment).
    releases: AtomicU64,
}

impl Snapshots {
    /// Pins, for namespace `ns`, the seqno in `visible` (read under the registry's lock, so a
    /// collection that lists the registry after this sees the pin, and one that listed it
    /// before made its changes visible first) until `expires`. Returns the seqno, the pin,
    /// and whether the background must be woken to keep the expiry (it expires before the
    /// background's planned look: [`plan_look`](Self::plan_look)).
    pub(super) fn acquire(
        &self,
        ns: Nsid,
        visible: &AtomicU64,
        expires: Option<Arc<Expiry>>,
    ) -> (SeqNo, u64, bool) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut live = self.live.lock();
        let seq = visible.load(Ordering::Acquire);
        let at = expires.as_ref().map(|e| e.deadline.at());
        live.insert((ns, seq, id), expires);
        let wake = at.is_some_and(|at| {
            let mut looks_by = self.looks_by.lock();
            let sooner = looks_by.is_none_or(|by| at < by);
            if sooner {
                // The woken background plans again, seeing this pin; until then later
                // pins (which expire later) need not wake it too.
                *looks_by = Some(at);
            }
            sooner
        });
        (seq, id, wake)
    }

    /// A background thread runs a job instead of waiting: no plan stands until one plans
    /// again (a pin taken meanwhile wakes a thread). True if a pin with an expiry is live:
    /// the caller has another thread plan for it, or it could wait the job's length.
    pub(super) fn plan_running(&self) -> bool {
        let live = self.live.lock();
        *self.looks_by.lock() = None;
        live.values().any(Option::is_some)
    }

    /// The background's plan to look again within `wait` at the latest (`None`: only when
    /// woken), shortened to the soonest expiry of a live pin (and a millisecond, so the
    /// look finds it past): how long to wait. Pins taken after this that expire sooner wake
    /// it ([`acquire`](Self::acquire)).
    pub(super) fn plan_look(&self, now: Instant, wait: Option<Duration>) -> Option<Duration> {
        let live = self.live.lock();
        let soonest = live.values().flatten().map(|e| e.deadline.at()).min();
        let until = soonest.map(|at| at.saturating_duration_since(now) + Duration::from_millis(1));
        let wait = match (wait, until) {
            (Some(d), Some(u)) => Some(d.min(u)),
            (d, u) => d.or(u),
        };
        *self.looks_by.lock() = wait.and_then(|w| now.checked_add(w));
        wait
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
    pub(super) fn expire(&self, now: Instant) -> Vec<(Nsid, Arc<Expiry>)> {
        let mut live = self.live.lock();
        let mut gone = Vec::new();
        live.retain(|&(ns, ..), expiry| match expiry {
            Some(e) if e.deadline.at() <= now => {
                // Marked before the pin goes: a check that finds the pin gone finds the mark
                // (its clock may not have reached the deadline yet: `Deadline::passed`).
                e.expired.store(true, Ordering::SeqCst);
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
    pub(super) fn released(&mut self, ns: Nsid) -> bool {
        let before = self.by_segment.len();
        self.by_segment.retain(|_, waits| !waits.contains(&ns));
        self.by_segment.len() != before
    }
}

/// Expiries just passed, whose readers still hold their state until [`Expired::release`].
#[must_use = "the readers of expired snapshots keep their state until released"]
pub(super) struct Expired(pub(super) Vec<Arc<Expiry>>);

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

#[cfg(test)]
mod tests {
    use super::*;

    fn expiry(at: Instant) -> Option<Arc<Expiry>> {
        Some(Arc::new(Expiry {
            deadline: crate::uptime::Deadline::new(at),
            expired: AtomicBool::new(false),
            readers: Mutex::new(Vec::new()),
        }))
    }

    #[test]
    fn a_pin_wakes_the_background_only_when_it_expires_before_its_planned_look() {
        let s = Snapshots::default();
        let seq = AtomicU64::new(7);
        let now = Instant::now();
        let min = Duration::from_secs(60);
        // No plan yet: the first expiring pin wakes; a pin without an age never does.
        assert!(!s.acquire(1, &seq, None).2);
        assert!(s.acquire(1, &seq, expiry(now + 10 * min)).2);
        // Later ones expire later than the woken background will look: no wake.
        assert!(!s.acquire(1, &seq, expiry(now + 11 * min)).2);
        assert!(!s.acquire(2, &seq, expiry(now + 12 * min)).2);
        // The background plans its look at the soonest expiry (and a millisecond).
        let wait = s.plan_look(now, Some(30 * min)).unwrap();
        assert_eq!(wait, 10 * min + Duration::from_millis(1));
        assert!(
            !s.acquire(1, &seq, expiry(now + 10 * min + Duration::from_secs(1)))
                .2
        );
        // A pin that expires before the planned look wakes it (a shorter age).
        assert!(s.acquire(1, &seq, expiry(now + min)).2);
        // Every pin gone, the background waits for nothing: the next pin wakes it.
        let keys: Vec<PinKey> = s.live.lock().keys().copied().collect();
        for (ns, seq, id) in keys {
            s.release(ns, seq, id);
        }
        assert_eq!(s.plan_look(now, None), None);
        assert!(s.acquire(1, &seq, expiry(now + 10 * min)).2);
        // A plan shorter than every expiry stands: pins expiring after it do not wake.
        assert_eq!(s.plan_look(now, Some(min)), Some(min));
        assert!(!s.acquire(1, &seq, expiry(now + 2 * min)).2);
        // A thread that runs a job instead withdraws the plan: the next pin wakes.
        assert!(s.plan_running());
        assert!(s.acquire(1, &seq, expiry(now + 3 * min)).2);
    }
}
