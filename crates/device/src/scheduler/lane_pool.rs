//! The lanes' shared state (`lanes` runs them): their threads, which are busy, how many runs
//! are outstanding, and each lane's counters.

use cerberus_engine::BackgroundStep;
use crossbeam_channel::Sender;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Runs one engine job (`Db::run_background_job`).
pub type RunJob = Arc<dyn Fn() -> BackgroundStep + Send + Sync>;

#[derive(Default)]
#[repr(align(128))]
pub(super) struct LaneCounters {
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub gcs: AtomicU64,
    pub backfills: AtomicU64,
    pub busy_ns: AtomicU64,
}

pub(super) struct Lanes {
    pub(super) senders: Mutex<Vec<Sender<()>>>,
    /// A lane has a run queued or running. A run only goes to a free lane: a job may wait for
    /// another (value-log GC for a flush that makes room), so the runs must be able to run
    /// side by side, never one queued behind the other.
    pub(super) busy: Vec<AtomicBool>,
    pub(super) threads: Mutex<Vec<JoinHandle<()>>>,
    pub(super) counters: Vec<LaneCounters>,
    /// Lane runs queued or running, at most `limit`.
    pub(super) outstanding: AtomicUsize,
    pub(super) limit: usize,
    /// Work may be due that no queued run will see.
    pub(super) dirty: AtomicBool,
}

impl Lanes {
    /// A lane per core, and more (beside the first cores) if `limit` runs need them.
    pub(super) fn new(cores: usize, limit: usize) -> Lanes {
        let n = cores.max(limit).max(1);
        Lanes {
            senders: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            busy: (0..n).map(|_| AtomicBool::new(false)).collect(),
            counters: (0..n).map(|_| LaneCounters::default()).collect(),
            outstanding: AtomicUsize::new(0),
            limit: limit.max(1),
            dirty: AtomicBool::new(false),
        }
    }
}
