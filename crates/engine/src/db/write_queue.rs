//! The commit queue: the writer's state (the value log, the next seqno) behind its lock, and
//! the writes waiting to join a commit group.

use super::log_syncs::LogSyncs;
use super::writer_lock::WriterLock;
use crate::error::Result;
use crate::key::SeqNo;
use crate::vlog::{EncodedWrite, VlogWriter};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(super) struct WriterState {
    pub(super) vlog: VlogWriter,
    pub(super) next_seq: SeqNo,
    /// Scratch for joining the records of a commit group into one append.
    pub(super) buf: Vec<u8>,
}

pub(super) type WriterGuard<'a> = std::sync::MutexGuard<'a, WriterState>;

/// The write path's shared state: the commit queue, the log writer its leaders append with,
/// and how far writes are visible.
pub(super) struct WriteQueue {
    pub(super) writer: WriterLock<WriterState>,
    pub(super) queue: Mutex<VecDeque<Arc<PendingWrite>>>,
    pub(super) queue_cv: Condvar,
    /// Highest seqno whose write is complete; reads see everything at or below it.
    pub(super) visible_seq: AtomicU64,
    /// Syncs of the log asked for on their own, coalesced.
    pub(super) syncs: LogSyncs,
}

impl WriteQueue {
    /// Returns once every write queued or under way now is done (committed or failed): a
    /// leader takes writes from the front in order, and pops each one only when its group is
    /// done; a write that needs no sync commits alone under the writer lock, which it held
    /// when it checked its namespace.
    pub(super) fn wait_queued(&self) {
        let mut queue = self.queue.lock();
        if let Some(last) = queue.back().cloned() {
            while queue.iter().any(|p| Arc::ptr_eq(p, &last)) {
                self.queue_cv.wait(&mut queue);
            }
        }
        drop(queue);
        drop(self.writer.lock());
    }

    /// The seqno a read at `at` looks at (`None`: the newest visible now).
    pub(super) fn read_seq(&self, at: Option<SeqNo>) -> SeqNo {
        at.unwrap_or_else(|| self.visible_seq.load(Ordering::Acquire))
    }

    /// An empty queue before `writer`, with every write up to `last_seq` visible.
    pub(super) fn new(writer: WriterState, last_seq: SeqNo) -> WriteQueue {
        WriteQueue {
            writer: WriterLock::new(writer),
            queue: Mutex::new(VecDeque::new()),
            queue_cv: Condvar::new(),
            visible_seq: AtomicU64::new(last_seq),
            syncs: LogSyncs::new(),
        }
    }
}

/// A write waiting in the commit queue. The first in the queue leads: it writes the records
/// of every waiting write with one append (and one sync), then hands each its result.
pub(super) struct PendingWrite {
    pub(super) records: Mutex<Option<EncodedWrite>>,
    /// The writer waits for its records to be synced.
    pub(super) sync: bool,
    pub(super) result: Mutex<Option<Result<()>>>,
}

/// A commit group stops growing at this many bytes, so small writes do not wait long behind
/// big ones.
pub(super) const MAX_GROUP_BYTES: usize = 1 << 20;
