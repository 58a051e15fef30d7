//! The record loop both datasets share: ids and the line sizes' summary.

use crate::glacier;
use crate::records::{DatasetError, Records, MAX_RECORDS};
use crate::tweets;
use std::io::Write;

/// Which dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Glaciers shaped like the World Glacier Inventory, about 963 B a line.
    Glacier,
    /// Tweets with their user embedded, about 8 KiB a line.
    Tweets,
}

impl Kind {
    /// Name, the paper's record count and the first letter of the ids.
    pub fn spec(self) -> (&'static str, u64, char) {
        match self {
            Kind::Glacier => ("glacier", 104_600, 'G'),
            Kind::Tweets => ("tweets", 132_800, 'T'),
        }
    }
}

fn check_records(records: u64) -> Result<(), DatasetError> {
    if records == 0 || records > MAX_RECORDS {
        return Err(DatasetError::Records(records));
    }
    Ok(())
}

/// What a run wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Records (lines) written.
    pub records: u64,
    /// Bytes of the file, newlines included.
    pub bytes: u64,
    /// (secondary key as `field=value`, records that have it) for the paper's queries.
    pub keys: Vec<(String, u64)>,
}

impl Summary {
    /// Mean bytes of a line, newline included.
    pub fn mean_line(&self) -> f64 {
        self.bytes as f64 / self.records.max(1) as f64
    }

    /// The one line printed at the end.
    pub fn line(&self, kind: Kind) -> String {
        let keys: Vec<String> = self.keys.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let (name, records, bytes, mean) =
            (kind.spec().0, self.records, self.bytes, self.mean_line());
        let keys = keys.join(", ");
        format!("{name}: {records} records, {bytes} bytes, mean line {mean:.1} bytes ({keys})")
    }
}

/// Writes `records` lines of the dataset to `out`.
pub fn generate(
    kind: Kind,
    records: u64,
    seed: u64,
    out: &mut dyn Write,
) -> Result<Summary, DatasetError> {
    check_records(records)?;
    let mut gen: Box<dyn Records> = match kind {
        Kind::Glacier => Box::new(glacier::Glaciers::new(seed)),
        Kind::Tweets => Box::new(tweets::Tweets::new(seed)),
    };
    let prefix = kind.spec().2;
    let mut buf = Vec::with_capacity(16 << 10);
    let mut bytes = 0;
    for n in 1..=records {
        buf.clear();
        gen.write(&key(prefix, n), &mut buf)?;
        buf.push(b'\n');
        out.write_all(&buf)?;
        bytes += buf.len() as u64;
    }
    Ok(Summary {
        records,
        bytes,
        keys: gen.key_counts(),
    })
}

/// Primary key of record `n` (from 1): `prefix` and 7 zero-padded digits, so byte order is
/// record order.
pub(crate) fn key(prefix: char, n: u64) -> String {
    format!("{prefix}{n:07}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn bytes(kind: Kind, records: u64, seed: u64) -> (Vec<u8>, Summary) {
        let mut out = Vec::new();
        let summary = generate(kind, records, seed, &mut out).unwrap();
        (out, summary)
    }

    #[test]
    fn dataset_is_deterministic() {
        for (kind, n) in [(Kind::Glacier, 500), (Kind::Tweets, 200)] {
            let (a, sa) = bytes(kind, n, 42);
            let (b, sb) = bytes(kind, n, 42);
            assert!(a == b && sa == sb, "{kind:?}: same seed, different bytes");
            assert!(
                a != bytes(kind, n, 43).0,
                "{kind:?}: another seed, same bytes"
            );
            // A shorter run is a prefix of a longer one.
            assert!(a.starts_with(&bytes(kind, n / 2, 42).0), "{kind:?}");
        }
    }

    /// Every line a JSON object with a unique 8-byte id, and the paper's mean size.
    #[test]
    fn dataset_lines_have_unique_ids_and_the_papers_mean_size() {
        for (kind, n, mean) in [
            (Kind::Glacier, 2000, glacier::MEAN_LINE),
            (Kind::Tweets, 3000, tweets::MEAN_LINE),
        ] {
            let (out, summary) = bytes(kind, n, 42);
            assert_eq!((summary.records, summary.bytes), (n, out.len() as u64));
            assert!(out.ends_with(b"\n"));
            let mut ids = HashSet::new();
            for (i, line) in out
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .enumerate()
            {
                let doc: serde_json::Value = serde_json::from_slice(line).unwrap();
                let id = doc["id"].as_str().unwrap().to_string();
                assert!(id.len() == 8 && id.is_ascii(), "{id}");
                assert_eq!(id, key(kind.spec().2, i as u64 + 1));
                assert!(ids.insert(id));
            }
            assert_eq!(ids.len() as u64, n);
            let off = (summary.mean_line() - mean as f64).abs() / mean as f64;
            assert!(
                off < 0.05,
                "{kind:?}: {}, want {mean} +- 5 %",
                summary.line(kind)
            );
        }
    }

    #[test]
    fn record_counts_out_of_range_are_refused() {
        for records in [0, MAX_RECORDS + 1] {
            let err = generate(Kind::Glacier, records, 42, &mut Vec::new()).unwrap_err();
            assert!(
                matches!(err, DatasetError::Records(n) if n == records),
                "{err}"
            );
        }
    }
}
