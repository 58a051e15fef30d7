//! `cerberus-bench WORKLOAD[,WORKLOAD...] [flags]`: db_bench-style benchmarks of Cerberus and,
//! with the `rocksdb` feature, of RocksDB, run in one process so that figures compare. A
//! library for `cerberus-paper`, which runs this command line for the papers' experiments
//! ([`main`]) and measures with its histogram and heap counter.

mod cli;
mod commands;
mod dataset;
#[cfg(all(test, feature = "fjall"))]
mod fjall_tests;
mod floor;
mod histogram;
mod markdown;
mod memory;
mod multitenant;
mod noisy;
#[cfg(all(test, any(feature = "rocksdb", feature = "fjall")))]
mod peer_tests;
mod reclaim;
mod report;
#[cfg(all(test, feature = "rocksdb"))]
mod rocksdb_tests;
mod rounds;
mod runner;
mod workload;
mod ycsb;

pub use commands::main;
pub use histogram::Histogram;
pub use memory::{count_heap, heap_delta, MemorySample};
pub use multitenant::figures::mean;
