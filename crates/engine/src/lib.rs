//! Cerberus storage engine: a key-value separated LSM tree (WiscKey-style value log that is
//! also the write-ahead log) over a [`storage::Storage`] abstraction.

#![deny(missing_docs)]

pub mod storage;

#[doc(hidden)]
pub mod fuzzing;

mod background;
mod batch;
mod bloom;
mod coding;
mod compaction;
mod db;
mod error;
mod id_hash;
mod index;
mod index_def;
mod index_kind;
mod iter;
mod key;
mod key_hashes;
mod memtable;
mod namespace_options;
mod options;
mod prefetch;
mod priority;
mod query;
mod row_cache;
mod space;
mod stats;
mod table;
#[cfg(test)]
mod test_alloc;
mod uptime;
mod version;
mod vlog;

pub use batch::WriteBatch;
pub use db::{prefix_end, RangeDelete, DELETE_RANGE_BATCH, DELETE_RANGE_STEP};
pub use db::{
    CheckpointInfo, Db, DbBuilder, FindOptions, GcStats, IndexInfo, Iter, IterMemory, Namespace,
    QueryOutput, ReadOptions, Readable, Snapshot, TopOptions, VerifyReport, CHECKPOINT_MARKER,
    DEFAULT_PREFETCH_DEGREE, MAX_GET_MANY_KEYS, RECORD_WORK,
};
pub use error::{Error, ErrorKind, Result};
pub use index::{AttrPath, IndexKind, Number, Scalar};
pub use key::Nsid;
pub use namespace_options::{IoShares, NamespaceOptions, MAX_WEIGHT};
pub use options::{
    BackgroundRunner, BackgroundStep, JobKind, Layout, Options, StorageKind, WriteOptions,
    WritePressure,
};
pub use options::{
    DEFAULT_MAX_INDEXES_PER_NAMESPACE, DEFAULT_RESERVE_MAX, DEFAULT_SNAPSHOT_MAX_AGE,
    MAX_GET_MANY_BYTES,
};
pub use query::{
    Aggregate, Condition, Continuation, Filter, Found, QueryResult, QueryStats, Ranked,
    DEFAULT_PAGE_BYTES,
};
pub use row_cache::RowCacheStats;
pub use space::{NamespaceSpace, Usage};
pub use stats::{
    DbStats, GetPath, LevelStats, ListingStats, NamespaceInfo, NamespaceStats, StepCost,
};
