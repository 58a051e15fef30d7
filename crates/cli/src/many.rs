//! The key commands on several keys: `get K1 K2 ...` (`key<TAB>value` lines, escaped as
//! `scan` prints them) and `delete` of several keys, of a prefix or of a key range (through
//! the device's range delete, the count deleted on stderr).

use crate::scan::escape;
use crate::session::Session;
use crate::target::DataTarget;
use anyhow::{bail, Result};
use bytes::Bytes;
use std::io::Write;
use std::process::ExitCode;

/// What `delete` deletes: named keys, the keys that begin with a prefix, or a key range.
pub struct DeleteArgs {
    pub keys: Vec<String>,
    pub prefix: Option<String>,
    pub start: Option<String>,
    pub end: Option<String>,
    /// Said to mean every key: what an empty prefix or an unbounded range would delete.
    pub all: bool,
}

/// Prints `key<TAB>value` for each of `keys` that has a value, in the order given; each
/// missing key is named on stderr, and the exit code is then 1.
pub fn get(target: &DataTarget, keys: &[String]) -> Result<ExitCode> {
    let s = Session::open_keys(target)?;
    for k in keys {
        s.check_key(k.as_bytes())?;
    }
    let asked: Vec<Bytes> = keys.iter().map(|k| Bytes::from(k.clone())).collect();
    let values = match s.every().len() {
        1 => s.ns.get_many(asked)?,
        // A tenant's keys on their parts, one get each.
        _ => asked
            .into_iter()
            .map(|k| s.ns_for(&k).get(k.clone()))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut missing = false;
    for (k, v) in keys.iter().zip(values) {
        match v {
            Some(v) => {
                out.write_all(&escape(k.as_bytes()))?;
                out.write_all(b"\t")?;
                out.write_all(&escape(&v))?;
                out.write_all(b"\n")?;
            }
            None => {
                out.flush()?;
                eprintln!("key not found: {k}");
                missing = true;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::from(u8::from(missing)))
}

/// Deletes what `args` names. Named keys: each missing one is named on stderr and the exit
/// code is then 1. A prefix or a range: the count deleted goes to stderr.
pub fn delete(target: &DataTarget, args: DeleteArgs) -> Result<ExitCode> {
    let s = Session::open_keys(target)?;
    s.writable()?;
    if !args.keys.is_empty() {
        return delete_keys(&s, &args.keys);
    }
    let everything = args.prefix.as_deref() == Some("")
        || (args.prefix.is_none()
            && args.start.as_deref().unwrap_or_default().is_empty()
            && args.end.as_deref().unwrap_or_default().is_empty());
    if everything && !args.all {
        bail!("that deletes every key of the namespace; say --all to mean it");
    }
    let deleted = match (&args.prefix, &args.start, &args.end) {
        (Some(prefix), None, None) => {
            check_bound(&s, "the prefix", prefix)?;
            let mut n = 0;
            for ns in s.every() {
                n += ns.delete_prefix(prefix.clone())?;
            }
            n
        }
        (None, start, end) if start.is_some() || end.is_some() => {
            let (start, end) = (
                start.clone().unwrap_or_default(),
                end.clone().unwrap_or_default(),
            );
            check_bound(&s, "the start key", &start)?;
            check_bound(&s, "the end key", &end)?;
            let mut n = 0;
            for ns in s.every() {
                n += ns.delete_range(start.clone(), end.clone())?;
            }
            n
        }
        _ => bail!("give KEY..., --prefix P, or --start A and/or --end B"),
    };
    eprintln!(
        "deleted {deleted} {}",
        if deleted == 1 { "key" } else { "keys" }
    );
    Ok(ExitCode::SUCCESS)
}

fn delete_keys(s: &Session, keys: &[String]) -> Result<ExitCode> {
    for k in keys {
        s.check_key(k.as_bytes())?;
    }
    let mut missing = false;
    for k in keys {
        if !s.ns_for(k.as_bytes()).delete(k.clone())? {
            eprintln!("key not found: {k}");
            missing = true;
        }
    }
    Ok(ExitCode::from(u8::from(missing)))
}

/// A start, end or prefix may be empty, but no longer than the device's keys.
fn check_bound(s: &Session, what: &str, k: &str) -> Result<()> {
    if let Some(l) = &s.limits {
        if k.len() > l.max_key_len as usize {
            bail!(
                "{what} is {} bytes; this device accepts keys of up to {} bytes (max_key_len)",
                k.len(),
                l.max_key_len
            );
        }
    }
    Ok(())
}
