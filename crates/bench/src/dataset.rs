//! `cerberus-bench dataset glacier|tweets --out FILE [--records N] [--seed S]`: writes one of the
//! paper's two query datasets (the `cerberus-datasets` crate) as JSON lines.

use anyhow::{bail, Context, Result};
use cerberus_datasets::{generate, Kind, MAX_RECORDS};
use clap::Parser;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

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

/// The flag's own words for what the generator would refuse, before the file is made.
fn check_records(records: u64) -> Result<()> {
    if records == 0 {
        bail!("--records must be at least 1");
    }
    if records > MAX_RECORDS {
        bail!("--records must be at most {MAX_RECORDS} (ids are 8 bytes)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(kind: Kind, records: u64, seed: u64) -> (Vec<u8>, cerberus_datasets::Summary) {
        let mut out = Vec::new();
        let summary = generate(kind, records, seed, &mut out).unwrap();
        (out, summary)
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
