//! What capacity checks keep between writes: the flushes they made, the credits they give,
//! and the storage's free space as last asked; and the usage figures handles report.

use super::super_version::SuperVersion;
use crate::key::SeqNo;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Least time between two flushes a capacity check makes (device-wide): a namespace at its
/// capacity cannot make the memtable every tenant shares flush more often than this.
pub(super) const CAPACITY_FLUSH_EVERY: Duration = Duration::from_secs(1);

/// When a capacity check last flushed.
#[derive(Default)]
pub(super) struct CapacityFlushes {
    /// Time after the database opened of the last one (`None`: never).
    pub(super) last: parking_lot::Mutex<Option<Duration>>,
    /// Flushes installed: moved before the super version without the flushed memtable is
    /// swapped in, so a credit checked against an older one knows its memtables are gone.
    pub(super) epoch: AtomicU64,
}

/// A capacity check's credit: bytes of the versions a write replaces, and the seqno and
/// flush epoch its lookups read at.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Credit {
    pub(super) bytes: u64,
    pub(super) at: Option<(SeqNo, u64)>,
}

/// Whether the credit of `g` still holds when it is appended (under the writer lock, `sv`
/// loaded before `epoch` was read): no flush since its lookups, and no version of its keys
/// newer than they read in the memtables (another writer, or an earlier write of the same
/// commit group, replaced the version it was credited with: only one write may be).
pub(super) fn credit_holds(sv: &SuperVersion, g: &crate::vlog::EncodedWrite, epoch: u64) -> bool {
    let Some((seq, at_epoch)) = g.credit_at else {
        return true;
    };
    if at_epoch != epoch {
        return false;
    }
    let mut user = Vec::new();
    g.spans().all(|s| {
        user.clear();
        user.extend_from_slice(&g.nsid.to_be_bytes());
        user.extend_from_slice(&g.buf[s.key.clone()]);
        std::iter::once(&sv.mem)
            .chain(sv.imm.iter().map(|f| &f.mem))
            .all(|m| m.get(&user, SeqNo::MAX).is_none_or(|(s, _)| s <= seq))
    })
}

impl CapacityFlushes {
    /// Whether a check may flush at `now` (and, if so, it is counted as done then).
    pub(super) fn allow(&self, now: Duration) -> bool {
        let mut last = self.last.lock();
        if last.is_some_and(|t| now.saturating_sub(t) < CAPACITY_FLUSH_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

/// The storage's free space, asked at most every [`SpaceGauge::EVERY`]; read by every write
/// without a lock.
#[derive(Default)]
pub(super) struct SpaceGauge {
    /// Microseconds after the database opened when it was asked last, plus 1 (0: never).
    pub(super) asked_at: AtomicU64,
    /// The storage said how large it is (else no reserve applies).
    pub(super) known: AtomicBool,
    pub(super) total: AtomicU64,
    pub(super) free: AtomicU64,
}

impl SpaceGauge {
    /// A statvfs per write would cost more than the write; space moves slowly.
    const EVERY: Duration = Duration::from_millis(50);

    /// `(total, free)` as last asked; asks `storage` again (one caller at a time) when the
    /// answer is older than [`EVERY`](Self::EVERY).
    pub(super) fn read(
        &self,
        storage: &dyn crate::storage::Storage,
        now: Duration,
    ) -> Option<(u64, u64)> {
        let now = now.as_micros() as u64 + 1;
        let at = self.asked_at.load(Ordering::Acquire);
        let due = at == 0 || now.saturating_sub(at) >= Self::EVERY.as_micros() as u64;
        if due
            && self
                .asked_at
                .compare_exchange(at, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // A storage that cannot say has no reserve; a failed ask refuses nothing.
            match storage.space().ok().flatten() {
                Some((total, free)) => {
                    self.total.store(total, Ordering::Relaxed);
                    self.free.store(free, Ordering::Relaxed);
                    self.known.store(true, Ordering::Release);
                }
                None => self.known.store(false, Ordering::Release),
            }
        }
        self.known.load(Ordering::Acquire).then(|| {
            (
                self.total.load(Ordering::Relaxed),
                self.free.load(Ordering::Relaxed),
            )
        })
    }
}
