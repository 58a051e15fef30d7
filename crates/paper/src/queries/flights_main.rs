//! `--set flights` from the command line: the file read, the reference answers found (those
//! of the file whose sha1 they name), the rounds run, the table printed, the JSON and the
//! answers written.

use super::args::QueriesArgs;
use super::flights::{self, Config, Reference};
use super::flights_query::Answer;
use super::records::Dataset;
use anyhow::{bail, Context, Result};
use cerberus_engine::IndexKind;
use std::path::PathBuf;

pub fn main(args: &QueriesArgs) -> Result<()> {
    let path = PathBuf::from(&args.dataset);
    if !path.is_file() {
        bail!("--set flights needs a JSON-lines FILE (scripts/dataset-flights OUT.jsonl)");
    }
    // The kind listed last of classic and vas (the default list ends with vas).
    let kind = match (args.index.rfind("vas"), args.index.rfind("classic")) {
        (Some(v), c) if c.is_none_or(|c| c < v) => IndexKind::Vas,
        (_, Some(_)) => IndexKind::Classic,
        _ => bail!("--set flights: --index must list classic or vas"),
    };
    let all = super::records::read_records(&path, &args.key_field)?;
    let len = all.len();
    // The file is in date order: a prefix would hold a few months only, so a smaller set
    // is an even sample of it (every query still finds records).
    let records = match args.records {
        Some(0) => bail!("--records 0: a sample needs at least one record"),
        Some(n) => even_sample(all, n as usize),
        None => all,
    };
    let whole = records.len() == len;
    let reference: Reference = serde_json::from_str(flights::REFERENCE)
        .context("crates/paper/data/flights-answers.json")?;
    let sha1 = flights::file_sha1(&path)?;
    let default_k = args.top_k == [50];
    let checked = reference.dataset_sha1 == sha1 && whole && default_k;
    match checked {
        true => eprintln!("{}: the reference answers' file", path.display()),
        false if reference.dataset_sha1 == sha1 => eprintln!(
            "{}: the reference answers' file, but {}: ours and the peers are checked \
             against each other only",
            path.display(),
            match whole {
                false => format!("an even sample of {} of its records", records.len()),
                true => format!("top-K at k = {:?}", args.top_k),
            }
        ),
        false => eprintln!(
            "{}: sha1 {sha1} is not the reference answers' file ({}): ours and SQLite are \
             checked against each other only",
            path.display(),
            reference.dataset_sha1
        ),
    }
    let tmp = tempfile::tempdir()?;
    let dir = args.db.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let device = match args.device.as_deref() {
        None => false,
        Some("local") => true,
        Some(other) => bail!("--device {other}: only `local` (a device this run starts)"),
    };
    let report = flights::run(&Config {
        dataset: &path,
        records: &records,
        kind,
        rounds: args.repeat,
        runs: args.runs.max(1),
        dir: &dir,
        device,
        reference: checked.then_some(&reference.answers),
        // The peer of queries through the device; left out without the feature.
        postgres: device && cfg!(feature = "postgres"),
        fresh: args.fresh,
        top_k: &args.top_k,
        only: args.only.as_deref(),
    })?;
    print!("\n{}", flights::render(&report));
    if let Some(out) = &args.json {
        std::fs::write(out, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if let Some(out) = &args.write_answers {
        let answers = report
            .rows
            .iter()
            .filter(|r| !matches!(r.name.as_str(), "load" | "mutate"))
            .map(|r| {
                let a = Answer {
                    count: r.count,
                    digest: r.digest.clone(),
                };
                (r.name.clone(), a)
            })
            .collect();
        let doc = Reference {
            dataset_sha1: sha1,
            records: records.len(),
            answers,
        };
        std::fs::write(out, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}

/// An even sample of `n` of `records` (every `len/n`-th, the first among them), all of them
/// if `n` is not fewer: a file in date order keeps every part of its span.
pub(super) fn even_sample(records: Dataset, n: usize) -> Dataset {
    let len = records.len();
    if n >= len {
        return records;
    }
    let mut at = (0..n).map(|i| i * len / n).peekable();
    records
        .into_iter()
        .enumerate()
        .filter(|(j, _)| at.next_if_eq(j).is_some())
        .map(|(_, r)| r)
        .collect()
}
