//! `cerberus stats`: the device's JSON statistics as a readable summary, or as they are.

use anyhow::Result;
use serde_json::Value;

pub fn print(doc: &Value, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(doc)?);
        return Ok(());
    }
    if let Some(ns) = doc.get("nsid") {
        println!("namespace {ns}");
    } else {
        println!("device");
    }
    if let Some(levels) = doc.get("levels").and_then(Value::as_array) {
        println!("tree:");
        // Namespace runs (split out of the shared L0) sit between L0 and L1.
        let runs = doc.get("runs").map(|r| ("runs".to_string(), r));
        let named = levels.iter().enumerate().map(|(i, l)| (format!("L{i}"), l));
        let rows: Vec<(String, &Value)> = named
            .clone()
            .take(1)
            .chain(runs)
            .chain(named.skip(1))
            .collect();
        for (name, l) in rows {
            let tables = l.get("tables").and_then(Value::as_u64).unwrap_or(0);
            let bytes = l.get("bytes").and_then(Value::as_u64).unwrap_or(0);
            if tables > 0 {
                println!(
                    "  {name:<4} {tables:>6} tables {:>12.1} MB",
                    bytes as f64 / 1e6
                );
            }
        }
    }
    let gets = doc.get("gets").and_then(Value::as_u64).unwrap_or(0);
    println!(
        "puts {}  deletes {}  gets {}",
        num(doc, "puts"),
        num(doc, "deletes"),
        gets
    );
    let mut served = vec![("memtable".to_string(), num(doc, "gets_memtable"))];
    if let Some(by) = doc.get("gets_by_level").and_then(Value::as_array) {
        for (i, v) in by.iter().enumerate() {
            served.push((format!("L{i}"), v.as_u64().unwrap_or(0)));
            if i == 0 {
                served.push(("runs".to_string(), num(doc, "gets_runs")));
            }
        }
    }
    let parts: Vec<String> = served
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if !parts.is_empty() {
        println!("gets served by: {}", parts.join(", "));
    }
    if gets > 0 {
        let per = |k: &str| num(doc, k) as f64 / gets as f64;
        println!(
            "per get: filter loads {:.3}, index loads {:.3}",
            per("filter_loads"),
            per("index_loads")
        );
        if let Some(pages) = doc.get("pages").and_then(Value::as_object) {
            let parts: Vec<String> = pages
                .iter()
                .map(|(k, v)| format!("{k} {:.3}", v.as_u64().unwrap_or(0) as f64 / gets as f64))
                .collect();
            println!("page reads per get: {}", parts.join(", "));
        }
    }
    for k in [
        "flushes",
        "compactions",
        "vlog_bytes",
        "vlog_segments",
        "gc_segments_deleted",
        "write_stalls",
    ] {
        if let Some(v) = doc.get(k) {
            println!("{k}: {v}");
        }
    }
    Ok(())
}

fn num(doc: &Value, k: &str) -> u64 {
    doc.get(k).and_then(Value::as_u64).unwrap_or(0)
}
