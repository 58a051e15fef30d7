//! The commands on keys: `put`, `get`, `exists` and `list` (`delete` and `get` of several
//! keys: `many`).

use crate::session::{read_stdin_value, Session};
use crate::target::DataTarget;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use cerberus_host::{ScanOptions, StoreMode, WriteOptions};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// Stores `value` (or, without one, standard input) under `key`.
pub fn put(
    target: &DataTarget,
    key: String,
    value: Option<String>,
    mode: StoreMode,
    sync: bool,
) -> Result<ExitCode> {
    let s = Session::open_keys(target)?;
    let key = key.into_bytes();
    s.check_key(&key)?;
    let value = match value {
        Some(v) => {
            let v = v.into_bytes();
            if let Some(l) = &s.limits {
                l.check_value_len(v.len() as u64)
                    .map_err(anyhow::Error::msg)?;
            }
            v
        }
        None => read_stdin_value(s.limits.as_ref())?,
    };
    s.writable()?;
    s.ns_for(&key)
        .with_write_options(WriteOptions { sync })
        .store(key, value, mode)
        .context("storing")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the value of `key` to stdout; exit code 1 if it has none.
pub fn get(target: &DataTarget, key: &str) -> Result<ExitCode> {
    let s = Session::open_keys(target)?;
    s.check_key(key.as_bytes())?;
    match s.ns_for(key.as_bytes()).get(key.as_bytes().to_vec())? {
        Some(v) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&v)?;
            // Only for a person at a terminal; redirected output stays byte-exact.
            if out.is_terminal() && !v.ends_with(b"\n") && std::str::from_utf8(&v).is_ok() {
                out.write_all(b"\n")?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!("key not found: {key}");
            Ok(ExitCode::from(1))
        }
    }
}

/// Prints yes (exit code 0) or no (exit code 1).
pub fn exists(target: &DataTarget, key: &str) -> Result<ExitCode> {
    let s = Session::open_keys(target)?;
    s.check_key(key.as_bytes())?;
    if s.ns_for(key.as_bytes()).contains(key.as_bytes().to_vec())? {
        println!("yes");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("no");
        Ok(ExitCode::from(1))
    }
}

/// Prints the keys from `start` on that begin with `prefix`, at most `limit` of them.
pub fn list(
    target: &DataTarget,
    start: Option<&str>,
    prefix: Option<&str>,
    limit: Option<u64>,
) -> Result<ExitCode> {
    let s = Session::open_keys(target)?;
    let start = start.unwrap_or_default().as_bytes();
    let prefix = prefix.unwrap_or_default().as_bytes();
    if let Some(l) = &s.limits {
        if start.len() > l.max_key_len as usize {
            bail!(
                "start key is {} bytes; this device accepts keys of up to {} bytes (max_key_len)",
                start.len(),
                l.max_key_len
            );
        }
        if prefix.len() > l.max_key_len as usize {
            // No key can be that long, so none begins with it.
            return Ok(ExitCode::SUCCESS);
        }
    }
    if s.every().len() > 1 {
        return list_parts(&s, start, prefix, limit);
    }
    // Keys that begin with the prefix are one run in key order, starting at the prefix.
    let mut from = start.max(prefix).to_vec();
    let mut exclusive = false;
    let mut left = limit.unwrap_or(u64::MAX);
    let mut out = std::io::stdout().lock();
    'pages: while left > 0 {
        let page = left.min(1000) as u32;
        let (keys, more) = s.ns.list(from.clone(), exclusive, page)?;
        for k in &keys {
            if !k.starts_with(prefix) {
                break 'pages;
            }
            out.write_all(k)?;
            out.write_all(b"\n")?;
            left -= 1;
            if left == 0 {
                break;
            }
        }
        match keys.last() {
            Some(k) if more => {
                from = k.to_vec();
                exclusive = true;
            }
            _ => break,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// [`list`] over a cluster tenant's parts: their keys-only scans merged in key order.
fn list_parts(s: &Session, start: &[u8], prefix: &[u8], limit: Option<u64>) -> Result<ExitCode> {
    let opts = ScanOptions {
        start: Bytes::copy_from_slice(start),
        prefix: (!prefix.is_empty()).then(|| Bytes::copy_from_slice(prefix)),
        keys_only: true,
        ..ScanOptions::default()
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let left = limit.unwrap_or(u64::MAX);
    for entry in s
        .scan(opts)?
        .take(usize::try_from(left).unwrap_or(usize::MAX))
    {
        let (k, _) = entry?;
        out.write_all(&k)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
