//! `cerberus-bench WORKLOAD[,WORKLOAD...] [flags]`: db_bench-style benchmarks of Cerberus and,
//! with the `rocksdb` feature, of RocksDB, run in one process so that figures compare.

mod bts;
mod cli;
mod commands;
mod dataset;
mod floor;
mod histogram;
mod itermem;
mod memory;
mod multitenant;
mod noisy;
mod paper;
mod queries;
mod reclaim;
mod report;
#[cfg(all(test, feature = "rocksdb"))]
mod rocksdb_tests;
mod rounds;
mod runner;
mod workload;

use clap::Parser;
use std::process::ExitCode;

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
