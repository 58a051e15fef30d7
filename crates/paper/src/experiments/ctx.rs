//! What an experiment runs its points with: this binary as a child process per run (a fresh
//! process and database each time; started as `cerberus-bench` for the bench's commands), its output kept in a log, its JSON read back; the
//! command lines gathered for the report.

use crate::commands::program_of;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Ctx {
    exe: PathBuf,
    /// Where this experiment's run documents, logs and databases go (`OUT/runs/NAME`).
    pub work: PathBuf,
    /// The smoke scale.
    pub quick: bool,
    /// Runs of each point.
    pub rounds: usize,
    commands: Vec<String>,
    runs: usize,
    /// The documents of this invocation's runs, by command line: those of the experiments
    /// before this one, and this one's own.
    pub documents: Documents,
}

/// Run documents by command line, each to be reused once at most (`Ctx::run_json_reusing`).
#[derive(Default)]
pub struct Documents {
    earlier: HashMap<Vec<String>, VecDeque<Value>>,
    mine: Vec<(Vec<String>, Value)>,
}

impl Documents {
    /// The documents an experiment that follows may reuse: the unused earlier ones and this
    /// experiment's.
    pub fn for_next(mut self) -> Documents {
        for (args, doc) in self.mine.drain(..) {
            self.earlier.entry(args).or_default().push_back(doc);
        }
        self
    }

    /// An earlier experiment's document of this exact command, not reused before.
    fn take(&mut self, args: &[String]) -> Option<Value> {
        let docs = self.earlier.get_mut(args)?;
        let doc = docs.pop_front();
        if docs.is_empty() {
            self.earlier.remove(args);
        }
        doc
    }
}

impl Ctx {
    pub fn new(
        exe: PathBuf,
        out: &Path,
        name: &str,
        quick: bool,
        rounds: usize,
        documents: Documents,
    ) -> Result<Ctx> {
        let work = out.join("runs").join(name);
        if work.exists() {
            std::fs::remove_dir_all(&work)
                .with_context(|| format!("clearing {}", work.display()))?;
        }
        std::fs::create_dir_all(&work).with_context(|| format!("making {}", work.display()))?;
        Ok(Ctx {
            exe,
            work,
            quick,
            rounds,
            commands: Vec::new(),
            runs: 0,
            documents,
        })
    }

    /// Picks the quick or the full scale's value.
    pub fn scale<T>(&self, quick: T, full: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// A fresh path under the experiment's directory (for a database or an output file).
    pub fn path(&mut self, what: &str) -> PathBuf {
        self.runs += 1;
        self.work.join(format!("{}-{what}", self.runs))
    }

    /// Runs `PROGRAM ARGS --json FILE` (`program_of` ARGS) and returns the document it wrote.
    pub fn run_json(&mut self, args: &[String]) -> Result<Value> {
        let doc = self.run_with_output(args, "--json")?;
        self.documents.mine.push((args.to_vec(), doc.clone()));
        Ok(doc)
    }

    /// As `run_json`, but an earlier experiment's run of the same command line in this
    /// invocation, not reused before, stands for it (it measured the same thing). Never one
    /// of this experiment's own: its repeated commands are rounds.
    pub fn run_json_reusing(&mut self, args: &[String]) -> Result<Value> {
        match self.documents.take(args) {
            Some(doc) => {
                self.commands
                    .push(format!("{} (the run of an earlier experiment)", line(args)));
                Ok(doc)
            }
            None => self.run_json(args),
        }
    }

    /// Runs `PROGRAM ARGS FLAG FILE` (the flag the command writes its document
    /// with) and returns that document.
    pub fn run_with_output(&mut self, args: &[String], flag: &str) -> Result<Value> {
        let json = self.path("run.json");
        let mut all = args.to_vec();
        all.push(flag.into());
        all.push(json.display().to_string());
        self.run_shown(&all, line(args))?;
        let text = std::fs::read_to_string(&json)
            .with_context(|| format!("reading {} after `{}`", json.display(), line(&all)))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", json.display()))
    }

    /// Runs `PROGRAM ARGS`, its output into a log; an error with the log's end if
    /// it fails.
    pub fn run(&mut self, args: &[String]) -> Result<()> {
        self.run_shown(args, line(args))
    }

    /// Runs `args`, `shown` in the report's commands (without the scratch file it writes).
    fn run_shown(&mut self, args: &[String], shown: String) -> Result<()> {
        let log = self.path("log");
        let file =
            std::fs::File::create(&log).with_context(|| format!("making {}", log.display()))?;
        let err = file.try_clone()?;
        self.commands.push(shown);
        let status = Command::new(&self.exe)
            .arg0(program_of(args))
            .args(args)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .status()
            .with_context(|| format!("starting {}", self.exe.display()))?;
        if !status.success() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "`{}` failed ({status}); the end of {}:\n{}",
                line(args),
                log.display(),
                tail.join("\n")
            );
        }
        Ok(())
    }

    /// The command lines run so far.
    pub fn commands(&self) -> Vec<String> {
        self.commands.clone()
    }

    /// Deletes the databases the runs left (their documents and logs stay).
    pub fn clean(&self) {
        if let Ok(entries) = std::fs::read_dir(&self.work) {
            for e in entries.flatten() {
                if e.path().is_dir() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
}

fn line(args: &[String]) -> String {
    let mut s = String::from(program_of(args));
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

/// The median of `xs` and their range (min, max); NaN for none.
pub fn median_range(xs: &[f64]) -> (f64, (f64, f64)) {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match cerberus_figures::median(xs.iter().copied()) {
        Some(m) => (m, (lo, hi)),
        None => (f64::NAN, (f64::NAN, f64::NAN)),
    }
}

/// `args` as owned strings.
pub fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ranges() {
        assert_eq!(median_range(&[3.0, 1.0, 2.0]), (2.0, (1.0, 3.0)));
        assert!(median_range(&[]).0.is_nan());
    }

    #[test]
    fn an_earlier_experiments_run_is_reused_once_and_never_its_own() {
        use serde_json::json;
        let args = vec![
            "queries".to_string(),
            "--records".to_string(),
            "10".to_string(),
        ];
        let mut docs = Documents::default();
        docs.mine.push((args.clone(), json!({"round": 1})));
        docs.mine.push((args.clone(), json!({"round": 2})));
        // This experiment's own runs of a command are its rounds, not stand-ins.
        assert_eq!(docs.take(&args), None);
        let mut next = docs.for_next();
        assert_eq!(next.take(&args), Some(json!({"round": 1})));
        assert_eq!(next.take(&args), Some(json!({"round": 2})));
        assert_eq!(next.take(&args), None);
        // Another command line is not the same run.
        next.mine.push((args.clone(), json!({"round": 3})));
        let mut last = next.for_next();
        assert_eq!(last.take(&args[..2]), None);
        assert_eq!(last.take(&args), Some(json!({"round": 3})));
    }
}
