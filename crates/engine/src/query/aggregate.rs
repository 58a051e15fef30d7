//! Aggregates (count, min, max, sum, avg) over the records meeting a filter.

use super::exec::{for_each_match, QueryStats, Records};
use super::plan::Plan;
use super::Filter;
use crate::error::{Error, Result};
use crate::index::{AttrPath, Scalar};
use serde_json::Value;

/// An aggregate over the records meeting a filter.
#[derive(Clone, Debug, PartialEq, Eq)]
///
/// As SQL's `COUNT(x)`, `MIN(x)` and MongoDB's `$min`: a record whose attribute is missing or
/// `null` is skipped by every aggregate of that attribute (`docs/queries.md`, Aggregates).
pub enum Aggregate {
    /// Every record meeting the filter.
    Count,
    /// The records whose attribute is present and not `null` (`COUNT(x)`).
    CountOf(AttrPath),
    /// Over the scalars other than `null` at the attribute, in the order of secondary keys
    /// (booleans, then numbers, then strings); arrays and objects are skipped.
    Min(AttrPath),
    /// As `Min`, the largest.
    Max(AttrPath),
    /// Over numbers only: other values at the attribute are skipped.
    Sum(AttrPath),
    /// The mean over numbers only (`null` over none).
    Avg(AttrPath),
}

impl Aggregate {
    /// `count` (of `attr`, if given), or `min|max|sum|avg` of `attr`.
    pub fn parse(op: &str, attr: Option<&str>) -> Result<Aggregate> {
        let path = || -> Result<AttrPath> {
            let a = attr.ok_or_else(|| Error::InvalidQuery(format!("{op} needs an attribute")))?;
            AttrPath::parse(a).map_err(Error::InvalidQuery)
        };
        Ok(match op {
            "count" if attr.is_none() => Aggregate::Count,
            "count" => Aggregate::CountOf(path()?),
            "min" => Aggregate::Min(path()?),
            "max" => Aggregate::Max(path()?),
            "sum" => Aggregate::Sum(path()?),
            "avg" => Aggregate::Avg(path()?),
            other => {
                return Err(Error::InvalidQuery(format!(
                    "unknown aggregate {other} (count, min, max, sum, avg)"
                )))
            }
        })
    }
}

/// The aggregate's value: a count, a scalar (min, max; `null` over no value other than
/// `null`), or a number (sum, avg; avg is `null` over no number).
pub fn aggregate(
    records: &mut dyn Records,
    filter: &Filter,
    plan: &Plan,
    op: &Aggregate,
    stats: &mut QueryStats,
) -> Result<Value> {
    let (mut count, mut sum, mut numbers) = (0u64, 0f64, 0u64);
    let mut best: Option<Scalar> = None;
    for_each_match(records, filter, plan, None, None, stats, &mut |m| {
        match op {
            Aggregate::Count => count += 1,
            Aggregate::CountOf(p) => {
                if p.lookup(m.doc.get()).is_some_and(|v| !v.is_null()) {
                    count += 1;
                }
            }
            Aggregate::Min(p) | Aggregate::Max(p) => {
                if let Some(s) = m.doc.scalar(p).filter(|s| !matches!(s, Scalar::Null)) {
                    let better = best.as_ref().is_none_or(|b| match op {
                        Aggregate::Min(_) => s < *b,
                        _ => s > *b,
                    });
                    if better {
                        best = Some(s);
                    }
                }
            }
            Aggregate::Sum(p) | Aggregate::Avg(p) => {
                if let Some(Scalar::Number(n)) = m.doc.scalar(p) {
                    sum += n;
                    numbers += 1;
                }
            }
        }
        Ok(true)
    })?;
    let number = |x: f64| Scalar::Number(x).to_json();
    let v = match op {
        Aggregate::Count | Aggregate::CountOf(_) => Value::from(count),
        Aggregate::Min(_) | Aggregate::Max(_) => best.map_or(Value::Null, |s| s.to_json()),
        Aggregate::Sum(_) => number(sum),
        Aggregate::Avg(_) if numbers == 0 => Value::Null,
        Aggregate::Avg(_) => number(sum / numbers as f64),
    };
    stats.bytes_returned += v.to_string().len() as u64;
    Ok(v)
}
