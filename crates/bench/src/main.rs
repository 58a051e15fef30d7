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
mod table;
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
