//! `cerberus-bench floor [flags]`: the engine's fillrandom against the floor of its design
//! (`--engine floor`: per put, the record appended to a buffered log file and the key
//! inserted into a skiplist; see cerberus-bench-engines' floor.rs), in one run: the workload
//! list's runner with `fillrandom` and, unless `--engine` says otherwise, `--engine
//! cerberus,floor`, so that `--rounds N` alternates the two and prints the median of the
//! per-round ratios cerberus/floor.

use crate::cli::Args;
use anyhow::Result;
use clap::Parser;
use std::ffi::OsString;

/// The engines `floor` runs when `--engine` is not given.
pub const DEFAULT_ENGINES: &str = "cerberus,floor";

/// The arguments of the workload list that `cerberus-bench floor ARGS` stands for (`args`
/// starts with the command's name).
pub fn args(args: Vec<OsString>) -> Result<Args> {
    let mut argv: Vec<OsString> = vec!["cerberus-bench floor".into(), "fillrandom".into()];
    argv.extend(args.into_iter().skip(1));
    let mut a = Args::try_parse_from(argv)?;
    if a.engine.is_none() && a.device.is_none() {
        a.engine = Some(DEFAULT_ENGINES.into());
    }
    Ok(a)
}

pub fn main(argv: Vec<OsString>) -> Result<()> {
    let a = match args(argv) {
        Ok(a) => a,
        // --help and --version print and end as clap's own parse does.
        Err(e) => match e.downcast::<clap::Error>() {
            Ok(e) => e.exit(),
            Err(e) => return Err(e),
        },
    };
    crate::runner::run(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::engine_list;

    fn parse(extra: &[&str]) -> Args {
        let mut v: Vec<OsString> = vec!["floor".into()];
        v.extend(extra.iter().map(OsString::from));
        args(v).unwrap()
    }

    #[test]
    fn floor_is_fillrandom_on_cerberus_and_the_floor() {
        let a = parse(&["--num", "1000", "--rounds", "3"]);
        assert_eq!(a.workloads, "fillrandom");
        assert_eq!(engine_list(&a), "cerberus,floor");
        assert_eq!(a.rounds, 3);
        assert_eq!(a.num, 1000);
        let a = parse(&["--engine", "floor"]);
        assert_eq!(engine_list(&a), "floor");
    }

    #[test]
    fn a_floor_run_alternates_and_writes_its_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("floor.json");
        let md = dir.path().join("floor.md");
        let db = dir.path().join("db");
        let a = parse(&[
            "--num",
            "2000",
            "--value-size",
            "100",
            "--rounds",
            "2",
            "--db",
            db.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ]);
        crate::runner::run(a).unwrap();
        let docs: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let engines: Vec<&str> = docs
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["engine"].as_str().unwrap())
            .collect();
        // The second round in reverse (`rounds::order`).
        assert_eq!(engines, ["cerberus", "floor", "floor", "cerberus"]);
        assert!(db.join("floor").join("floor.log").exists());
        // The markdown: the command, then a row per engine, the floor's with the ratio.
        let md = std::fs::read_to_string(&md).unwrap();
        assert!(md.starts_with("```sh\n"), "{md}");
        assert!(md.contains("2 round(s)"), "{md}");
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| fillrandom |"))
            .collect();
        assert_eq!(rows.len(), 2, "{md}");
        assert!(rows[0].starts_with("| fillrandom | cerberus |") && rows[0].ends_with("|  |"));
        assert!(rows[1].starts_with("| fillrandom | floor |") && rows[1].contains("| **"));
    }
}
