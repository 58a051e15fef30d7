//! `--markdown FILE`: a run's comparison as a markdown document for the docs, so that the
//! tables in `docs/benchmarks.md` are the bench's own output: the command that ran it, when
//! and on how many CPUs, then the table the caller made.

use anyhow::{Context as _, Result};
use std::path::Path;

/// What a document says about its run, taken when the run starts.
pub struct RunContext {
    command: String,
    started: String,
    cpus: usize,
    load: String,
}

impl RunContext {
    /// The context of this process's run: its command line (without `--markdown FILE`), the
    /// UTC time, the CPUs and the load average now.
    pub fn now() -> RunContext {
        RunContext {
            command: command_line(std::env::args()),
            started: utc_now(),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            load: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().next().map(str::to_string))
                .unwrap_or_else(|| "-".into()),
        }
    }

    /// The document: the command in a shell block, a line of when and where, `note`, then
    /// `table`.
    pub fn document(&self, note: &str, table: &str) -> String {
        format!(
            "```sh\n{}\n```\n\nStarted {} on {} CPUs, load average {} at the start. {note}\n\n{table}",
            self.command, self.started, self.cpus, self.load
        )
    }
}

/// Writes `text` to `path`.
pub fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The program's file name and its arguments, shell-quoted where needed, `--markdown FILE`
/// left out (the document does not name where it was written).
fn command_line(mut args: impl Iterator<Item = String>) -> String {
    let program = args.next().unwrap_or_default();
    let mut out = Path::new(&program)
        .file_name()
        .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
    let mut skip_next = false;
    for a in args {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        if a == "--markdown" {
            skip_next = true;
            continue;
        }
        if a.starts_with("--markdown=") {
            continue;
        }
        out.push(' ');
        out += &quote(&a);
    }
    out
}

fn quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,/=:+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The clock now, `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    cerberus_datasets::utc_timestamp(secs as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_leaves_the_markdown_file_out_and_quotes_what_a_shell_would_split() {
        let args = [
            "/some/target/release/cerberus-bench",
            "fillrandom,readrandom",
            "--markdown",
            "out.md",
            "--engine",
            "cerberus,fjall",
            "--markdown=x.md",
            "--db",
            "/tmp/a b",
            "--x",
            "it's",
        ];
        assert_eq!(
            command_line(args.iter().map(|s| s.to_string())),
            "cerberus-bench fillrandom,readrandom --engine cerberus,fjall --db '/tmp/a b' \
             --x 'it'\\''s'"
        );
    }
}
