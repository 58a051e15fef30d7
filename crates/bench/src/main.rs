//! `cerberus-bench WORKLOAD[,WORKLOAD...] [flags]`: db_bench-style benchmarks of Cerberus and,
//! with the `rocksdb` feature, of RocksDB, run in one process so that figures compare.

mod bts;
mod cli;
mod commands;
mod dataset;
mod engine;
mod histogram;
mod itermem;
mod local_device;
mod memory;
mod multitenant;
mod plot;
mod profile;
mod queries;
mod report;
mod rounds;
mod runner;
mod seek;
mod table;
mod workload;

use clap::Parser;
use std::process::ExitCode;

/// The engine frees on background threads what writers allocated (frozen memtables); mimalloc
/// handles such cross-thread frees without contending on one arena lock, unlike glibc malloc.
/// Wrapped to count heap bytes while `itermem` measures (off otherwise: one relaxed load per
/// call).
#[global_allocator]
static GLOBAL: memory::CountingAlloc<mimalloc::MiMalloc> =
    memory::CountingAlloc::new(mimalloc::MiMalloc);

fn main() -> ExitCode {
    if let Some(code) = commands::dispatch() {
        return code;
    }
    match runner::run(cli::Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cerberus-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
