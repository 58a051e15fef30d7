//! Leveled compaction. The picker looks at a version and returns a decision (a task); the
//! worker carries it out and returns the version edit. Neither touches the live version.

mod merge;
mod picker;
mod worker;

pub use merge::{LevelSource, MergingIter, Source};
#[cfg(test)]
pub use picker::{max_bytes_for_level, AGING_PICKS};
pub use picker::{pick, pick_split, range_tasks, CompactionTask, Cursors};
pub use worker::{run, OutputParams, Retention, RunContext, SnapshotFloors, TableSink};
