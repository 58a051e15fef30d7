//! `cerberus index create|drop|list`, `cerberus find`, `cerberus top` and `cerberus agg`:
//! secondary indexes and queries, run inside the device. Filters are MongoDB-style filter
//! documents: `{"political_unit": "AUST", "max_elev": {"$gte": 3000}}`.

use crate::scan::escape;
use crate::session::Session;
use crate::target::DataTarget;
use anyhow::{bail, Context, Result};
use cerberus_host::IndexKind;
use clap::{Subcommand, ValueEnum};
use serde_json::{json, Value};
use std::io::Write;

#[derive(Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// Entries hold the record's value address: finds read values with no primary lookup.
    Vas,
    /// Entries hold the pk only: finds look each pk up.
    Classic,
}

#[derive(Subcommand)]
pub enum IndexCmd {
    /// Creates an index on a JSON attribute (a top-level name or dotted path: user.id);
    /// returns once every record is indexed. Values that are not JSON, or hold no scalar at
    /// the attribute, are not indexed.
    Create {
        /// The attribute: a top-level name, or a dotted path into embedded objects.
        attr: String,
        /// vas (finds read values straight from the log) or classic (pks only).
        #[arg(long, value_enum, default_value = "vas")]
        kind: KindArg,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Drops the index on an attribute.
    Drop {
        /// The attribute the index is on.
        attr: String,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Lists the namespace's indexes: attribute, kind, and whether it is ready.
    List {
        /// Print the device's JSON array.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: DataTarget,
    },
}

/// What every query command shares.
#[derive(clap::Args)]
pub struct QueryOut {
    /// Print records as JSON lines ({"key": ..., "value": ...}) instead of key TAB value.
    #[arg(long)]
    json: bool,
    /// Print what the query read, per step, to stderr (the plan, index entries, primary
    /// lookups, value reads, pages by purpose, time per step).
    #[arg(long)]
    stats: bool,
}

#[derive(clap::Args)]
pub struct FindArgs {
    /// The filter document (JSON; `{}`: every record).
    filter: String,
    /// Return only these attributes (comma-separated paths), as a JSON object per record.
    #[arg(long, value_delimiter = ',')]
    project: Option<Vec<String>>,
    /// Stop after this many records.
    #[arg(long)]
    limit: Option<u64>,
    #[command(flatten)]
    out: QueryOut,
    #[command(flatten)]
    target: DataTarget,
}

#[derive(clap::Args)]
pub struct TopArgs {
    /// The filter document (JSON).
    filter: String,
    /// The attribute to rank by.
    #[arg(long)]
    by: String,
    /// Largest first.
    #[arg(long)]
    desc: bool,
    /// How many records.
    #[arg(short = 'k', long = "k", default_value_t = 10)]
    k: usize,
    /// Attributes returned with each record (comma-separated paths).
    #[arg(long, value_delimiter = ',')]
    project: Option<Vec<String>>,
    #[command(flatten)]
    out: QueryOut,
    #[command(flatten)]
    target: DataTarget,
}

#[derive(clap::Args)]
#[group(id = "op", required = true, multiple = false)]
pub struct AggArgs {
    /// The filter document (JSON).
    filter: String,
    /// Count the records.
    #[arg(long, group = "op")]
    count: bool,
    /// Sum of an attribute (numbers only).
    #[arg(long, group = "op", value_name = "ATTR")]
    sum: Option<String>,
    /// Mean of an attribute (numbers only).
    #[arg(long, group = "op", value_name = "ATTR")]
    avg: Option<String>,
    /// Smallest value of an attribute.
    #[arg(long, group = "op", value_name = "ATTR")]
    min: Option<String>,
    /// Largest value of an attribute.
    #[arg(long, group = "op", value_name = "ATTR")]
    max: Option<String>,
    #[command(flatten)]
    out: QueryOut,
    #[command(flatten)]
    target: DataTarget,
}

fn filter(text: &str) -> Result<Value> {
    let v: Value = serde_json::from_str(text).context("the filter is not JSON")?;
    if !v.is_object() {
        bail!("the filter is a JSON object, like {{\"attr\": \"value\"}}");
    }
    Ok(v)
}

fn print_stats(out: &QueryOut, summary: &Value) {
    if out.stats {
        if let Some(s) = summary.get("stats") {
            eprintln!("{}", named_purposes(s));
        }
    }
}

/// The query's `reads` and `pages` arrays as objects keyed by purpose, as `stats --json`
/// names them (`{"filter": 0, "index": 2, ...}`, not `[0, 2, ...]`).
fn named_purposes(stats: &Value) -> Value {
    let mut s = stats.clone();
    for field in ["reads", "pages"] {
        if let Some(Value::Array(a)) = s.get(field) {
            if a.len() == crate::stats::PURPOSES.len() {
                let named: serde_json::Map<String, Value> = crate::stats::PURPOSES
                    .iter()
                    .map(|p| p.to_string())
                    .zip(a.iter().cloned())
                    .collect();
                s[field] = Value::Object(named);
            }
        }
    }
    s
}

fn print_record(w: &mut impl Write, json_lines: bool, key: &[u8], value: &[u8]) -> Result<()> {
    if json_lines {
        let value: Value = serde_json::from_slice(value)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(value).into_owned()));
        let line = json!({ "key": String::from_utf8_lossy(key), "value": value });
        writeln!(w, "{line}")?;
    } else {
        w.write_all(&escape(key))?;
        if !value.is_empty() {
            w.write_all(b"\t")?;
            w.write_all(&escape(value))?;
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}

pub fn index(cmd: IndexCmd) -> Result<()> {
    match cmd {
        IndexCmd::Create { attr, kind, target } => {
            let s = Session::open(&target)?;
            let kind = match kind {
                KindArg::Vas => IndexKind::Vas,
                KindArg::Classic => IndexKind::Classic,
            };
            s.ns.create_index(&attr, kind)?;
        }
        IndexCmd::Drop { attr, target } => {
            let s = Session::open(&target)?;
            s.ns.drop_index(&attr)?;
        }
        IndexCmd::List { json, target } => {
            let s = Session::open(&target)?;
            let list = s.ns.list_indexes()?;
            if json {
                println!("{list}");
            } else {
                for i in list.as_array().into_iter().flatten() {
                    let ready = if i["ready"].as_bool() == Some(true) {
                        "ready"
                    } else {
                        "building"
                    };
                    println!(
                        "{}\t{}\t{ready}",
                        i["attr"].as_str().unwrap_or_default(),
                        i["kind"].as_str().unwrap_or_default()
                    );
                }
            }
        }
    }
    Ok(())
}

/// Every page of a find, printed as it arrives.
pub fn find(args: FindArgs) -> Result<()> {
    let s = Session::open(&args.target)?;
    let mut doc = json!({
        "op": "find",
        "filter": filter(&args.filter)?,
        "project": args.project,
        "limit": args.limit,
    });
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    loop {
        let reply = s.ns.query(&doc)?;
        for (k, v) in &reply.records {
            print_record(&mut w, args.out.json, k, v)?;
        }
        print_stats(&args.out, &reply.summary);
        match reply.continuation() {
            Some(c) => doc["continuation"] = Value::String(c.to_string()),
            None => break,
        }
    }
    Ok(w.flush()?)
}

pub fn top(args: TopArgs) -> Result<()> {
    let s = Session::open(&args.target)?;
    let doc = json!({
        "op": "top",
        "filter": filter(&args.filter)?,
        "by": args.by,
        "desc": args.desc,
        "k": args.k,
        "project": args.project,
    });
    let reply = s.ns.query(&doc)?;
    let keys = reply.summary["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, (k, v)) in reply.records.iter().enumerate() {
        let rank = keys.get(i).cloned().unwrap_or(Value::Null);
        if args.out.json {
            let projection: Value = serde_json::from_slice(v).unwrap_or(Value::Null);
            let line =
                json!({ "key": String::from_utf8_lossy(k), "by": rank, "value": projection });
            writeln!(w, "{line}")?;
        } else {
            w.write_all(&escape(k))?;
            write!(w, "\t{rank}")?;
            if !v.is_empty() {
                w.write_all(b"\t")?;
                w.write_all(&escape(v))?;
            }
            w.write_all(b"\n")?;
        }
    }
    print_stats(&args.out, &reply.summary);
    Ok(w.flush()?)
}

pub fn agg(args: AggArgs) -> Result<()> {
    let s = Session::open(&args.target)?;
    let (function, attr) = match (&args.sum, &args.avg, &args.min, &args.max) {
        (Some(a), ..) => ("sum", Some(a)),
        (_, Some(a), ..) => ("avg", Some(a)),
        (_, _, Some(a), _) => ("min", Some(a)),
        (.., Some(a)) => ("max", Some(a)),
        _ => ("count", None),
    };
    let doc = json!({
        "op": "aggregate",
        "filter": filter(&args.filter)?,
        "fn": function,
        "attr": attr,
    });
    let reply = s.ns.query(&doc)?;
    if args.out.json {
        println!("{}", json!({ function: reply.summary["value"] }));
    } else {
        println!("{}", reply.summary["value"]);
    }
    print_stats(&args.out, &reply.summary);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn query_stats_name_their_purposes() {
        let s = serde_json::json!({"plan": "scan", "reads": [1, 2, 3, 4, 5, 6], "pages": [0, 2, 6, 25, 0, 0]});
        let named = super::named_purposes(&s);
        assert_eq!(
            named["pages"],
            serde_json::json!({"filter": 0, "index": 2, "data": 6, "value": 25, "log": 0, "other": 0})
        );
        assert_eq!(named["reads"]["other"], 6);
        assert_eq!(named["plan"], "scan");
    }
}
