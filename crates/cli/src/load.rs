//! `cerberus load`: bulk load of JSON lines or CSV into a namespace, several puts in flight,
//! with a progress bar.
//!
//! JSON lines: every non-empty line is a JSON object, stored as it is, under the value of
//! `--key-field`. CSV: the first row names the columns; each row is stored as a JSON object
//! (numbers as numbers) under its `--key-field` column. A record that cannot be stored (not
//! JSON, no key, key or value over the device's limits) stops the load with its line number
//! and the count of records stored; with `--skip-bad` it is counted, reported and skipped.

use crate::limits::Limits;
use anyhow::{anyhow, bail, Context, Result};
use cerberus_host::BlockingNamespace;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Bad lines reported one by one; past this many, only counted.
const SHOWN_BAD_LINES: usize = 10;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON object a line.
    Jsonl,
    /// Comma-separated, the first row naming the columns.
    Csv,
}

#[derive(clap::Args)]
pub struct LoadArgs {
    /// The file to load; `-`: standard input.
    file: PathBuf,
    /// jsonl or csv (default: from the file name, jsonl unless it ends in .csv; standard
    /// input: jsonl).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// JSON field (or CSV column) holding the key.
    #[arg(long, default_value = "id")]
    key_field: String,
    /// Puts in flight at once.
    #[arg(long, default_value_t = 32)]
    parallel: usize,
    /// Skip records that cannot be stored, report their line numbers, store the others.
    #[arg(long)]
    skip_bad: bool,
}

/// One record: where it came from, its key and value.
struct Record {
    line: u64,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// A line's record, or why it has none.
type Parsed = std::result::Result<(Vec<u8>, Vec<u8>), String>;

/// Bad lines seen with `--skip-bad`.
#[derive(Default)]
struct Skipped {
    count: u64,
    shown: Vec<(u64, String)>,
}

impl Skipped {
    fn add(&mut self, line: u64, reason: String) {
        self.count += 1;
        if self.shown.len() < SHOWN_BAD_LINES {
            self.shown.push((line, reason));
        }
    }
}

pub fn run(ns: &BlockingNamespace, limits: Option<Limits>, args: &LoadArgs) -> Result<()> {
    let stdin = args.file.as_os_str() == "-";
    let (input, bar) = open_input(&args.file, stdin)?;
    let reader = Progress {
        inner: input,
        bar: bar.clone(),
    };
    let format = args.format.unwrap_or_else(|| format_of(&args.file));
    let (tx, rx) = crossbeam_channel::bounded::<Record>(args.parallel.max(1) * 4);
    let stored = AtomicU64::new(0);
    // The first put the device refused: its line and the error.
    let failure: Mutex<Option<(u64, cerberus_host::Error)>> = Mutex::new(None);
    let mut skipped = Skipped::default();
    let mut bad_line: Option<(u64, String)> = None;
    let read = std::thread::scope(|s| -> Result<()> {
        for _ in 0..args.parallel.max(1) {
            let rx = rx.clone();
            let (stored, failure, bar) = (&stored, &failure, &bar);
            s.spawn(move || {
                for r in rx {
                    if let Err(e) = ns.put(r.key, r.value) {
                        let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                        f.get_or_insert((r.line, e));
                        return;
                    }
                    let n = stored.fetch_add(1, Ordering::Relaxed) + 1;
                    if n % 1024 == 0 {
                        bar.set_message(format!("{n} records"));
                    }
                }
            });
        }
        drop(rx);
        let mut emit = |line: u64, parsed: Parsed| -> bool {
            let parsed = parsed.and_then(|(key, value)| {
                if let Some(l) = &limits {
                    l.check_key(&key)?;
                    l.check_value_len(value.len() as u64)?;
                }
                Ok((key, value))
            });
            match parsed {
                Ok((key, value)) => {
                    let failed = failure.lock().map(|f| f.is_some()).unwrap_or(true);
                    !failed && tx.send(Record { line, key, value }).is_ok()
                }
                Err(reason) if args.skip_bad => {
                    skipped.add(line, reason);
                    true
                }
                Err(reason) => {
                    bad_line = Some((line, reason));
                    false
                }
            }
        };
        let read = match format {
            Format::Jsonl => read_jsonl(reader, &args.key_field, &mut emit),
            Format::Csv => read_csv(reader, &args.key_field, &mut emit),
        };
        // Closing the channel lets the writers finish what is queued and stop.
        drop(tx);
        read
    });
    bar.finish_and_clear();
    let n = stored.load(Ordering::Relaxed);
    let records = |n: u64| plural(n, "record", "records");
    if let Some((line, e)) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        bail!(
            "line {line}: the device refused the record: {e}; load stopped with {} stored",
            records(n)
        );
    }
    if let Err(e) = read {
        bail!(
            "{}; load stopped with {} stored",
            crate::error_text::error_text(&e),
            records(n)
        );
    }
    // A file read as JSON lines only because of its name: say how to read it as CSV.
    let hint = |reason: String| match args.format {
        None if stdin && reason.starts_with("not JSON") => format!(
            "{reason} (standard input is read as JSON lines: give --format csv if it is CSV)"
        ),
        None if format == Format::Jsonl && reason.starts_with("not JSON") => format!(
            "{reason} (read as JSON lines: its name does not end in .csv; give --format csv \
             if it is CSV)"
        ),
        _ => reason,
    };
    if let Some((line, reason)) = bad_line {
        let reason = hint(reason);
        bail!(
            "line {line}: {reason}; load stopped there with {} stored (the records before \
             line {line}). Fix that line, or load the file again with --skip-bad to store the \
             other records and list the bad lines",
            records(n)
        );
    }
    report(ns.nsid(), n, &skipped);
    if n == 0 && skipped.count > 0 {
        // Skipping is for a few bad lines among good ones: a file with no good line is the
        // wrong file, or read in the wrong format, and a script must see it fail.
        let first = skipped.shown.first().map(|(_, r)| hint(r.clone()));
        bail!(
            "every line was bad: nothing stored (the first: {})",
            first.unwrap_or_default()
        );
    }
    Ok(())
}

/// The records' source (`-`: standard input) and the bar of its bytes read (none for
/// standard input, which has no length to show progress against).
fn open_input(file: &Path, stdin: bool) -> Result<(Box<dyn Read>, ProgressBar)> {
    if stdin {
        return Ok((Box::new(std::io::stdin().lock()), ProgressBar::hidden()));
    }
    let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((Box::new(f), progress_bar(len)))
}

/// A bar of the file's bytes read.
fn progress_bar(len: u64) -> ProgressBar {
    ProgressBar::new(len).with_style(
        ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} {msg} ({bytes_per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    )
}

/// CSV when the file name ends in .csv, else JSON lines.
fn format_of(file: &Path) -> Format {
    if file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        Format::Csv
    } else {
        Format::Jsonl
    }
}

/// What a load that ran to the end stored, and the bad lines it skipped.
fn report(nsid: u32, stored: u64, skipped: &Skipped) {
    let records = plural(stored, "record", "records");
    if skipped.count == 0 {
        eprintln!("loaded {records} into namespace {nsid}");
        return;
    }
    eprintln!(
        "loaded {records} into namespace {nsid}; skipped {}:",
        plural(skipped.count, "bad line", "bad lines")
    );
    for (line, reason) in &skipped.shown {
        eprintln!("  line {line}: {reason}");
    }
    let unshown = skipped.count - skipped.shown.len() as u64;
    if unshown > 0 {
        eprintln!("  ... and {unshown} more");
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn key_of(v: &serde_json::Value, field: &str) -> Result<Vec<u8>, String> {
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    match v.get(field) {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.as_bytes().to_vec()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string().into_bytes()),
        Some(_) => Err(format!(
            "field {field:?} is not a non-empty string or a number"
        )),
        None => Err(format!("no field {field:?}")),
    }
}

/// Hands each line's record (or why it has none) to `emit` until it returns false. Only
/// reading the file can fail here.
fn read_jsonl(r: impl Read, field: &str, emit: &mut dyn FnMut(u64, Parsed) -> bool) -> Result<()> {
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading line {}", line_no + 1))?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let parsed = match serde_json::from_slice::<serde_json::Value>(text) {
            Ok(v) => key_of(&v, field).map(|key| (key, text.to_vec())),
            Err(e) => Err(json_error(&e)),
        };
        if !emit(line_no, parsed) {
            return Ok(());
        }
    }
}

/// serde_json's message gives "line 1" of the one-line document; say the column only.
fn json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Eof => "ends too early",
        Category::Syntax => "syntax error",
        Category::Data | Category::Io => "invalid",
    };
    format!("not JSON: {what} at column {}", e.column())
}

fn read_csv(r: impl Read, field: &str, emit: &mut dyn FnMut(u64, Parsed) -> bool) -> Result<()> {
    let mut csv = csv::Reader::from_reader(r);
    let headers = csv.headers().context("reading the CSV header")?.clone();
    if !headers.iter().any(|h| h == field) {
        bail!("the CSV has no column {field:?} (columns: {headers:?})");
    }
    let mut record = csv::StringRecord::new();
    loop {
        let (line_no, parsed) = match csv.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {
                let line = record.position().map_or(0, |p| p.line());
                (line, row_record(&headers, &record, field))
            }
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                let reason = match e.kind() {
                    csv::ErrorKind::Io(_) => return Err(anyhow!(e).context("reading the CSV")),
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => format!("{len} fields where the header has {expected_len}"),
                    csv::ErrorKind::Utf8 { .. } => "not UTF-8".to_string(),
                    _ => e.to_string(),
                };
                (line, Err(reason))
            }
        };
        if !emit(line_no, parsed) {
            return Ok(());
        }
    }
}

/// A row as a JSON object (numbers as numbers), under its key column.
fn row_record(headers: &csv::StringRecord, row: &csv::StringRecord, field: &str) -> Parsed {
    let mut obj = serde_json::Map::new();
    for (h, v) in headers.iter().zip(row.iter()) {
        let value = match v.parse::<serde_json::Number>() {
            Ok(n) if !v.is_empty() => serde_json::Value::Number(n),
            _ => serde_json::Value::String(v.to_string()),
        };
        obj.insert(h.to_string(), value);
    }
    let v = serde_json::Value::Object(obj);
    let key = key_of(&v, field)?;
    Ok((key, v.to_string().into_bytes()))
}

/// Counts bytes read into the progress bar.
struct Progress<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect_jsonl(text: &str) -> Vec<(u64, Parsed)> {
        let mut out = Vec::new();
        read_jsonl(text.as_bytes(), "id", &mut |l, p| {
            out.push((l, p));
            true
        })
        .unwrap();
        out
    }

    #[test]
    fn jsonl_lines_are_numbered_from_one_and_blank_lines_count() {
        let got = collect_jsonl("{\"id\": \"a\"}\n\n{\"id\": 7}\r\n[1]\n{\"x\": 1}\n{bad\n");
        let lines: Vec<u64> = got.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [1, 3, 4, 5, 6]);
        assert_eq!(got[0].1, Ok((b"a".to_vec(), b"{\"id\": \"a\"}".to_vec())));
        assert_eq!(got[1].1.as_ref().unwrap().0, b"7");
        assert_eq!(got[2].1, Err("not a JSON object".into()));
        assert_eq!(got[3].1, Err("no field \"id\"".into()));
        assert_eq!(got[4].1, Err("not JSON: syntax error at column 2".into()));
    }

    #[test]
    fn csv_rows_give_their_own_line_numbers() {
        let text = "id,n\na,1\n\"b\nc\",2\nshort\nd,4\n";
        let mut out = Vec::new();
        read_csv(text.as_bytes(), "id", &mut |l, p| {
            out.push((l, p));
            true
        })
        .unwrap();
        let lines: Vec<u64> = out.iter().map(|(l, _)| *l).collect();
        // The quoted key spans lines 3 and 4; the row after it starts on line 5.
        assert_eq!(lines, [2, 3, 5, 6]);
        assert_eq!(out[1].1.as_ref().unwrap().0, b"b\nc");
        assert_eq!(out[2].1, Err("1 fields where the header has 2".into()));
        assert_eq!(
            out[3].1,
            Ok((b"d".to_vec(), br#"{"id":"d","n":4}"#.to_vec()))
        );
    }
}
