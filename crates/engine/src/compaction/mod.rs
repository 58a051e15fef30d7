//! Leveled compaction. The picker looks at a version and returns a decision (a task); the
//! worker carries it out and returns the version edit. Neither touches the live version.

mod consolidate;
mod merge;
mod picker;
mod worker;

pub use consolidate::{pick_consolidation, IdleNs};
pub use merge::{LevelSource, MergingIter, Source};
#[cfg(test)]
pub use picker::{level_scores, tree_bytes, AGING_PICKS};
pub use picker::{pick, pick_split, range_tasks, CompactionTask, Cursors};
pub use worker::{run, OutputParams, Retention, RunContext, SnapshotFloors, TableSink};
