//! compaction
