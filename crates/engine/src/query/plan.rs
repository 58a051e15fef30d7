//! Choosing how a query reaches its records: through the most selective usable index, or by
//! scanning the namespace.

use super::filter::{Filter, KeyRange};
use crate::error::Result;
use crate::index::{AttrPath, IndexKind};
use crate::key::Nsid;

/// An index a query may read: ready, of the queried namespace.
#[derive(Clone, Debug)]
pub struct IndexChoice {
    pub id: Nsid,
    pub attr: AttrPath,
    pub kind: IndexKind,
}

/// How the records are reached.
#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    /// The entries of index `id` in `ranges` (disjoint, in key order), then each pk.
    Index {
        id: Nsid,
        attr: AttrPath,
        kind: IndexKind,
        ranges: Vec<KeyRange>,
    },
    /// Every record of the namespace.
    Scan,
}

/// A query's plan: how it reads, and why (for its statistics).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub access: Access,
    /// Index entries the estimate counted for the chosen index (capped).
    pub estimate: Option<u64>,
}

impl Plan {
    /// One line for the statistics: `index on ATTR` or `scan`.
    pub fn describe(&self) -> String {
        match &self.access {
            Access::Index { attr, kind, .. } => format!("{kind} index on {attr}"),
            Access::Scan => "scan (no usable index)".to_string(),
        }
    }
}

/// Picks, among the conditions of `filter` that an index in `indexes` can serve, the one whose
/// key ranges hold the fewest entries (`estimate` counts them, stopping at some cap), and reads
/// through it; with none, the plan scans. Equal estimates keep the filter's order.
pub fn plan(
    filter: &Filter,
    indexes: &[IndexChoice],
    estimate: &mut dyn FnMut(Nsid, &[KeyRange]) -> Result<u64>,
) -> Result<Plan> {
    let mut best: Option<(u64, Access)> = None;
    let mut seen: Vec<&AttrPath> = Vec::new();
    let mut usable = Vec::new();
    for (path, condition) in &filter.conditions {
        let Some(idx) = indexes.iter().find(|i| &i.attr == path) else {
            continue;
        };
        // The first condition on an attribute is the one its index serves, so a continuation
        // that names the index finds the same ranges again (`index_ranges`).
        if seen.contains(&path) {
            continue;
        }
        seen.push(path);
        usable.push((idx, condition));
    }
    // With one usable index there is nothing to compare: no entries are counted.
    let compare = usable.len() > 1;
    for (idx, condition) in usable {
        let ranges = condition.key_ranges();
        let n = if compare {
            estimate(idx.id, &ranges)?
        } else {
            0
        };
        if best.as_ref().is_none_or(|(b, _)| n < *b) {
            best = Some((
                n,
                Access::Index {
                    id: idx.id,
                    attr: idx.attr.clone(),
                    kind: idx.kind,
                    ranges,
                },
            ));
        }
    }
    Ok(match best {
        Some((n, access)) => Plan {
            access,
            estimate: compare.then_some(n),
        },
        None => Plan {
            access: Access::Scan,
            estimate: None,
        },
    })
}

/// The ranges of the index on `attr` a plan of `filter` reads: those of the first condition
/// on `attr`.
pub fn index_ranges(filter: &Filter, attr: &AttrPath) -> Option<Vec<KeyRange>> {
    filter.on(attr).next().map(|c| c.key_ranges())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_index_with_fewest_entries_and_scans_without_one() {
        let f = Filter::parse_str(r#"{"a": 1, "b": {"$gt": 2}, "c": "x"}"#).unwrap();
        let idx = |id, a: &str| IndexChoice {
            id,
            attr: AttrPath::parse(a).unwrap(),
            kind: IndexKind::Classic,
        };
        let indexes = [idx(10, "a"), idx(11, "b")];
        let mut counts = |id: Nsid, _: &[KeyRange]| Ok(if id == 10 { 500 } else { 7 });
        let p = plan(&f, &indexes, &mut counts).unwrap();
        assert!(matches!(p.access, Access::Index { id: 11, .. }), "{p:?}");
        assert_eq!(p.estimate, Some(7));
        let p = plan(&f, &[idx(12, "zzz")], &mut counts).unwrap();
        assert_eq!(p.access, Access::Scan);
        let empty = Filter::default();
        assert_eq!(
            plan(&empty, &indexes, &mut counts).unwrap().access,
            Access::Scan
        );
    }
}
