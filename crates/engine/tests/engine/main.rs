//! The engine's suites by feature, one test binary (one build and link instead of one
//! per suite); the stress test, the fault sweeps and the descriptor limits (which count
//! the process's open files) stay binaries of their own.

#[path = "../common/mod.rs"]
mod common;

mod background_runner;
mod bit_rot;
mod checkpoint;
mod concurrency;
mod corruption;
mod crash;
mod delete_range;
mod gc;
mod gc_space;
mod get_many;
mod index_crash;
mod indexes;
mod iterators;
mod keys_only;
mod limits;
mod list;
mod model;
mod namespaces;
mod numbers;
mod open;
mod per_namespace;
mod point_index;
mod quota;
mod quota_indexes;
mod read_only;
mod row_cache;
mod settle;
mod sized_storage;
mod snapshot_age;
mod snapshot_isolation;
mod snapshots;
mod top;
mod top_model;
mod top_pieces;
mod torn_log;
mod work_limit;
