//! `cerberus stats`: the device's JSON statistics as a readable summary, or as they are.
//!
//! The engine counts lookups (gets, exists checks, and the existence checks that deletes and
//! conditional puts make) and, separately, the pages read per purpose. Filter blocks and
//! value-log records are read by lookups only, so those are shown per lookup; index and data
//! blocks are also read by key listings (and, device-wide, by background work), so they are
//! shown as totals and never divided by the number of lookups.

use anyhow::Result;
use serde_json::Value;
use std::fmt::Write;

/// The engine's read purposes, in its order.
const PURPOSES: [&str; 6] = ["filter", "index", "data", "value", "log", "other"];

/// Page-read purposes that only lookups cause (see the module comment).
const LOOKUP_ONLY_PAGES: [(&str, &str); 2] =
    [("filter", "filter pages"), ("value", "value-log pages")];

pub fn print(doc: &Value, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(doc)?);
    } else {
        print!("{}", render(doc));
    }
    Ok(())
}

/// The readable summary, one fact a line.
pub fn render(doc: &Value) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_summary(&mut out, doc);
    out
}

fn write_summary(out: &mut String, doc: &Value) -> std::fmt::Result {
    let device_wide = doc.get("nsid").is_none();
    match doc.get("nsid") {
        Some(ns) => writeln!(out, "namespace {ns}")?,
        None => writeln!(out, "device")?,
    }
    if let Some(levels) = doc.get("levels").and_then(Value::as_array) {
        writeln!(out, "tree:")?;
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
            let tables = num(l, "tables");
            if tables > 0 {
                let mb = num(l, "bytes") as f64 / 1e6;
                writeln!(out, "  {name:<4} {tables:>6} tables {mb:>12.1} MB")?;
            }
        }
    }
    writeln!(
        out,
        "puts {}  deletes {}",
        num(doc, "puts"),
        num(doc, "deletes")
    )?;
    let lookups = num(doc, "gets");
    writeln!(
        out,
        "lookups {lookups}  not found {}",
        num(doc, "gets_not_found")
    )?;
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
        writeln!(out, "lookups answered by: {}", parts.join(", "))?;
    }
    let pages = doc.get("pages").and_then(Value::as_object);
    if lookups > 0 {
        let per = |n: u64| n as f64 / lookups as f64;
        let mut parts = vec![format!("filter loads {:.3}", per(num(doc, "filter_loads")))];
        if let Some(pages) = pages {
            for (purpose, label) in LOOKUP_ONLY_PAGES {
                let n = pages.get(purpose).and_then(Value::as_u64).unwrap_or(0);
                parts.push(format!("{label} {:.3}", per(n)));
            }
        }
        writeln!(out, "per lookup: {}", parts.join(", "))?;
    }
    if let Some(pages) = pages {
        // The engine's purpose order, whatever order the map keeps; names it adds later last.
        let known = PURPOSES.iter().filter_map(|p| pages.get_key_value(*p));
        let added = pages
            .iter()
            .filter(|(p, _)| !PURPOSES.contains(&p.as_str()));
        let shared: Vec<String> = known
            .chain(added)
            .filter(|(purpose, _)| {
                device_wide || !LOOKUP_ONLY_PAGES.iter().any(|(p, _)| p == purpose)
            })
            .map(|(purpose, n)| format!("{purpose} {}", n.as_u64().unwrap_or(0)))
            .collect();
        let whose = if device_wide {
            "all work (lookups, key listings, background)"
        } else {
            "lookups and key listings together"
        };
        writeln!(out, "page reads, {whose}: {}", shared.join(", "))?;
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
            writeln!(out, "{k}: {v}")?;
        }
    }
    Ok(())
}

fn num(doc: &Value, k: &str) -> u64 {
    doc.get(k).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn namespace_doc(data_pages: u64) -> Value {
        json!({
            "nsid": 3,
            "levels": [{"tables": 1, "bytes": 2_000_000}, {"tables": 0, "bytes": 0}],
            "runs": {"tables": 0, "bytes": 0},
            "gets": 4, "gets_not_found": 1, "gets_memtable": 1, "gets_by_level": [2, 0],
            "gets_runs": 0, "puts": 10, "deletes": 0, "filter_loads": 2, "index_loads": 9,
            "pages": {"filter": 2, "index": 9, "data": data_pages, "value": 3, "log": 0, "other": 0},
        })
    }

    #[test]
    fn per_lookup_figures_leave_out_what_listings_read() {
        let text = render(&namespace_doc(40));
        assert!(text.contains("lookups 4  not found 1\n"), "{text}");
        assert!(
            text.contains("lookups answered by: memtable 1, L0 2\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "per lookup: filter loads 0.500, filter pages 0.500, value-log pages 0.750\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "page reads, lookups and key listings together: index 9, data 40, log 0, other 0\n"
            ),
            "{text}"
        );
        // More listing reads change the totals, not the per-lookup line.
        let more = render(&namespace_doc(400));
        let per = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("per lookup"))
                .map(String::from)
        };
        assert_eq!(per(&text), per(&more));
        assert_ne!(text, more);
    }

    #[test]
    fn device_wide_totals_name_every_purpose_and_no_lookups_means_no_ratios() {
        let mut doc = namespace_doc(5);
        let obj = doc.as_object_mut().unwrap();
        obj.remove("nsid");
        obj.insert("gets".into(), json!(0));
        let text = render(&doc);
        assert!(text.starts_with("device\n"), "{text}");
        assert!(!text.contains("per lookup"), "{text}");
        assert!(text.contains(
            "page reads, all work (lookups, key listings, background): filter 2, index 9, data 5, value 3, log 0, other 0\n"
        ), "{text}");
    }
}
