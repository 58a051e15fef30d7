//! `cerberus scan`: the namespace's entries at one snapshot, in key order, over a device
//! iterator. One entry a line: the key, a tab, the value. Bytes that would break the line
//! (tab, newline, backslash, other control bytes, invalid UTF-8) are written as escapes
//! (`\t`, `\n`, `\\`, `\xNN`), so every line splits back into exactly one key and value.

use crate::session::Session;
use anyhow::Result;
use bytes::Bytes;
use cerberus_host::ScanOptions;
use std::io::Write;

pub struct Args<'a> {
    pub start: Option<&'a str>,
    pub prefix: Option<&'a str>,
    pub limit: Option<u64>,
    pub keys_only: bool,
}

pub fn run(s: &Session, args: &Args<'_>) -> Result<()> {
    let opts = ScanOptions {
        start: Bytes::copy_from_slice(args.start.unwrap_or_default().as_bytes()),
        prefix: args.prefix.map(|p| Bytes::copy_from_slice(p.as_bytes())),
        keys_only: args.keys_only,
        ..ScanOptions::default()
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut left = args.limit.unwrap_or(u64::MAX);
    if left == 0 {
        return Ok(());
    }
    for entry in s.scan(opts)? {
        let (k, v) = entry?;
        out.write_all(&escape(&k))?;
        if !args.keys_only {
            out.write_all(b"\t")?;
            out.write_all(&escape(&v))?;
        }
        out.write_all(b"\n")?;
        left -= 1;
        if left == 0 {
            break;
        }
    }
    Ok(out.flush()?)
}

/// `bytes` with what would break a line escaped.
pub fn escape(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\t' => out.extend_from_slice(b"\\t"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\\' => out.extend_from_slice(b"\\\\"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                    }
                }
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        for b in chunk.invalid() {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn lines_cannot_break_and_text_stays_readable() {
        assert_eq!(
            escape(b"plain text, \xc3\xa9t\xc3\xa9"),
            "plain text, été".as_bytes()
        );
        assert_eq!(escape(b"a\tb\nc\\d"), b"a\\tb\\nc\\\\d");
        assert_eq!(escape(b"\x00\xff\x7f"), b"\\x00\\xff\\x7f");
    }
}
