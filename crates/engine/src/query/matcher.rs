//! The check of a query's candidates against its filter: a record read whole
//! ([`Checker`], one pass over the document for the filter's attributes and those wanted),
//! the record an index entry names ([`RecordMatcher`]), or the entry alone where its
//! secondary key decides the filter ([`EntryMatcher`]).

use super::doc::Doc;
use super::filter::Filter;
use super::records::{Entry, Records};
use super::stats::QueryStats;
use crate::error::{Error, Result};
use crate::index::{AttrPath, AttrValue, PathSet, Scalar};

/// What each match of a walk carries besides its pk and position.
#[derive(Clone, Copy, Default)]
pub struct Wants<'a> {
    /// The record itself ([`Match::doc`]): read even where the index entry decides the filter.
    pub record: bool,
    /// Attributes whose values each match carries ([`Match::attrs`]), taken in the pass over
    /// the record that checks the filter, or from the index entry's secondary key for the
    /// attribute of the index read.
    pub attrs: &'a [&'a AttrPath],
}

/// A record that met the filter.
pub struct Match<'a> {
    /// Where the query resumes after this record: its index entry key, or its pk.
    pub position: &'a [u8],
    /// The record's key.
    pub pk: &'a [u8],
    /// The record, if it was read: always when [`Wants::record`]; `None` when its index entry
    /// answered for it.
    pub doc: Option<&'a Doc>,
    /// What the record holds at each of [`Wants::attrs`] (`None`: missing).
    pub attrs: &'a [Option<AttrValue>],
}

/// The scalar of an attribute's value, if it is one.
fn scalar_at(a: &Option<AttrValue>) -> Option<&Scalar> {
    a.as_ref().and_then(AttrValue::scalar)
}

/// The one pass over a record that checks the filter and takes the attributes wanted.
pub(super) struct Checker<'a> {
    filter: &'a Filter,
    /// The filter's attributes, the index's (if read through one), then those wanted.
    paths: PathSet,
    /// The attributes wanted alone (a record an exact index range gives is not checked).
    wanted: PathSet,
}

impl<'a> Checker<'a> {
    pub(super) fn new(filter: &'a Filter, index: Option<&'a AttrPath>, wants: &Wants<'a>) -> Self {
        let mut paths: Vec<&AttrPath> = filter.conditions.iter().map(|(p, _)| p).collect();
        paths.extend(index);
        paths.extend_from_slice(wants.attrs);
        Checker {
            filter,
            paths: PathSet::new(&paths),
            wanted: PathSet::new(wants.attrs),
        }
    }

    /// If the record meets the filter (and, from an index entry, still has the entry's
    /// secondary key `sk`), what it holds at the attributes wanted.
    pub(super) fn check(
        &self,
        stats: &mut QueryStats,
        doc: &Doc,
        sk: Option<&[u8]>,
    ) -> Option<Vec<Option<AttrValue>>> {
        stats.records_examined += 1;
        let conditions = &self.filter.conditions;
        let mut found = match doc.attrs(&self.paths) {
            Some(found) => found,
            // Not JSON: `{}` matches it all the same (every record); it holds nothing at
            // any attribute.
            None if conditions.is_empty() => return Some(vec![None; self.wanted.len()]),
            None => return None,
        };
        let meets = conditions
            .iter()
            .zip(&found)
            .all(|((_, c), a)| scalar_at(a).is_some_and(|s| c.holds(s)));
        let same_sk = sk.is_none_or(|sk| {
            scalar_at(&found[conditions.len()]).is_some_and(|s| s.encoded() == sk)
        });
        (meets && same_sk).then(|| found.split_off(found.len() - self.wanted.len()))
    }

    /// What a record holds at the attributes wanted, unchecked.
    pub(super) fn wanted(&self, doc: &Doc) -> Vec<Option<AttrValue>> {
        match self.wanted.is_empty() {
            true => Vec::new(),
            false => doc
                .attrs(&self.wanted)
                .unwrap_or_else(|| vec![None; self.wanted.len()]),
        }
    }
}

/// The check of the record an index entry names against the whole filter.
pub(super) struct RecordMatcher<'a> {
    checker: Checker<'a>,
    /// An index range read for the filter's only condition holds exactly the records
    /// meeting it (and live entries are exact): nothing to check.
    exact: bool,
}

impl<'a> RecordMatcher<'a> {
    /// For a walk of the index on `attr`.
    pub(super) fn new(filter: &'a Filter, attr: &'a AttrPath, wants: &Wants<'a>) -> Self {
        RecordMatcher {
            checker: Checker::new(filter, Some(attr), wants),
            exact: filter.conditions.len() == 1 && filter.conditions[0].0 == *attr,
        }
    }

    /// Reads the record of live entry `e` and calls `f` if it meets the filter: what `f`
    /// says (false stops the walk), else true.
    pub(super) fn visit(
        &self,
        records: &mut dyn Records,
        e: Entry<'_>,
        stats: &mut QueryStats,
        f: &mut dyn FnMut(Match<'_>) -> Result<bool>,
    ) -> Result<bool> {
        let value = match e.addr {
            Some(addr) => Some(records.read_at(e.pk, addr, stats)?),
            None => records.get(e.pk, stats)?,
        };
        let Some(value) = value else {
            return Ok(true);
        };
        let doc = Doc::new(value);
        let attrs = if self.exact {
            self.checker.wanted(&doc)
        } else {
            // A live entry's record has its secondary key; checked anyway while the
            // document is read: a record must never come twice (old and new key).
            match self.checker.check(stats, &doc, Some(e.sk)) {
                Some(attrs) => attrs,
                None => return Ok(true),
            }
        };
        stats.records_matched += 1;
        f(Match {
            position: e.key,
            pk: e.pk,
            doc: Some(&doc),
            attrs: &attrs,
        })
    }
}

/// The check of an index entry against the whole filter where the entries decide it
/// ([`index_decides`]): conditions after the first on the index's attribute, and the
/// attributes wanted, read off the secondary key.
pub(super) struct EntryMatcher<'a> {
    filter: &'a Filter,
    /// More conditions than the one the ranges hold exactly.
    check: bool,
    wanted: usize,
    attrs: Vec<Option<AttrValue>>,
}

impl<'a> EntryMatcher<'a> {
    pub(super) fn new(filter: &'a Filter, wants: &Wants<'_>) -> Self {
        EntryMatcher {
            filter,
            check: filter.conditions.len() > 1,
            wanted: wants.attrs.len(),
            attrs: Vec::new(),
        }
    }

    /// Calls `f` with the live entry `key` (secondary key `sk`, for `pk`) if it meets the
    /// filter: what `f` says (false stops the walk), else true.
    pub(super) fn visit(
        &mut self,
        key: &[u8],
        sk: &[u8],
        pk: &[u8],
        stats: &mut QueryStats,
        f: &mut dyn FnMut(Match<'_>) -> Result<bool>,
    ) -> Result<bool> {
        if self.check || self.wanted > 0 {
            let (sk, _) = Scalar::decode(sk).ok_or_else(|| {
                Error::corruption("index", 0, "malformed secondary key in an index entry")
            })?;
            if self.check {
                stats.records_examined += 1;
                if !self.filter.conditions.iter().all(|(_, c)| c.holds(&sk)) {
                    return Ok(true);
                }
            }
            self.attrs.clear();
            self.attrs.resize(self.wanted, Some(AttrValue::Scalar(sk)));
        }
        stats.records_matched += 1;
        f(Match {
            position: key,
            pk,
            doc: None,
            attrs: &self.attrs,
        })
    }
}
