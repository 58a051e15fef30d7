//! Background jobs as values: what runs, and what each holds while it runs.

use crate::compaction::CompactionTask;
use crate::key::Nsid;
use crate::options::JobKind;
use crate::version::{Version, RUNS};
use std::sync::Arc;

/// The parts of the engine a job holds while it runs. Two jobs that hold a common part never
/// run at once: that one rule is what keeps compactions from overlapping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slots(u8);

impl Slots {
    /// The oldest frozen memtable, written out as an L0 table.
    pub const FLUSH: Slots = Slots(1);
    /// L0 (per namespace: its split into runs).
    pub const SPLIT: Slots = Slots(1 << 1);
    /// The trees from L1 down (in one shared tree, L0 too).
    pub const TREE: Slots = Slots(1 << 2);
    /// Value-log collection.
    pub const GC: Slots = Slots(1 << 3);
    /// An index backfill.
    pub const BACKFILL: Slots = Slots(1 << 4);

    pub fn union(self, other: Slots) -> Slots {
        Slots(self.0 | other.0)
    }

    pub fn without(self, other: Slots) -> Slots {
        Slots(self.0 & !other.0)
    }

    pub fn meets(self, other: Slots) -> bool {
        self.0 & other.0 != 0
    }

    pub fn contains(self, other: Slots) -> bool {
        self.0 & other.0 == other.0
    }
}

/// How much a look for a value-log segment to collect wants space back (`db/gc.rs`,
/// `GcGate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcUrgency {
    /// Not at all: GC waits until the log holds its dead ratio of garbage.
    Wait,
    /// A destroyed namespace's values are garbage: segments past the ratio go without
    /// waiting for the log.
    Reclaim,
    /// Writes or jobs were refused for want of space: the deadest segment with any garbage
    /// goes, if its live bytes fit in the free space.
    Space,
}

impl GcUrgency {
    /// The least share of a segment that must be dead for it to be collected at this
    /// urgency, `ratio` being the options' `vlog_gc_dead_ratio`.
    pub fn least_dead(self, ratio: f64) -> f64 {
        match self {
            GcUrgency::Space => 0.0,
            GcUrgency::Wait | GcUrgency::Reclaim => ratio,
        }
    }
}

/// One unit of background work, decided by the [`Policy`](super::Policy) and carried out by
/// the database.
pub enum Job {
    /// The oldest frozen memtable into an L0 table.
    Flush,
    /// L0 into per-namespace runs, or (all of L0 one namespace's) straight into its L1.
    Split {
        task: CompactionTask,
        version: Arc<Version>,
    },
    /// A namespace's runs into its L1, or a table of a tree one level down.
    Compact {
        task: CompactionTask,
        version: Arc<Version>,
    },
    /// An idle namespace's whole tree into one sorted run in its deepest level: the
    /// lowest-priority tree job, once per idle period of the namespace.
    Consolidate {
        ns: Nsid,
        task: CompactionTask,
        version: Arc<Version>,
    },
    /// Collect one value-log segment, picked at that urgency.
    Gc { segment: u64, urgency: GcUrgency },
    /// Fill index `index` of namespace `ns` with the records stored before it was created.
    Backfill { ns: Nsid, index: Nsid },
}

impl Job {
    pub fn kind(&self) -> JobKind {
        match self {
            Job::Flush => JobKind::Flush,
            Job::Split { .. } | Job::Compact { .. } | Job::Consolidate { .. } => {
                JobKind::Compaction
            }
            Job::Gc { .. } => JobKind::Gc,
            Job::Backfill { .. } => JobKind::Backfill,
        }
    }

    /// What the job holds while it runs. A split that merges straight into L1 writes a tree:
    /// it holds the tree slot as well.
    pub fn slots(&self) -> Slots {
        match self {
            Job::Flush => Slots::FLUSH,
            Job::Split { task, .. } if task.output_level() != RUNS => {
                Slots::SPLIT.union(Slots::TREE)
            }
            Job::Split { .. } => Slots::SPLIT,
            Job::Compact { .. } | Job::Consolidate { .. } => Slots::TREE,
            Job::Gc { .. } => Slots::GC,
            Job::Backfill { .. } => Slots::BACKFILL,
        }
    }

    /// The compaction the job carries out, if it is one.
    #[cfg(test)]
    pub fn task(&self) -> Option<(&CompactionTask, &Arc<Version>)> {
        match self {
            Job::Split { task, version }
            | Job::Compact { task, version }
            | Job::Consolidate { task, version, .. } => Some((task, version)),
            _ => None,
        }
    }
}

/// How a job ended, as the policy needs to know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Failed for want of space: nothing is lost, the job is retried later.
    NoSpace(String),
    /// Any other failure: the database turns read-only (a backfill's failure is its
    /// `create_index`'s error instead, and leaves the database as it is).
    Failed(String),
}
