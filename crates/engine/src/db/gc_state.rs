//! Value-log GC's state: the liveness of each segment's records, the segments it left or
//! found damaged, and what a run did.

use super::snapshots::DeferredSegments;
use crate::key::SeqNo;
use crate::vlog::Liveness;
use parking_lot::Mutex;

/// What a garbage collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Sealed segments looked at.
    pub segments_scanned: usize,
    /// Segments collected: their live records rewritten, the files deleted.
    pub segments_deleted: usize,
    /// Bytes of deleted segments.
    pub bytes_reclaimed: u64,
    /// Live records moved to the head of the log.
    pub records_rewritten: u64,
    /// Bytes of those records.
    pub bytes_rewritten: u64,
    /// Segments found damaged (a checksum that fails: bit rot in synced data). GC keeps them,
    /// names them in [`crate::Db::damaged_segments`] and does not read them again.
    pub segments_damaged: usize,
}

/// What value-log GC keeps between collections: the dead bytes of each segment, the
/// segments it had to leave, and those it collected but may not retire yet.
pub(super) struct GcState {
    pub(super) liveness: Liveness,
    /// Segments GC left because a live snapshot can reach a record in them; looked at
    /// again once a snapshot of one of those namespaces is released.
    pub(super) deferred: Mutex<DeferredSegments>,
    /// Segments GC collected, to be retired once the writes up to the seqno are flushed.
    pub(super) retire_after_flush: Mutex<Vec<(SeqNo, u64)>>,
    /// Segments GC found damaged, with what it found: kept, never collected (their intact
    /// records stay readable, reads of the damaged ones fail with the same corruption).
    pub(super) damaged: Mutex<std::collections::BTreeMap<u64, String>>,
}

impl GcState {
    pub(super) fn new(liveness: Liveness) -> GcState {
        GcState {
            liveness,
            deferred: Mutex::new(DeferredSegments::default()),
            retire_after_flush: Mutex::new(Vec::new()),
            damaged: Mutex::default(),
        }
    }
}
