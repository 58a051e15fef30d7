//! The records `queries` loads: a generated dataset of the paper's or a JSON-lines file, each
//! record as (key, line), and the queries that go with them.

use super::args::QueriesArgs;
use super::workload::QuerySet;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::io::BufRead;
use std::path::PathBuf;

/// Records as (key, JSON line).
pub type Dataset = Vec<(Vec<u8>, Vec<u8>)>;

/// The records as (key, JSON line), and the queries to run on them.
pub fn load_dataset(args: &QueriesArgs, dir: &std::path::Path) -> Result<(Dataset, QuerySet)> {
    let (path, set) = match args.dataset.as_str() {
        name @ ("glacier" | "tweets") => {
            let kind = if name == "glacier" {
                cerberus_datasets::Kind::Glacier
            } else {
                cerberus_datasets::Kind::Tweets
            };
            let path = dir.join(format!("{name}.jsonl"));
            let n = args.records.unwrap_or(match kind {
                cerberus_datasets::Kind::Glacier => 104_600,
                cerberus_datasets::Kind::Tweets => 132_800,
            });
            let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
            cerberus_datasets::generate(kind, n, 42, &mut out)?;
            std::io::Write::flush(&mut out)?;
            (path, QuerySet::paper(name))
        }
        file => {
            let attr = args
                .attr
                .clone()
                .context("a dataset FILE needs --attr (the attribute to index)")?;
            if args.queries.is_empty() {
                bail!("a dataset FILE needs --query FILTER (one or more)");
            }
            (
                PathBuf::from(file),
                QuerySet::custom(attr, &args.queries, args.limit)?,
            )
        }
    };
    Ok((read_records(&path, &args.key_field)?, set))
}

/// The records of a JSON-lines file as (key, line), the key from `key_field`.
pub fn read_records(path: &std::path::Path, key_field: &str) -> Result<Dataset> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut records = Vec::new();
    for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let doc: Value =
            serde_json::from_str(&line).with_context(|| format!("line {} is not JSON", n + 1))?;
        let key = match &doc[key_field] {
            Value::String(s) => s.clone().into_bytes(),
            Value::Number(x) => x.to_string().into_bytes(),
            _ => bail!("line {} has no {} (string or number)", n + 1, key_field),
        };
        records.push((key, line.into_bytes()));
    }
    Ok(records)
}
