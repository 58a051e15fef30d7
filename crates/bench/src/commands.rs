//! The commands other than the workload list, chosen by the first argument:
//! `cerberus-bench plot` (charts of a multitenant grid), `cerberus-bench grid-table` (its
//! markdown table), `grid-median` (the median document of a point run several times),
//! `cerberus-bench plot-iterators` (tables and charts of an iterator sweep),
//! `plot-queries` and `plot-bts` (all five drawn by the `cerberus-figures` crate),
//! `cerberus-bench itermem` (what open iterators hold over many tables, `itermem/`),
//! `cerberus-bench dataset` (the paper's glacier and tweets datasets as JSON lines,
//! from the `cerberus-datasets` crate) and `cerberus-bench queries` (the paper's secondary-key queries on the engine
//! and SQLite, `queries/`), `cerberus-bench bts` (the scheduling policies with dedup as
//! the background task, `bts/`), `cerberus-bench noisy` (a victim tenant's gets beside
//! writing neighbours, `noisy/`), `plot-noisy` (its charts) and `cerberus-bench floor` (fillrandom
//! on the engine and on the floor of its design, alternated, `floor.rs`) and `cerberus-bench paper` (the papers' figures in one run,
//! `paper/`), `cerberus-bench reclaim` (a tenant removed and its space reclaimed, `reclaim.rs`).

use anyhow::Result;
use std::ffi::OsString;
use std::process::ExitCode;

type Command = fn(Vec<OsString>) -> Result<()>;

const COMMANDS: [(&str, Command); 15] = [
    ("plot", |args| Ok(cerberus_figures::plot(args)?)),
    ("grid-table", |args| Ok(cerberus_figures::grid_table(args)?)),
    ("grid-median", |args| {
        Ok(cerberus_figures::grid_median(args)?)
    }),
    ("plot-iterators", |args| {
        Ok(cerberus_figures::plot_iterators(args)?)
    }),
    ("plot-queries", |args| {
        Ok(cerberus_figures::plot_queries(args)?)
    }),
    ("itermem", |args| crate::itermem::main(args)),
    ("dataset", |args| crate::dataset::main(args)),
    ("queries", |args| crate::queries::main(args)),
    ("bts", |args| crate::bts::main(args)),
    ("plot-bts", |args| Ok(cerberus_figures::plot_bts(args)?)),
    ("noisy", |args| crate::noisy::main(args)),
    ("plot-noisy", |args| Ok(cerberus_figures::plot_noisy(args)?)),
    ("floor", |args| crate::floor::main(args)),
    ("paper", |args| crate::paper::main(args)),
    ("reclaim", |args| crate::reclaim::main(args)),
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
                "grid-median",
                "plot-iterators",
                "plot-queries",
                "itermem",
                "dataset",
                "queries",
                "bts",
                "plot-bts",
                "noisy",
                "plot-noisy",
                "floor",
                "paper",
                "reclaim"
            ]
        );
    }
}
