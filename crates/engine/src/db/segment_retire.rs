//! The deletion of value-log segments GC collected: once the gets that may have found an
//! address in them are done, and once the writes GC moved out of them are flushed.

use super::gc_state::GcState;
use super::versions::Versions;
use super::write_queue::WriteQueue;
use crate::key::SeqNo;
use crate::vlog::VlogReader;
use std::sync::atomic::Ordering;

/// The parts a segment's retirement touches, borrowed.
pub(super) struct SegmentRetire<'a> {
    pub(super) vlog_reader: &'a VlogReader,
    pub(super) gc: &'a GcState,
    pub(super) versions: &'a Versions,
    pub(super) writes: &'a WriteQueue,
}

impl SegmentRetire<'_> {
    /// Deletes segment `seg` once the gets that may have found an address in it are done.
    pub(super) fn segment(&self, seg: u64) {
        self.vlog_reader.retire(seg);
        self.gc.liveness.forget(seg);
        let mut vs = self.versions.lock();
        vs.vlog_dead.remove(&seg);
        vs.namespaces.forget_segment(seg);
    }

    /// Retires the collected segments waiting for the writes up to `flushed` to be flushed.
    pub(super) fn flushed(&self, flushed: SeqNo) {
        // Retired under the list's lock: a collection listing segments meanwhile sees each
        // one either waiting or retired, never neither (it would collect it again).
        let mut pending = self.gc.retire_after_flush.lock();
        let (due, keep): (Vec<_>, Vec<_>) = pending.drain(..).partition(|(s, _)| *s <= flushed);
        for (_, seg) in due {
            self.segment(seg);
        }
        *pending = keep;
    }

    /// Retires every waiting segment when nothing written is left unflushed (a flush of an
    /// empty memtable writes nothing, so no flush would retire them).
    pub(super) fn if_all_flushed(&self) {
        // The seqno first: a write at or below it that is in no memtable now was flushed.
        let visible = self.writes.visible_seq.load(Ordering::Acquire);
        let sv = self.versions.super_version();
        if sv.mem.is_empty() && sv.imm.is_empty() {
            self.flushed(visible);
        }
    }
}
