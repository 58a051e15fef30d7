//! `cerberus-bench dataset glacier|tweets --out FILE [--records N] [--seed S]`: writes a
//! synthetic stand-in for one of the two datasets the Cerberus paper (TECS 2023, section 5.1)
//! runs its secondary-index queries on (Table 5), as JSON lines: one document a line, whose
//! 8-byte primary key is its `"id"`. Generated, never downloaded, so that a benchmark can be
//! rebuilt anywhere; the same arguments give a byte-identical file. docs/datasets.md lists the
//! fields and the counts of the queries' secondary keys.
//!
//! Each line's size is drawn around the paper's mean value size (963 B for glacier, 8 KiB for
//! tweets): the document's last string field (glacier `remarks`, tweets `extended.note_text`)
//! is serialized empty, then filled with text up to the drawn size, so the mean does not drift
//! when other fields change.

mod glacier;
mod tweets;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Highest record count: ids are one letter and 7 decimal digits.
const MAX_RECORDS: u64 = 9_999_999;

/// Which dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Glaciers shaped like the World Glacier Inventory, about 963 B a line.
    Glacier,
    /// Tweets with their user embedded, about 8 KiB a line.
    Tweets,
}

impl Kind {
    /// Name, the paper's record count and the first letter of the ids.
    fn spec(self) -> (&'static str, u64, char) {
        match self {
            Kind::Glacier => ("glacier", 104_600, 'G'),
            Kind::Tweets => ("tweets", 132_800, 'T'),
        }
    }
}

/// Writes a synthetic dataset of the paper's secondary-index queries as JSON lines.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "cerberus-bench dataset",
    bin_name = "cerberus-bench dataset",
    version,
    about = "Writes a synthetic dataset of the Cerberus paper's secondary-index queries \
             (glacier or tweets) as JSON lines"
)]
pub struct DatasetArgs {
    /// Which dataset.
    #[arg(value_enum)]
    pub kind: Kind,

    /// File to write (replaced if it exists).
    #[arg(long)]
    pub out: PathBuf,

    /// Records to write [default: the paper's count, 104600 glacier or 132800 tweets].
    #[arg(long)]
    pub records: Option<u64>,

    /// Seed of the generator: the same seed and count give the same bytes.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// `cerberus-bench dataset ...`; `args` starts with `dataset` (taken as the program name).
pub fn main(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    run(&DatasetArgs::parse_from(args))
}

fn run(args: &DatasetArgs) -> Result<()> {
    let records = args.records.unwrap_or(args.kind.spec().1);
    check_records(records)?;
    let path = &args.out;
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let summary = generate(args.kind, records, args.seed, &mut out)
        .with_context(|| format!("writing {}", path.display()))?;
    out.flush().context("flushing")?;
    eprintln!("{} -> {}", summary.line(args.kind), path.display());
    Ok(())
}

fn check_records(records: u64) -> Result<()> {
    if records == 0 {
        bail!("--records must be at least 1");
    }
    if records > MAX_RECORDS {
        bail!("--records must be at most {MAX_RECORDS} (ids are 8 bytes)");
    }
    Ok(())
}

/// What a run wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub records: u64,
    /// Bytes of the file, newlines included.
    pub bytes: u64,
    /// (secondary key as `field=value`, records that have it) for the paper's queries.
    pub keys: Vec<(String, u64)>,
}

impl Summary {
    fn mean_line(&self) -> f64 {
        self.bytes as f64 / self.records.max(1) as f64
    }

    /// The one line printed at the end.
    fn line(&self, kind: Kind) -> String {
        let keys: Vec<String> = self.keys.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let (name, records, bytes, mean) =
            (kind.spec().0, self.records, self.bytes, self.mean_line());
        let keys = keys.join(", ");
        format!("{name}: {records} records, {bytes} bytes, mean line {mean:.1} bytes ({keys})")
    }
}

/// One dataset's generator.
trait Records {
    /// Appends the document of record `id` as one JSON object, without a newline.
    fn write(&mut self, id: &str, buf: &mut Vec<u8>) -> Result<()>;
    /// Records so far that have each of the paper's secondary keys.
    fn key_counts(&self) -> Vec<(String, u64)>;
}

/// Writes `records` lines of the dataset to `out`.
pub fn generate(kind: Kind, records: u64, seed: u64, out: &mut dyn Write) -> Result<Summary> {
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
fn key(prefix: char, n: u64) -> String {
    format!("{prefix}{n:07}")
}

/// Common English words, put first in the vocabulary so that they are the most frequent.
const COMMON: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "was", "on", "for", "with", "at", "by", "from", "this",
    "that", "it", "as", "be", "are", "not", "but", "or", "all", "new", "one", "two", "more",
    "north", "south", "east", "west", "upper", "lower", "ice", "snow", "rock", "valley", "ridge",
    "lake", "river", "peak", "map", "survey", "data", "year", "time", "day", "today", "people",
    "good", "great", "first", "last", "big", "small", "see", "know", "think", "love", "make",
    "just", "like", "now", "here", "there", "what", "when", "where", "why", "how", "we", "you",
];

const ONSETS: &[&str] = &[
    "b", "br", "c", "ch", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "pl", "r", "s",
    "sh", "st", "t", "tr", "v", "w", "z",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou", "ea"];
const CODAS: &[&str] = &["", "", "", "n", "r", "l", "s", "m", "t", "nd", "rk"];

/// Made-up words that contain one of these are drawn again.
const UNWANTED: &[&str] = &[
    "shit", "cunt", "fuck", "nazi", "rape", "slut", "cum", "fag", "nig", "dick", "cock", "tit",
    "piss", "sex", "porn", "kill", "dead",
];

/// A pronounceable made-up word of `syllables` syllables, lowercase ASCII (none of UNWANTED).
fn pseudo_word(rng: &mut SmallRng, syllables: usize) -> String {
    loop {
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(ONSETS[rng.gen_range(0..ONSETS.len())]);
            w.push_str(VOWELS[rng.gen_range(0..VOWELS.len())]);
            w.push_str(CODAS[rng.gen_range(0..CODAS.len())]);
        }
        if !UNWANTED.iter().any(|u| w.contains(u)) {
            return w;
        }
    }
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

/// `x` rounded to `decimals` places (and never -0, which would print as `-0.0`).
fn round(x: f64, decimals: i32) -> f64 {
    let p = 10f64.powi(decimals);
    (x * p).round() / p + 0.0
}

/// One of `table`'s items, with the probability of its weight.
fn pick<T: Copy>(rng: &mut SmallRng, table: &[(T, u32)]) -> T {
    let total: u32 = table.iter().map(|(_, w)| w).sum();
    let mut r = rng.gen_range(0..total);
    for &(item, w) in table {
        if r < w {
            return item;
        }
        r -= w;
    }
    table[table.len() - 1].0
}

/// A line size drawn around `mean` (the sum of two uniform draws: a triangle `mean +- spread`).
fn line_target(rng: &mut SmallRng, mean: usize, spread: usize) -> usize {
    mean - spread + rng.gen_range(0..=spread) + rng.gen_range(0..=spread)
}

/// Bytes of the text the generators cut their filler from.
const SOUP_BYTES: usize = 1 << 18;

/// The generated words: a vocabulary (common words first, then made-up ones) and a long run
/// of sentences of it (the soup) that long fillers are cut from, which is much faster than
/// drawing each of their words.
struct Text {
    words: Vec<String>,
    soup: Vec<u8>,
}

impl Text {
    fn new(rng: &mut SmallRng) -> Text {
        let mut words: Vec<String> = COMMON.iter().map(|w| w.to_string()).collect();
        while words.len() < 2000 {
            let syllables = rng.gen_range(1..=3);
            words.push(pseudo_word(rng, syllables));
        }
        let mut text = Text {
            words,
            soup: Vec::new(),
        };
        let mut soup = String::with_capacity(SOUP_BYTES + 256);
        while soup.len() < SOUP_BYTES {
            let n = rng.gen_range(6..=18);
            soup.push_str(&capitalize(text.word(rng)));
            for _ in 1..n {
                soup.push(' ');
                soup.push_str(text.word(rng));
            }
            soup.push_str(". ");
        }
        text.soup = soup.into_bytes();
        text
    }

    /// A word, the first ones of the vocabulary more often (over a third of the draws are
    /// among the first 100).
    fn word(&self, rng: &mut SmallRng) -> &str {
        let u: f64 = rng.gen();
        &self.words[((u * u * u) * self.words.len() as f64) as usize]
    }

    /// Appends words separated by spaces while they fit in `max` more bytes.
    fn words_into(&self, rng: &mut SmallRng, max: usize, out: &mut String) {
        let end = out.len() + max;
        loop {
            let w = self.word(rng);
            let sep = usize::from(!out.is_empty() && !out.ends_with(' '));
            if out.len() + sep + w.len() > end {
                return;
            }
            if sep == 1 {
                out.push(' ');
            }
            out.push_str(w);
        }
    }

    /// Fills the last string of the JSON object in `buf` (serialized empty, `""`, and
    /// followed by `closing` bytes such as `}}`) with a cut of the soup from the start of a
    /// random sentence (letters, spaces and `.`: nothing a JSON string escapes), so that the
    /// line, with its newline, is `target` bytes long; left empty when it is that long already.
    fn fill_last_string(
        &self,
        rng: &mut SmallRng,
        buf: &mut Vec<u8>,
        closing: usize,
        target: usize,
    ) {
        let at = buf.len() - closing - 1;
        debug_assert_eq!(&buf[at - 1..=at], b"\"\"");
        let len = target
            .saturating_sub(buf.len() + 1)
            .min(self.soup.len() / 2);
        if len == 0 {
            return;
        }
        let mut start = rng.gen_range(0..self.soup.len() - len - 1024);
        while !self.soup[start..].starts_with(b". ") {
            start += 1;
        }
        let tail = buf.split_off(at);
        buf.extend_from_slice(&self.soup[start + 2..start + 2 + len]);
        if buf.last() == Some(&b' ') {
            buf.pop();
            buf.push(b'.');
        }
        buf.extend_from_slice(&tail);
    }
}

/// The rng of a generator: `seed` mixed with a constant per use, so that two uses of one seed
/// do not draw the same numbers.
fn rng_for(seed: u64, stream: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
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
    fn dataset_command_parses_checks_and_writes() {
        let parse = |list: &[&str]| {
            DatasetArgs::try_parse_from(std::iter::once("dataset").chain(list.iter().copied()))
        };
        let a = parse(&["tweets", "--out", "x", "--records", "10", "--seed", "7"]).unwrap();
        assert_eq!((a.kind, a.records, a.seed), (Kind::Tweets, Some(10), 7));
        assert!(parse(&["glaciers", "--out", "x"]).is_err() && parse(&["glacier"]).is_err());
        for (records, want) in [
            ("0", "--records"),
            ("10000000", "--records"),
            ("5", "creating"),
        ] {
            let a = parse(&["glacier", "--out", "/nonexistent/x", "--records", records]).unwrap();
            let err = format!("{:#}", run(&a).unwrap_err());
            assert!(err.contains(want), "{err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.jsonl");
        let args = ["dataset", "glacier", "--records", "100", "--out"].map(OsString::from);
        main(args.into_iter().chain([path.clone().into_os_string()])).unwrap();
        assert!(std::fs::read(&path).unwrap() == bytes(Kind::Glacier, 100, 42).0);
    }
}
