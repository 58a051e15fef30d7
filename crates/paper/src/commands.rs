//! The programs a `cerberus-paper` process can be: its own commands, chosen by the first
//! argument (`queries`: the paper's secondary-key queries on the engine and SQLite,
//! `queries/`; `plot-queries`: their charts; `bts`: the scheduling policies with dedup as the
//! background task, `bts/`; `plot-bts`: its charts; `itermem`: what open iterators hold over
//! many tables, `itermem/`), else the papers' experiments in one run (`experiments/`); or,
//! started under the name `cerberus-bench`, the bench's command line (a child run of an
//! experiment: the bench linked in, so that one build runs every experiment).

use anyhow::Result;
use std::ffi::OsString;
use std::path::Path;

type Command = fn(Vec<OsString>) -> Result<()>;

/// The name the bench's command line runs under (the program name of a child run).
pub const BENCH: &str = "cerberus-bench";

/// This program's name.
pub const PAPER: &str = "cerberus-paper";

/// This program's commands (their arguments start with the command's name, taken as the
/// program name).
pub const COMMANDS: [(&str, Command); 5] = [
    ("queries", |args| crate::queries::main(args)),
    ("plot-queries", |args| {
        Ok(cerberus_figures::plot_queries(args)?)
    }),
    ("bts", |args| crate::bts::main(args)),
    ("plot-bts", |args| Ok(cerberus_figures::plot_bts(args)?)),
    ("itermem", |args| crate::itermem::main(args)),
];

/// The command `name` names, if it is one of this program's.
pub fn command(name: &OsString) -> Option<(&'static str, Command)> {
    COMMANDS.iter().copied().find(|(n, _)| name == *n)
}

/// The program a child run of `args` is: this one for its own commands, else the bench.
pub fn program_of(args: &[String]) -> &'static str {
    match args.first() {
        Some(first) if COMMANDS.iter().any(|(n, _)| first == n) => PAPER,
        _ => BENCH,
    }
}

/// Whether this process was started under the bench's name.
pub fn started_as_bench() -> bool {
    std::env::args_os()
        .next()
        .is_some_and(|a| Path::new(&a).file_name().is_some_and(|n| n == BENCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_named() {
        let names: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["queries", "plot-queries", "bts", "plot-bts", "itermem"]
        );
    }

    #[test]
    fn the_bench_runs_what_is_not_this_programs() {
        let of = |a: &[&str]| program_of(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(of(&["queries", "--dataset", "glacier"]), PAPER);
        assert_eq!(of(&["itermem"]), PAPER);
        assert_eq!(of(&["multitenant", "--tenants", "2"]), BENCH);
        assert_eq!(of(&["fillrandom,flush,compact"]), BENCH);
        assert_eq!(of(&["reclaim"]), BENCH);
    }
}
