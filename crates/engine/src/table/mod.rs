//! Tables: immutable sorted files of `(internal key, index value)` entries.
//!
//! Layout: `data block* ++ filter ++ point index ++ index block ++ namespace table ++ footer
//! (64 bytes)`.
//! Every block is followed by the crc32c of its bytes. The index block maps the last key of
//! each data block to its `(offset, size)`. The namespace table (NSTable) lists per namespace
//! the smallest and largest user key and the entry count. The point index (optional) maps
//! each user key's hash to its newest version's value-log address (`point_index.rs`).

pub mod block;
mod builder;
mod cache;
pub mod filter;
mod format;
mod iter;
mod meta_blocks;
mod open_cache;
mod point_budget;
mod point_index;
mod reader;
#[cfg(test)]
mod tests;

pub use builder::{TableBuilder, TableProps};
pub use cache::BlockCache;
pub use format::{parse_table_name, table_name, BlockHandle};
pub use iter::{IterConfig, TableIter};
pub use open_cache::{SegmentFiles, TableCache};
pub use point_index::PointProbe;
pub use reader::{Ends, TableReader};
