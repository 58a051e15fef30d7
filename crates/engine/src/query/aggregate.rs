//! Aggregates (count, min, max, sum, avg) over the records meeting a filter.

use super::exec::for_each_match;
use super::filter::{Filter, KeyRange};
use super::matcher::Wants;
use super::plan::{Access, Plan};
use super::records::Records;
use super::stats::QueryStats;
use crate::error::{Error, Result};
use crate::index::{AttrPath, AttrValue, IndexKind, Number, Scalar};
use crate::key::Nsid;
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
    /// Over numbers only: other values at the attribute are skipped. The exact sum of the
    /// values: an integer answer where it is one that fits `i64`/`u64`, else rounded once to
    /// `f64` (whatever order records come in, whatever form, `2` or `2.0`, a value had).
    Sum(AttrPath),
    /// The mean over numbers only (`null` over none): the sum as `Sum` has it, to the
    /// nearest `f64`, divided by their count.
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

impl Aggregate {
    /// The attribute aggregated (none for a count of records).
    pub fn attr(&self) -> Option<&AttrPath> {
        match self {
            Aggregate::Count => None,
            Aggregate::CountOf(p)
            | Aggregate::Min(p)
            | Aggregate::Max(p)
            | Aggregate::Sum(p)
            | Aggregate::Avg(p) => Some(p),
        }
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
    // A count of the records meeting one condition on an index's attribute: its live
    // entries in the ranges, counted where they are (one condition: the ranges are exact).
    if let Some((id, kind, ranges)) = counted_in_index(filter, plan, op) {
        let mut count = 0;
        for range in ranges {
            count += records.count_entries(id, kind, range, stats)?;
        }
        stats.records_matched += count;
        let v = Value::from(count);
        stats.bytes_returned += v.to_string().len() as u64;
        return Ok(v);
    }
    Ok(Tally::of(records, filter, plan, op, stats)?.value(stats))
}

/// The index, its kind and ranges whose live entries count the records of `op` (a count of
/// the records meeting one condition on an indexed attribute), with no record read.
pub fn counted_in_index<'p>(
    filter: &Filter,
    plan: &'p Plan,
    op: &Aggregate,
) -> Option<(Nsid, IndexKind, &'p [KeyRange])> {
    match (op, &plan.access) {
        (
            Aggregate::Count,
            Access::Index {
                id, kind, ranges, ..
            },
        ) if filter.conditions.len() == 1 => Some((*id, *kind, ranges)),
        _ => None,
    }
}

/// An aggregate over some of the records meeting a filter: walks over pieces of a plan's
/// ranges each make one, and [`merge`](Self::merge) adds them up whatever their order.
pub struct Tally {
    op: Aggregate,
    count: u64,
    sum: Sum,
    best: Option<Scalar>,
}

impl Tally {
    /// The tally of `op` over the records `plan` reaches that meet `filter`.
    pub fn of(
        records: &mut dyn Records,
        filter: &Filter,
        plan: &Plan,
        op: &Aggregate,
        stats: &mut QueryStats,
    ) -> Result<Tally> {
        let mut t = Tally {
            op: op.clone(),
            count: 0,
            sum: Sum::default(),
            best: None,
        };
        let attrs: Vec<&AttrPath> = op.attr().into_iter().collect();
        // Only the attribute aggregated is read of each record: through an index on it (or,
        // for a count, any index) that decides the whole filter, none is read.
        let wants = Wants {
            record: false,
            attrs: &attrs,
        };
        for_each_match(records, filter, plan, None, None, wants, stats, &mut |m| {
            t.offer(m.attrs.first().and_then(Option::as_ref));
            Ok(true)
        })?;
        Ok(t)
    }

    /// Takes one matching record's value at the attribute (`None`: missing).
    fn offer(&mut self, value: Option<&AttrValue>) {
        let scalar = value.and_then(AttrValue::scalar);
        match &self.op {
            Aggregate::Count => self.count += 1,
            Aggregate::CountOf(_) => {
                // Present and not null, whatever its type.
                if value.is_some() && !matches!(scalar, Some(Scalar::Null)) {
                    self.count += 1;
                }
            }
            Aggregate::Min(_) | Aggregate::Max(_) => {
                if let Some(s) = scalar.filter(|s| !matches!(s, Scalar::Null)) {
                    self.keep_best(s);
                }
            }
            Aggregate::Sum(_) | Aggregate::Avg(_) => {
                if let Some(Scalar::Number(n)) = scalar {
                    self.sum.add(*n);
                }
            }
        }
    }

    fn keep_best(&mut self, s: &Scalar) {
        let better = self.best.as_ref().is_none_or(|b| match self.op {
            Aggregate::Min(_) => s < b,
            _ => s > b,
        });
        if better {
            self.best = Some(s.clone());
        }
    }

    /// Adds the tally of another piece of the same aggregate.
    pub fn merge(&mut self, other: Tally) {
        self.count += other.count;
        self.sum.merge(other.sum);
        if let Some(b) = &other.best {
            self.keep_best(b);
        }
    }

    /// The aggregate's value (counted in `stats`' bytes returned).
    pub fn value(self, stats: &mut QueryStats) -> Value {
        let v = match self.op {
            Aggregate::Count | Aggregate::CountOf(_) => Value::from(self.count),
            Aggregate::Min(_) | Aggregate::Max(_) => self.best.map_or(Value::Null, |s| s.to_json()),
            Aggregate::Sum(_) => self.sum.total().to_json(),
            Aggregate::Avg(_) if self.sum.count == 0 => Value::Null,
            Aggregate::Avg(_) => {
                Number::Float(self.sum.total().as_f64() / self.sum.count as f64).to_json()
            }
        };
        stats.bytes_returned += v.to_string().len() as u64;
        v
    }
}

/// A sum of numbers (see [`Aggregate::Sum`]), exact whatever form a number was written in
/// (an index gives `2.0` back as `2`): integral values in `i128`, the fractional parts of
/// decimals (and decimals too large for `i128`) as non-overlapping partial sums (Shewchuk's
/// exact floating-point summation). The exact total is then an integer, told exactly, or else
/// rounded once to `f64`, so the answer does not depend on the order records come in either.
#[derive(Default)]
struct Sum {
    ints: i128,
    partials: Vec<f64>,
    count: u64,
}

/// Beyond this a decimal is summed as a partial (an integral one below it fits `i128`).
const INT_SUMMED: f64 = 1e30;

impl Sum {
    fn add(&mut self, n: Number) {
        self.count += 1;
        match n {
            Number::Int(i) => self.ints += i128::from(i),
            Number::UInt(u) => self.ints += i128::from(u),
            Number::Float(x) if x.abs() < INT_SUMMED => {
                // Both parts exact: the integral part of a decimal below 2^100 converts.
                let whole = x.trunc();
                self.ints += whole as i128;
                if x != whole {
                    self.add_float(x - whole);
                }
            }
            Number::Float(x) => self.add_float(x),
        }
    }

    /// Adds another sum's numbers.
    fn merge(&mut self, other: Sum) {
        self.count += other.count;
        self.ints += other.ints;
        for x in other.partials {
            self.add_float(x);
        }
    }

    /// Adds `x` to the partials exactly: each step keeps the rounding error of the last.
    fn add_float(&mut self, mut x: f64) {
        let mut kept = 0;
        for i in 0..self.partials.len() {
            let mut y = self.partials[i];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    fn total(&self) -> Number {
        let int = |i: i128| match (i64::try_from(i), u64::try_from(i)) {
            (Ok(i), _) => Number::Int(i),
            (_, Ok(u)) => Number::UInt(u),
            _ => Number::Float(i as f64),
        };
        if self.partials.is_empty() {
            return int(self.ints);
        }
        // The fractions may add up to an integer (0.5 + 0.5): then the total is one, exactly.
        let fractions = self.rounded();
        if fractions.fract() == 0.0 && fractions.abs() < INT_SUMMED {
            let mut rest = Sum {
                partials: self.partials.clone(),
                ..Sum::default()
            };
            rest.add_float(-fractions);
            if rest.partials.iter().all(|p| *p == 0.0) {
                return int(self.ints + fractions as i128);
            }
        }
        let mut all = Sum {
            partials: self.partials.clone(),
            ..Sum::default()
        };
        // The integers in as few exact f64 pieces as it takes (each piece is exact).
        let mut rest = self.ints;
        while rest != 0 {
            let piece = rest as f64;
            all.add_float(piece);
            rest -= piece as i128;
        }
        Number::Float(all.rounded())
    }

    /// The partials' exact sum, rounded once (half to even).
    fn rounded(&self) -> f64 {
        let p = &self.partials;
        let Some(mut n) = p.len().checked_sub(1) else {
            return 0.0;
        };
        let mut hi = p[n];
        let mut lo = 0.0;
        while n > 0 {
            n -= 1;
            let (x, y) = (hi, p[n]);
            hi = x + y;
            lo = y - (hi - x);
            if lo != 0.0 {
                break;
            }
        }
        // A half-way `lo` with more of the same sign below rounds away from `hi`.
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
        hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_sums_are_exact() {
        let mut s = Sum::default();
        s.add(Number::Int(9007199254740993));
        s.add(Number::Int(1));
        assert_eq!(s.total().to_json(), serde_json::json!(9007199254740994u64));
        let mut big = Sum::default();
        big.add(Number::UInt(u64::MAX));
        big.add(Number::Int(-1));
        assert_eq!(big.total().to_json(), serde_json::json!(u64::MAX - 1));
        big.add(Number::Int(2));
        // Past u64: the nearest f64.
        assert_eq!(
            big.total().to_json(),
            serde_json::json!(18446744073709551616.0)
        );
        let mut mixed = Sum::default();
        mixed.add(Number::Int(3));
        mixed.add(Number::Float(0.5));
        assert_eq!(mixed.total().to_json(), serde_json::json!(3.5));
        // Whatever the form: 2^53 + 0.5 + 0.5 + (2^53 + 1.0 written as a decimal: 2^53)
        // is the integer 2^54 + 1... as 2^53 + 1 + 0.5 + 0.5 + 2^53 is.
        let mut forms = Sum::default();
        for n in [
            Number::Int(9007199254740993),
            Number::Float(0.5),
            Number::Float(0.5),
            Number::Float(9007199254740992.0),
        ] {
            forms.add(n);
        }
        assert_eq!(
            forms.total().to_json(),
            serde_json::json!(18014398509481986u64)
        );
    }

    /// With decimals the sum is the exact one rounded once: the same in any order.
    #[test]
    fn decimal_sums_do_not_depend_on_order() {
        let xs = [
            Number::Float(9007199254740992.0),
            Number::Float(1.5),
            Number::Float(1.5),
            Number::Int(9007199254740993),
            Number::Float(-0.25),
            Number::Float(1e-300),
            Number::UInt(u64::MAX),
        ];
        let total = |order: &[usize]| {
            let mut s = Sum::default();
            for &i in order {
                s.add(xs[i]);
            }
            s.total().as_f64()
        };
        // Exact: 2^53 + 2^53 + 1 + 2.75 + 1e-300 + 2^64 - 1, rounded once.
        let want = ((1i128 << 54) + 1 + (u64::MAX as i128)) as f64 + 2.75;
        let a = total(&[0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(a, total(&[6, 5, 4, 3, 2, 1, 0]));
        assert_eq!(a, total(&[1, 0, 4, 2, 6, 3, 5]));
        assert_eq!(a, want);
        // 2^53 + 1.5 + 1.5 is 2^53 + 3 exactly: an integer, told exactly.
        let mut three = Sum::default();
        for i in [1, 0, 2] {
            three.add(xs[i]);
        }
        assert_eq!(
            three.total().to_json(),
            serde_json::json!(9007199254740995u64)
        );
        // 2^53 + 1.5 + 1.25 = 2^53 + 2.75 is not: rounded once, to 2^53 + 2 (f64s are 2
        // apart there); 2^53 + 1.5 rounded first would give 2^53 + 2 + 1.25, then + 4.
        let mut frac = Sum::default();
        for n in [xs[0], xs[1], Number::Float(1.25)] {
            frac.add(n);
        }
        assert_eq!(frac.total().as_f64(), 9007199254740994.0);
    }
}
