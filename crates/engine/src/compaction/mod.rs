//! Leveled compaction. The picker looks at a version and returns a decision (a task); the
//! worker carries it out and returns the version edit. Neither touches the live version.

mod merge;
mod picker;
mod worker;

pub use merge::{LevelSource, MergingIter, Source};
pub use picker::{pick, pick_split, range_tasks, CompactionTask, Cursors};
pub use worker::{run, OutputParams, Retention, RunContext, SnapshotFloors, TableSink};
