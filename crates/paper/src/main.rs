//! `cerberus-paper --out DIR [--quick] [--rounds N] [--only NAME,...] [--list]`: the papers'
//! experiments in one run, their documents, figures and report; `cerberus-paper queries`,
//! `bts`, `itermem` (and `plot-queries`, `plot-bts`): the experiments only the papers' figures
//! use. See `commands.rs` for how a child run of the bench is this same program.

mod bts;
mod commands;
mod experiments;
mod itermem;
mod queries;

use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    if commands::started_as_bench() {
        return cerberus_bench::main();
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    let (name, result) = match args.get(1).and_then(commands::command) {
        Some((name, run)) => (
            format!("{} {name}", commands::PAPER),
            run(args[1..].to_vec()),
        ),
        None => (commands::PAPER.to_string(), experiments::main(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
