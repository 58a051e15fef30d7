//! The additive model of a query's response time through the device (the report's model
//! column for Q1 and Q4 over Q1): what the wire, the scheduler and the command handling
//! cost, apart from the engine's time that its counters give.

use super::queries_runs::query_ms;
use cerberus_figures::docs::queries::EngineDoc;

/// The mean over its keys of a query's time in the engine (its three steps: secondary
/// search, primary lookups, value reads), in ms, from the engine's counters.
fn engine_ms(e: &EngineDoc, q: &str) -> Option<f64> {
    let xs: Vec<f64> = (e.queries.iter().filter(|d| d.query == q))
        .map(|d| {
            let ns = |k: &str| d.stats.get(k).and_then(serde_json::Value::as_f64);
            Some(ns("secondary_search_ns")? + ns("primary_search_ns")? + ns("value_read_ns")?)
        })
        .collect::<Option<Vec<f64>>>()?;
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64 / 1e6)
}

/// The additive model of a response time through the device: the wire, the scheduler and
/// the command handling cost `b` and `a` alike but for the bytes they send, what the engine
/// spent apart; so `a`'s response is `b`'s minus `b`'s engine time plus `a`'s, plus
/// `per_byte_ms` for each byte more that `a` sends: returned over `b`'s response.
pub(super) fn additive(
    a: (&EngineDoc, &str),
    b: (&EngineDoc, &str),
    per_byte_ms: f64,
) -> Option<f64> {
    let rb = query_ms(b.0, b.1)?;
    let more = mean_bytes(a.0, a.1)? - mean_bytes(b.0, b.1)?;
    Some((rb - engine_ms(b.0, b.1)? + engine_ms(a.0, a.1)? + per_byte_ms * more) / rb)
}

/// The wire's cost of a byte sent to the host, in ms, from one run's Q5 and Q6 (the same
/// records, whole or their text alone): what their responses differ by beyond their engine
/// times, over what their bytes differ by (0 when the noise makes it negative).
pub(super) fn per_byte_ms(e: &EngineDoc) -> Option<f64> {
    let rest = |q: &str| Some(query_ms(e, q)? - engine_ms(e, q)?);
    let more = mean_bytes(e, "Q5")? - mean_bytes(e, "Q6")?;
    if more <= 0.0 {
        return None;
    }
    Some(((rest("Q5")? - rest("Q6")?) / more).max(0.0))
}

/// The mean over its keys of the bytes a query sent to the host.
fn mean_bytes(e: &EngineDoc, q: &str) -> Option<f64> {
    let xs: Vec<f64> = (e.queries.iter().filter(|d| d.query == q))
        .map(|d| d.bytes as f64)
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}
