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

/// `YYYY-MM-DD HH:MM UTC` of the clock now.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

fn utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// The proleptic Gregorian date of a count of days since 1970-01-01 (Howard Hinnant's
/// days-to-civil algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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

    #[test]
    fn dates_are_the_calendars() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        // 2024-02-29 12:34:56 UTC, a leap day.
        assert_eq!(utc(1_709_210_096), "2024-02-29 12:34 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_798_761_599), "2026-12-31 23:59 UTC");
    }
}
