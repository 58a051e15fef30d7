//! `cerberus load`: bulk load of JSON lines or CSV into a namespace, several puts in flight,
//! with a progress bar.
//!
//! JSON lines: every non-empty line is a JSON object, stored as it is, under the value of
//! `--key-field`. CSV: the first row names the columns; each row is stored as a JSON object
//! (numbers as numbers) under its `--key-field` column. A record without a key stops the load
//! with its line number; the records before it are stored.

use anyhow::{bail, Context, Result};
use cerberus_host::BlockingClient;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Csv,
}

#[derive(clap::Args)]
pub struct LoadArgs {
    /// The file to load.
    file: PathBuf,
    /// jsonl or csv (default: from the file name, jsonl unless it ends in .csv).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// JSON field (or CSV column) holding the key.
    #[arg(long, default_value = "id")]
    key_field: String,
    /// Puts in flight at once.
    #[arg(long, default_value_t = 32)]
    parallel: usize,
}

/// One record: where it came from, its key and value.
struct Record {
    line: u64,
    key: Vec<u8>,
    value: Vec<u8>,
}

pub fn run(client: &BlockingClient, nsid: u32, args: &LoadArgs) -> Result<()> {
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("opening {}", args.file.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = ProgressBar::new(len).with_style(
        ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} {msg} ({bytes_per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let reader = Progress {
        inner: file,
        bar: bar.clone(),
    };
    let format = args.format.unwrap_or_else(|| {
        if args
            .file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            Format::Csv
        } else {
            Format::Jsonl
        }
    });
    let (tx, rx) = crossbeam_channel::bounded::<Record>(args.parallel.max(1) * 4);
    let stored = AtomicU64::new(0);
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| -> Result<()> {
        for _ in 0..args.parallel.max(1) {
            let rx = rx.clone();
            let (stored, failure, bar) = (&stored, &failure, &bar);
            s.spawn(move || {
                for r in rx {
                    if let Err(e) = client.put(nsid, r.key, r.value) {
                        let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                        f.get_or_insert(anyhow::Error::new(e).context(format!("line {}", r.line)));
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
        let produced = match format {
            Format::Jsonl => read_jsonl(reader, &args.key_field, &tx, &failure),
            Format::Csv => read_csv(reader, &args.key_field, &tx, &failure),
        };
        drop(tx);
        produced
    })?;
    bar.finish_and_clear();
    let n = stored.load(Ordering::Relaxed);
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e.context(format!("load stopped after {n} records")));
    }
    eprintln!("loaded {n} records into namespace {nsid}");
    Ok(())
}

/// Hands a record to the writers; false once a writer failed (the load stops).
fn send(
    tx: &crossbeam_channel::Sender<Record>,
    failure: &Mutex<Option<anyhow::Error>>,
    line: u64,
    key: Vec<u8>,
    value: Vec<u8>,
) -> bool {
    let failed = failure.lock().map(|f| f.is_some()).unwrap_or(true);
    !failed && tx.send(Record { line, key, value }).is_ok()
}

fn key_of(v: &serde_json::Value, field: &str, line: u64) -> Result<Vec<u8>> {
    match v.get(field) {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.as_bytes().to_vec()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string().into_bytes()),
        Some(_) => bail!("line {line}: field {field:?} is not a non-empty string or a number"),
        None => bail!("line {line}: no field {field:?}"),
    }
}

fn read_jsonl(
    r: impl Read,
    field: &str,
    tx: &crossbeam_channel::Sender<Record>,
    failure: &Mutex<Option<anyhow::Error>>,
) -> Result<()> {
    for (i, line) in BufReader::new(r).lines().enumerate() {
        let line_no = i as u64 + 1;
        let line = line.with_context(|| format!("reading line {line_no}"))?;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("line {line_no}: not JSON"))?;
        let key = key_of(&v, field, line_no)?;
        if !send(tx, failure, line_no, key, text.as_bytes().to_vec()) {
            break;
        }
    }
    Ok(())
}

fn read_csv(
    r: impl Read,
    field: &str,
    tx: &crossbeam_channel::Sender<Record>,
    failure: &Mutex<Option<anyhow::Error>>,
) -> Result<()> {
    let mut csv = csv::Reader::from_reader(r);
    let headers = csv.headers().context("reading the CSV header")?.clone();
    if !headers.iter().any(|h| h == field) {
        bail!("the CSV has no column {field:?} (columns: {headers:?})");
    }
    for (i, row) in csv.records().enumerate() {
        let line_no = i as u64 + 2;
        let row = row.with_context(|| format!("line {line_no}"))?;
        let mut obj = serde_json::Map::new();
        for (h, v) in headers.iter().zip(row.iter()) {
            let value = match v.parse::<serde_json::Number>() {
                Ok(n) if !v.is_empty() => serde_json::Value::Number(n),
                _ => serde_json::Value::String(v.to_string()),
            };
            obj.insert(h.to_string(), value);
        }
        let v = serde_json::Value::Object(obj);
        let key = key_of(&v, field, line_no)?;
        if !send(tx, failure, line_no, key, v.to_string().into_bytes()) {
            break;
        }
    }
    Ok(())
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
