//! The runs IterKVSSD's value and index prefetch figures share (`iterkvssd.rs`,
//! `iterkvssd_index.rs`): the NAND model's flags, the fill, what a seekrandom run measured,
//! and the slides' tail latency figures they report against.

use super::ctx::Ctx;
use super::parts::words;
use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The slides' "Evaluation - Index Prefetch": "about 3.6x better P99.9 tail latency"
/// (IterKVSSD-B against IterKVSSD-I, no value prefetch, scan length 200,000).
pub const PAPER_INDEX_P999: f64 = 3.6;
/// The slides' conclusion: "2x lower P99.9 tail latency" (index and value prefetch).
pub const PAPER_BOTH_P999: f64 = 2.0;

pub const NAND: &str = "--storage nand --cache-bytes 0";

/// What a seekrandom run measured.
pub struct Seek {
    pub entries_per_sec: f64,
    pub next_p99: f64,
    pub next_p999: f64,
}

pub fn seek(doc: &Value) -> Result<Seek> {
    let phases = doc
        .get("phases")
        .and_then(Value::as_array)
        .context("a seekrandom document without phases")?;
    let p = phases
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some("seekrandom"))
        .context("a document without its seekrandom phase")?;
    let num = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_f64)
            .with_context(|| format!("the seekrandom phase has no {k}"))
    };
    let (entries, seconds) = (num(p, "entries")?, num(p, "seconds")?);
    if seconds <= 0.0 || entries <= 0.0 {
        bail!("a seekrandom run that returned no entries ({entries} in {seconds} s)");
    }
    let next = p
        .get("next_latency_us")
        .context("the seekrandom phase has no next_latency_us")?;
    Ok(Seek {
        entries_per_sec: entries / seconds,
        next_p99: num(next, "p99")?,
        next_p999: num(next, "p999")?,
    })
}

/// Writes the fill's dirty pages back before the measured runs (as the script does), so
/// that no run pays for them.
pub fn sync() {
    // Best effort: without it the first runs are slower, not wrong.
    let _ = std::process::Command::new("sync").status();
}

/// Fills a NAND-model database (`fillrandom,flush,compact`) and returns its path.
pub fn fill(ctx: &mut Ctx, common: &[String]) -> Result<std::path::PathBuf> {
    let db = ctx.path("db");
    let mut a = words("fillrandom,flush,compact --db");
    a.push(db.display().to_string());
    a.extend(common.iter().cloned());
    ctx.run(&a)?;
    sync();
    Ok(db)
}
