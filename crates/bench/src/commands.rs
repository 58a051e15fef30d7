//! The commands other than the workload list, chosen by the first argument:
//! `cerberus-bench plot` (charts of a multitenant grid, `plot/`), `cerberus-bench grid-table`
//! (its markdown table, `plot/grid_table.rs`), `cerberus-bench
//! plot-iterators` (tables and charts of an iterator sweep, `plot/iterators/`),
//! `cerberus-bench itermem` (what open iterators hold over many tables, `itermem/`),
//! `cerberus-bench dataset` (the paper's glacier and tweets datasets as JSON lines,
//! `dataset/`) and `cerberus-bench queries` (the paper's secondary-key queries on the engine
//! and SQLite, `queries/`), `cerberus-bench bts` (the scheduling policies with dedup as
//! the background task, `bts/`).

use anyhow::Result;
use std::ffi::OsString;
use std::process::ExitCode;

type Command = fn(Vec<OsString>) -> Result<()>;

const COMMANDS: [(&str, Command); 9] = [
    ("plot", |args| crate::plot::main(args)),
    ("grid-table", |args| crate::plot::grid_table::main(args)),
    ("plot-iterators", |args| crate::plot::iterators::main(args)),
    ("plot-queries", |args| crate::plot::queries::main(args)),
    ("itermem", |args| crate::itermem::main(args)),
    ("dataset", |args| crate::dataset::main(args)),
    ("queries", |args| crate::queries::main(args)),
    ("bts", |args| crate::bts::main(args)),
    ("plot-bts", |args| crate::plot::bts::main(args)),
];

/// Runs the command the first argument names, if it names one (its arguments start with its
/// name, taken as the program name); `None` for a workload list.
pub fn dispatch() -> Option<ExitCode> {
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
                "plot-iterators",
                "plot-queries",
                "itermem",
                "dataset",
                "queries",
                "bts",
                "plot-bts"
            ]
        );
    }
}
