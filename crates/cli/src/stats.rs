//! `cerberus stats`: the device's JSON statistics as a readable summary, or as they are.
//!
//! The engine counts lookups (gets, exists checks, and the existence checks that deletes and
//! conditional puts make) and, apart from them, key listings, each with the pages they read
//! per purpose: per-lookup figures come from lookups alone. A device that predates that split
//! (no `listings` in its document) counts index and data pages of both together; those are
//! then shown as totals and never divided by the number of lookups.

use crate::session::{connect, open_namespace};
use crate::target::{AdminAuth, DataTarget};
use anyhow::{Context, Result};
use serde_json::Value;
use std::fmt::Write;

/// The engine's read purposes, in its order.
pub(crate) const PURPOSES: [&str; 6] = ["filter", "index", "data", "value", "log", "other"];

/// Page-read purposes that only lookups cause (see the module comment).
const LOOKUP_ONLY_PAGES: [(&str, &str); 2] =
    [("filter", "filter pages"), ("value", "value-log pages")];

/// `cerberus stats`: the namespace's statistics, or with `device_wide` the device's.
pub fn run(
    target: &DataTarget,
    admin: &AdminAuth,
    device_wide: bool,
    exact: bool,
    json: bool,
) -> Result<()> {
    let client = connect(&target.conn)?;
    let doc = if device_wide {
        let secret = admin
            .admin_secret
            .as_deref()
            .context("--device-wide needs the admin credential")?;
        client
            .authenticate_admin(secret)
            .context("authenticating as admin")?;
        client.stats()?
    } else {
        let ns = open_namespace(&client, &target.auth)?;
        let mut doc = ns.stats()?;
        if exact {
            // The count aggregate with no filter: every record, read from the tree alone.
            let reply = ns
                .query(&serde_json::json!({"op": "aggregate", "fn": "count", "filter": {}}))
                .context("counting the keys")?;
            let keys = reply.summary.get("value").cloned().unwrap_or(Value::Null);
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("keys".into(), keys);
            }
        }
        doc
    };
    print(&doc, json)
}

fn print(doc: &Value, json: bool) -> Result<()> {
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
    match doc.get("nsid") {
        Some(ns) => writeln!(out, "namespace {ns}")?,
        None => writeln!(out, "device")?,
    }
    write_tree(out, doc)?;
    writeln!(
        out,
        "puts {}  deletes {}",
        num(doc, "puts"),
        num(doc, "deletes")
    )?;
    if let Some(keys) = doc.get("keys").and_then(Value::as_u64) {
        writeln!(out, "keys {keys} (counted)")?;
    } else if let Some(keys) = doc.get("keys_estimate").and_then(Value::as_u64) {
        writeln!(
            out,
            "keys ~{keys} (estimate: overwritten versions and deletes count until compacted; \
             --exact counts them)"
        )?;
    }
    write_space(out, doc)?;
    write_lookups(out, doc)?;
    write_pages(out, doc)?;
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

/// Tables and bytes per level of the tree, the levels that hold any.
/// A namespace's space and settings (a device older than quotas sends none).
fn write_space(out: &mut String, doc: &Value) -> std::fmt::Result {
    let Some(used) = doc.get("used_bytes").and_then(Value::as_u64) else {
        return Ok(());
    };
    let capacity = match doc.get("capacity").and_then(Value::as_u64) {
        Some(c) => format!("{c}"),
        None => "none".into(),
    };
    writeln!(
        out,
        "used {used} bytes (index {}, not yet flushed {})  capacity {capacity}  garbage {}",
        num(doc, "index_bytes"),
        num(doc, "pending_bytes"),
        num(doc, "garbage_bytes"),
    )?;
    if let Some(s) = doc.get("shares") {
        writeln!(
            out,
            "shares: weight {}  reservation {} ops/s {} B/s  limit {} ops/s {} B/s (0: none)",
            num(s, "weight"),
            num(s, "reservation_ops"),
            num(s, "reservation_bytes"),
            num(s, "limit_ops"),
            num(s, "limit_bytes"),
        )?;
    }
    if doc.get("read_only").and_then(Value::as_bool) == Some(true) {
        writeln!(
            out,
            "read-only: writes are refused (a cluster move is copying it)"
        )?;
    }
    Ok(())
}

fn write_tree(out: &mut String, doc: &Value) -> std::fmt::Result {
    let Some(levels) = doc.get("levels").and_then(Value::as_array) else {
        return Ok(());
    };
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
    Ok(())
}

/// Lookups, and where they were answered.
fn write_lookups(out: &mut String, doc: &Value) -> std::fmt::Result {
    writeln!(
        out,
        "lookups {}  not found {}",
        num(doc, "gets"),
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
    Ok(())
}

/// Page reads: per lookup where lookups alone caused them, else as totals (see the module
/// comment), and key listings' own.
fn write_pages(out: &mut String, doc: &Value) -> std::fmt::Result {
    let device_wide = doc.get("nsid").is_none();
    let lookups = num(doc, "gets");
    let pages = doc.get("pages").and_then(Value::as_object);
    let listings = doc.get("listings");
    // The purposes whose page reads lookups alone cause: every one once listings are
    // counted apart (a namespace), else those listings never read.
    let split = listings.is_some() && !device_wide;
    // Device-wide, every purpose's pages include background work (value-log pages: GC and
    // index builds, which read whole segments), so none is divided by the lookups.
    let lookup_only = |purpose: &str| {
        !device_wide && (split || LOOKUP_ONLY_PAGES.iter().any(|(p, _)| *p == purpose))
    };
    if lookups > 0 {
        let per = |n: u64| n as f64 / lookups as f64;
        let mut parts = vec![format!("filter loads {:.3}", per(num(doc, "filter_loads")))];
        if split {
            parts.push(format!("index loads {:.3}", per(num(doc, "index_loads"))));
        }
        for (purpose, n) in pages.into_iter().flat_map(in_purpose_order) {
            if lookup_only(purpose) {
                let label = LOOKUP_ONLY_PAGES
                    .iter()
                    .find(|(p, _)| *p == purpose)
                    .map_or_else(|| format!("{purpose} pages"), |(_, l)| l.to_string());
                parts.push(format!("{label} {:.3}", per(n)));
            }
        }
        writeln!(out, "per lookup: {}", parts.join(", "))?;
    }
    if let Some(l) = listings {
        write_listings(out, l)?;
    }
    let shared: Vec<String> = pages
        .into_iter()
        .flat_map(in_purpose_order)
        .filter(|(purpose, _)| device_wide || !lookup_only(purpose))
        .map(|(purpose, n)| format!("{purpose} {n}"))
        .collect();
    if !shared.is_empty() {
        let whose = if device_wide {
            "all work (lookups, key listings, background)"
        } else {
            "lookups and key listings together"
        };
        writeln!(out, "page reads, {whose}: {}", shared.join(", "))?;
    }
    Ok(())
}

/// Key listings, the keys they listed and the pages they read.
fn write_listings(out: &mut String, l: &Value) -> std::fmt::Result {
    let calls = num(l, "calls");
    if calls == 0 {
        return Ok(());
    }
    let read: Vec<String> = l
        .get("pages")
        .and_then(Value::as_object)
        .map(|p| {
            in_purpose_order(p)
                .filter(|(_, n)| *n > 0)
                .map(|(purpose, n)| format!("{purpose} {n}"))
                .collect()
        })
        .unwrap_or_default();
    writeln!(
        out,
        "key listings {calls}, keys listed {}, page reads: {}",
        num(l, "keys"),
        if read.is_empty() {
            "none".to_string()
        } else {
            read.join(", ")
        }
    )
}

/// Counts by purpose in the engine's order, whatever order the map keeps; names it adds
/// later come last.
fn in_purpose_order(
    pages: &serde_json::Map<String, Value>,
) -> impl Iterator<Item = (&str, u64)> + '_ {
    let known = PURPOSES.iter().filter_map(|p| pages.get_key_value(*p));
    let added = pages
        .iter()
        .filter(|(p, _)| !PURPOSES.contains(&p.as_str()));
    known
        .chain(added)
        .map(|(p, n)| (p.as_str(), n.as_u64().unwrap_or(0)))
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

    /// Device-wide page counts hold GC's and index builds' reads: a lookup's share of them
    /// means nothing (it read 13,137 value-log pages "per lookup" on a device that had GC'd).
    #[test]
    fn device_wide_pages_are_not_divided_by_lookups() {
        let mut doc = namespace_doc(5);
        let obj = doc.as_object_mut().unwrap();
        obj.remove("nsid");
        let text = render(&doc);
        assert!(text.contains("per lookup: filter loads 0.500\n"), "{text}");
        assert!(text.contains(
            "page reads, all work (lookups, key listings, background): filter 2, index 9, data 5, value 3, log 0, other 0\n"
        ), "{text}");
    }

    #[test]
    fn with_listings_apart_every_purpose_is_per_lookup_and_listings_get_their_line() {
        let mut doc = namespace_doc(40);
        let obj = doc.as_object_mut().unwrap();
        obj.insert("keys_estimate".into(), json!(1234));
        obj.insert(
            "listings".into(),
            json!({"calls": 2, "keys": 300, "index_loads": 1,
                   "pages": {"filter": 0, "index": 1, "data": 30, "value": 0, "log": 0, "other": 0}}),
        );
        let text = render(&doc);
        assert!(text.contains("keys ~1234 (estimate"), "{text}");
        assert!(
            text.contains(
                "per lookup: filter loads 0.500, index loads 2.250, filter pages 0.500, \
                 index pages 2.250, data pages 10.000, value-log pages 0.750, log pages 0.000, \
                 other pages 0.000\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("key listings 2, keys listed 300, page reads: index 1, data 30\n"),
            "{text}"
        );
        assert!(!text.contains("together"), "{text}");
    }
}
