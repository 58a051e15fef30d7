//! `cerberus ns export` and `ns import`: a namespace's records and index definitions as a
//! stream of JSON lines, through the device's own bounded commands (an iterator at one
//! snapshot out, write batches in), so a move between devices needs nothing else.
//!
//! The stream: a header line `{"cerberus_export": 1, "indexes": [{"attr", "kind"}]}`, one
//! line a record (`{"k": KEY, "v": VALUE}`, each a JSON string when it is UTF-8, else under
//! `"kb"` / `"vb"` as base64), and an end line `{"end": {"records", "bytes", "digest"}}`
//! (the cluster move's order-independent digest), so an import knows a cut-off file.

use crate::limits::Limits;
use anyhow::{bail, Context, Result};
use base64::Engine as _;
use cerberus_host::cluster::Digest;
use cerberus_host::{BlockingNamespace, IndexKind, ScanOptions, WriteBatch};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};
use std::io::{BufRead, Read, Write};

/// The format's version, in the header.
const VERSION: u64 = 1;
/// Records per write batch on import (and at most the device's frame, below).
const BATCH_RECORDS: usize = 1000;

/// Writes `ns`'s index definitions and records to `out`; what it wrote.
pub fn export(ns: &BlockingNamespace, out: &mut dyn Write) -> Result<Digest> {
    let indexes = index_definitions(ns)?;
    writeln!(
        out,
        "{}",
        json!({"cerberus_export": VERSION, "indexes": indexes})
    )?;
    let bar = counter("exported");
    let mut digest = Digest::default();
    let mut buf = Vec::new();
    for rec in ns
        .scan(ScanOptions::default())
        .context("opening an iterator")?
    {
        let (k, v) = rec.context("reading the namespace")?;
        digest.add(&k, &v, &mut buf);
        let mut line = Map::new();
        put_bytes(&mut line, "k", "kb", &k);
        put_bytes(&mut line, "v", "vb", &v);
        writeln!(out, "{}", Value::Object(line))?;
        bar.inc(1);
    }
    writeln!(out, "{}", end_line(&digest))?;
    out.flush()?;
    bar.finish_and_clear();
    Ok(digest)
}

/// Creates the stream's indexes on `ns`, then stores its records in batches; checks the
/// end line against what it read. What it stored.
pub fn import(
    ns: &BlockingNamespace,
    limits: Option<Limits>,
    max_frame: usize,
    input: &mut dyn BufRead,
) -> Result<Digest> {
    // A record's line is at most its key and value JSON-escaped (6 bytes a byte at worst)
    // and some framing: a longer line is refused before it is all in memory.
    let max_line = limits.map_or(64 << 20, |l| {
        6 * (u64::from(l.max_key_len) + u64::from(l.max_value_len)) + 4096
    });
    let mut lines = Lines {
        input,
        max: max_line,
        n: 0,
    };
    let header = match lines.next() {
        Some((_, l)) => l?,
        None => bail!("empty input: not a cerberus export"),
    };
    let indexes = header_indexes(&header)?;
    for (attr, kind) in &indexes {
        create_index(ns, attr, *kind)?;
    }
    let bar = counter("imported");
    let mut batch = Batch::new(max_frame);
    let mut digest = Digest::default();
    let mut buf = Vec::new();
    while let Some((n, line)) = lines.next() {
        let line = line?;
        let doc: Value = serde_json::from_str(&line)
            .with_context(|| format!("line {n} is not JSON (a damaged export?)"))?;
        if let Some(end) = doc.get("end") {
            batch.send(ns)?;
            bar.finish_and_clear();
            check_end(end, &digest)?;
            if let Some((m, _)) = lines.next() {
                bail!("line {m}: lines after the end line");
            }
            return Ok(digest);
        }
        let (k, v) = record(&doc).with_context(|| format!("line {n}"))?;
        if let Some(l) = &limits {
            l.check_key(&k)
                .and_then(|()| l.check_value_len(v.len() as u64))
                .map_err(|e| anyhow::anyhow!("line {n}: {e}"))?;
        }
        digest.add(&k, &v, &mut buf);
        batch.add(ns, k, v)?;
        bar.inc(1);
    }
    batch.send(ns)?;
    bar.finish_and_clear();
    bail!(
        "the input ends without its end line (cut off?): {} records were stored, the export \
         may have held more",
        digest.records
    )
}

/// The lines of an export, numbered from 1, each at most `max` bytes.
struct Lines<'a> {
    input: &'a mut dyn BufRead,
    max: u64,
    n: u64,
}

impl Iterator for Lines<'_> {
    type Item = (u64, Result<String>);

    fn next(&mut self) -> Option<(u64, Result<String>)> {
        self.n += 1;
        let n = self.n;
        let mut buf = Vec::new();
        let read = (&mut self.input)
            .take(self.max + 1)
            .read_until(b'\n', &mut buf);
        match read {
            Ok(0) => None,
            Err(e) => Some((
                n,
                Err(anyhow::Error::new(e).context(format!("reading line {n}"))),
            )),
            Ok(_) if buf.len() as u64 > self.max => Some((
                n,
                Err(anyhow::anyhow!(
                    "line {n} is longer than any record this device takes ({} bytes): not a \
                     cerberus export, or a damaged one",
                    self.max
                )),
            )),
            Ok(_) => {
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                Some((
                    n,
                    String::from_utf8(buf).map_err(|_| anyhow::anyhow!("line {n} is not UTF-8")),
                ))
            }
        }
    }
}

/// `{"attr", "kind"}` of each index of `ns`.
fn index_definitions(ns: &BlockingNamespace) -> Result<Vec<Value>> {
    let list = ns.list_indexes().context("listing the indexes")?;
    let list = list
        .as_array()
        .context("the device's index list is not an array")?;
    Ok(list
        .iter()
        .map(|e| json!({"attr": e["attr"], "kind": e["kind"]}))
        .collect())
}

fn header_indexes(header: &str) -> Result<Vec<(String, IndexKind)>> {
    let doc: Value = serde_json::from_str(header)
        .ok()
        .filter(|d: &Value| d.get("cerberus_export").is_some())
        .context("the first line is not a cerberus export's header (`cerberus ns export`)")?;
    if doc["cerberus_export"].as_u64() != Some(VERSION) {
        bail!(
            "export format {} (this build reads {VERSION})",
            doc["cerberus_export"]
        );
    }
    let mut out = Vec::new();
    for e in doc["indexes"]
        .as_array()
        .context("the header lists no indexes")?
    {
        let attr = e["attr"].as_str().context("an index without attr")?;
        let kind = match e["kind"].as_str() {
            Some("vas") => IndexKind::Vas,
            Some("classic") => IndexKind::Classic,
            other => bail!("index {attr}: unknown kind {other:?}"),
        };
        out.push((attr.to_string(), kind));
    }
    Ok(out)
}

/// Creates the index, or finds it there already with the same kind (an import again).
fn create_index(ns: &BlockingNamespace, attr: &str, kind: IndexKind) -> Result<()> {
    match ns.create_index(attr, kind) {
        Ok(()) => Ok(()),
        Err(cerberus_host::Error::IndexExists(_)) => {
            let want = if kind == IndexKind::Vas {
                "vas"
            } else {
                "classic"
            };
            let list = ns.list_indexes()?;
            let same = list
                .as_array()
                .is_some_and(|l| l.iter().any(|e| e["attr"] == attr && e["kind"] == want));
            match same {
                true => Ok(()),
                false => {
                    bail!("index {attr} exists here as another kind than the export's ({want})")
                }
            }
        }
        Err(e) => Err(e).with_context(|| format!("creating index {attr}")),
    }
}

fn put_bytes(line: &mut Map<String, Value>, text: &str, b64: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => line.insert(text.into(), Value::String(s.into())),
        Err(_) => line.insert(
            b64.into(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    };
}

fn get_bytes(doc: &Value, text: &str, b64: &str) -> Result<Vec<u8>> {
    if let Some(s) = doc.get(text).and_then(Value::as_str) {
        return Ok(s.as_bytes().to_vec());
    }
    let s = doc
        .get(b64)
        .and_then(Value::as_str)
        .with_context(|| format!("no {text:?} (or {b64:?})"))?;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .with_context(|| format!("{b64:?} is not base64"))
}

fn record(doc: &Value) -> Result<(Vec<u8>, Vec<u8>)> {
    Ok((get_bytes(doc, "k", "kb")?, get_bytes(doc, "v", "vb")?))
}

fn end_line(d: &Digest) -> Value {
    json!({"end": {"records": d.records, "bytes": d.bytes, "digest": format!("{:016x}", d.sum)}})
}

fn check_end(end: &Value, read: &Digest) -> Result<()> {
    let want = end_line(read);
    if &want["end"] != end {
        bail!(
            "the records read ({read}) are not those the export wrote ({end}): the file was \
             changed; what was read is stored"
        );
    }
    Ok(())
}

/// A write batch within the device's frame.
struct Batch {
    batch: WriteBatch,
    bytes: usize,
    max_bytes: usize,
}

impl Batch {
    fn new(max_frame: usize) -> Batch {
        Batch {
            batch: WriteBatch::new(),
            bytes: 0,
            // Room for the frame's header and each write's kind and lengths.
            max_bytes: max_frame.saturating_sub(1024).max(1),
        }
    }

    fn add(&mut self, ns: &BlockingNamespace, k: Vec<u8>, v: Vec<u8>) -> Result<()> {
        let size = k.len() + v.len() + 8;
        if !self.batch.is_empty() && self.bytes + size > self.max_bytes {
            self.send(ns)?;
        }
        self.bytes += size;
        self.batch.put(k, v);
        if self.batch.len() >= BATCH_RECORDS {
            self.send(ns)?;
        }
        Ok(())
    }

    fn send(&mut self, ns: &BlockingNamespace) -> Result<()> {
        self.bytes = 0;
        let batch = std::mem::take(&mut self.batch);
        if batch.is_empty() {
            return Ok(());
        }
        ns.write(batch).context("storing a batch")
    }
}

/// A count of records on standard error, drawn only at a terminal.
fn counter(what: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template(&format!("{{spinner}} {{pos}} records {what} ({{per_sec}})"))
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_as_text_or_base64() {
        for (k, v) in [
            (b"user:1".to_vec(), b"{\"a\": 1}".to_vec()),
            (vec![0xff, 0x00, b'k'], vec![0x80; 5]),
        ] {
            let mut line = Map::new();
            put_bytes(&mut line, "k", "kb", &k);
            put_bytes(&mut line, "v", "vb", &v);
            let back: Value = serde_json::from_str(&Value::Object(line).to_string()).unwrap();
            assert_eq!(record(&back).unwrap(), (k, v));
        }
        assert!(record(&json!({"k": "x"})).is_err());
        assert!(record(&json!({"k": "x", "vb": "%%"})).is_err());
    }

    #[test]
    fn headers_are_checked() {
        assert!(header_indexes("{\"id\": 1}").is_err());
        assert!(header_indexes("{\"cerberus_export\": 2, \"indexes\": []}").is_err());
        let h = "{\"cerberus_export\": 1, \"indexes\": [{\"attr\": \"c\", \"kind\": \"vas\"}]}";
        assert_eq!(
            header_indexes(h).unwrap(),
            vec![("c".to_string(), IndexKind::Vas)]
        );
    }
}
