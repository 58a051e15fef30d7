//! Aggregates (count, min, max, sum, avg) over the records meeting a filter.

use super::exec::{for_each_match, QueryStats, Records, Wants};
use super::plan::{Access, Plan};
use super::Filter;
use crate::error::{Error, Result};
use crate::index::{AttrPath, AttrValue, Scalar};
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
    let attr = match op {
        Aggregate::Count => None,
        Aggregate::CountOf(p)
        | Aggregate::Min(p)
        | Aggregate::Max(p)
        | Aggregate::Sum(p)
        | Aggregate::Avg(p) => Some(p),
    };
    // A count of the records meeting one condition on an index's attribute: its live
    // entries in the ranges, counted where they are (one condition: the ranges are exact).
    if let (
        Aggregate::Count,
        Access::Index {
            id, kind, ranges, ..
        },
    ) = (op, &plan.access)
    {
        if filter.conditions.len() == 1 {
            for range in ranges {
                count += records.count_entries(*id, *kind, range, stats)?;
            }
            stats.records_matched += count;
            let v = Value::from(count);
            stats.bytes_returned += v.to_string().len() as u64;
            return Ok(v);
        }
    }
    let attrs: Vec<&AttrPath> = attr.into_iter().collect();
    // Only the attribute aggregated is read of each record: through an index on it (or, for
    // a count, any index) that decides the whole filter, none is read.
    let wants = Wants {
        record: false,
        attrs: &attrs,
    };
    for_each_match(records, filter, plan, None, None, wants, stats, &mut |m| {
        let value = m.attrs.first().and_then(Option::as_ref);
        let scalar = value.and_then(AttrValue::scalar);
        match op {
            Aggregate::Count => count += 1,
            Aggregate::CountOf(_) => {
                // Present and not null, whatever its type.
                if value.is_some() && !matches!(scalar, Some(Scalar::Null)) {
                    count += 1;
                }
            }
            Aggregate::Min(_) | Aggregate::Max(_) => {
                if let Some(s) = scalar.filter(|s| !matches!(s, Scalar::Null)) {
                    let better = best.as_ref().is_none_or(|b| match op {
                        Aggregate::Min(_) => s < b,
                        _ => s > b,
                    });
                    if better {
                        best = Some(s.clone());
                    }
                }
            }
            Aggregate::Sum(_) | Aggregate::Avg(_) => {
                if let Some(Scalar::Number(n)) = scalar {
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
