//! The commands other than the workload list, chosen by the first argument:
//! `cerberus-bench plot` (charts of a multitenant grid), `cerberus-bench grid-table` (its
//! markdown table), `grid-median` (the median document of a point run several times),
//! `cerberus-bench plot-iterators` (tables and charts of an iterator sweep; all four drawn by
//! the `cerberus-figures` crate), `cerberus-bench dataset` (the paper's glacier and tweets datasets as JSON lines,
//! from the `cerberus-datasets` crate), `cerberus-bench noisy` (a victim tenant's gets beside
//! writing neighbours, `noisy/`), `plot-noisy` (its charts), `cerberus-bench floor` (fillrandom
//! on the engine and on the floor of its design, alternated, `floor.rs`) and
//! `cerberus-bench reclaim` (a tenant removed and its space reclaimed, `reclaim.rs`) and
//! `cerberus-bench ycsb` (YCSB's core workloads A-F, `ycsb/`). The
//! papers' experiments (`queries`, `bts`, `itermem`, the paper's run) are `cerberus-paper`'s.

use crate::{cli, runner};
use anyhow::Result;
use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

type Command = fn(Vec<OsString>) -> Result<()>;

const COMMANDS: [(&str, Command); 10] = [
    ("plot", |args| Ok(cerberus_figures::plot(args)?)),
    ("grid-table", |args| Ok(cerberus_figures::grid_table(args)?)),
    ("grid-median", |args| {
        Ok(cerberus_figures::grid_median(args)?)
    }),
    ("plot-iterators", |args| {
        Ok(cerberus_figures::plot_iterators(args)?)
    }),
    ("dataset", |args| crate::dataset::main(args)),
    ("noisy", |args| crate::noisy::main(args)),
    ("plot-noisy", |args| Ok(cerberus_figures::plot_noisy(args)?)),
    ("floor", |args| crate::floor::main(args)),
    ("reclaim", |args| crate::reclaim::main(args)),
    ("ycsb", |args| crate::ycsb::command::main(args)),
];

/// Runs the bench's command line: the command the first argument names, else the workload
/// list.
pub fn main() -> ExitCode {
    if let Some(code) = dispatch() {
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

/// Runs the command the first argument names, if it names one (its arguments start with its
/// name, taken as the program name); `None` for a workload list.
fn dispatch() -> Option<ExitCode> {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let first = args.first()?;
    let (name, command) = COMMANDS.iter().find(|(name, _)| first == *name)?;
    Some(match command(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cerberus-bench {name}: error: {e:#}");
            ExitCode::FAILURE
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_named() {
        let names: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "plot",
                "grid-table",
                "grid-median",
                "plot-iterators",
                "dataset",
                "noisy",
                "plot-noisy",
                "floor",
                "reclaim",
                "ycsb"
            ]
        );
    }
}
