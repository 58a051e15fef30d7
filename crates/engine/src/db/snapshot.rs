//! Snapshots: a sequence number pinned for as long as a handle to it lives. Flushes and
//! compactions keep every version a live snapshot can see (the oldest one bounds what they
//! drop), and value-log GC leaves a segment alone while a snapshot can reach a record in it.

use super::*;
use std::collections::BTreeMap;

/// The sequence numbers live snapshots read at, with how many snapshots share each.
#[derive(Default)]
pub(super) struct Snapshots {
    live: Mutex<BTreeMap<SeqNo, usize>>,
    /// Seqnos unpinned so far (value-log GC's check that none went while it deferred a
    /// segment).
    releases: AtomicU64,
}

impl Snapshots {
    /// Pins the seqno in `visible` (read under the registry's lock, so a collection that
    /// lists the registry after this sees the pin, and one that listed it before made its
    /// changes visible first).
    pub(super) fn acquire(&self, visible: &AtomicU64) -> SeqNo {
        let mut live = self.live.lock();
        let seq = visible.load(Ordering::Acquire);
        *live.entry(seq).or_default() += 1;
        seq
    }

    /// Unpins `seq`; true if no snapshot reads at it any more.
    pub(super) fn release(&self, seq: SeqNo) -> bool {
        let mut live = self.live.lock();
        match live.get_mut(&seq) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                live.remove(&seq);
                self.releases.fetch_add(1, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    pub(super) fn releases(&self) -> u64 {
        self.releases.load(Ordering::SeqCst)
    }

    /// The oldest pinned seqno.
    pub(super) fn oldest(&self) -> Option<SeqNo> {
        self.live.lock().keys().next().copied()
    }

    /// Every pinned seqno, oldest first.
    pub(super) fn list(&self) -> Vec<SeqNo> {
        self.live.lock().keys().copied().collect()
    }

    pub(super) fn count(&self) -> usize {
        self.live.lock().values().sum()
    }
}

impl Inner {
    /// Versions at or below this seqno that a newer version at or below it shadows are
    /// invisible to every reader, now and later.
    pub(super) fn smallest_snapshot(&self) -> SeqNo {
        let now = self.visible_seq.load(Ordering::Acquire);
        self.snapshots.oldest().map_or(now, |s| s.min(now))
    }

    pub(super) fn release_snapshot(&self, seq: SeqNo) {
        if self.snapshots.release(seq) {
            // Segments kept for this snapshot may be collectable now. Most releases (every
            // query's) find none: they wake nobody.
            let mut deferred = self.gc_deferred.lock();
            if !deferred.is_empty() {
                deferred.clear();
                drop(deferred);
                self.bg.lock().gc_check = true;
                self.wake_background();
            }
        }
    }
}

/// The pin behind one or more [`Snapshot`] clones.
struct Pin {
    inner: Arc<Inner>,
    seq: SeqNo,
}

impl Drop for Pin {
    fn drop(&mut self) {
        self.inner.release_snapshot(self.seq);
    }
}

/// A consistent, read-only view of one namespace at the moment it was taken (see
/// [`Namespace::snapshot`]). Clones share the view; it is released when the last one drops.
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
        let seq = ns.inner.snapshots.acquire(&ns.inner.visible_seq);
        Snapshot {
            pin: Arc::new(Pin {
                inner: ns.inner.clone(),
                seq,
            }),
            ns,
        }
    }

    /// The namespace this is a view of.
    pub fn namespace(&self) -> &Namespace {
        &self.ns
    }

    /// The value `key` had when the snapshot was taken.
    pub fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        self.ns.inner.get(&self.ns.entry, key, Some(self.pin.seq))
    }

    /// An iterator over the namespace as it was when the snapshot was taken.
    pub fn iter(&self, opts: ReadOptions) -> Result<Iter> {
        Iter::open(self.clone(), opts)
    }

    pub(super) fn seq(&self) -> SeqNo {
        self.pin.seq
    }

    /// Whether `key` had a value when the snapshot was taken.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        self.ns
            .inner
            .contains(&self.ns.entry, key, Some(self.pin.seq))
    }
}
