//! Merging of sorted sources of internal keys.

use crate::error::Result;
use crate::key::cmp_ikey;
use crate::stats::Counters;
use crate::table::TableIter;
use crate::version::TableHandle;
use bytes::Bytes;
use std::cmp::Ordering;
use std::sync::Arc;

/// A sorted stream of `(internal key, index value)`.
pub trait Source: Send {
    fn valid(&self) -> bool;
    fn key(&self) -> &[u8];
    fn value(&self) -> Bytes;
    fn advance(&mut self) -> Result<()>;
    /// Positions at the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]) -> Result<()>;
}

impl Source for TableIter {
    fn valid(&self) -> bool {
        TableIter::valid(self)
    }
    fn key(&self) -> &[u8] {
        TableIter::key(self)
    }
    fn value(&self) -> Bytes {
        TableIter::value(self)
    }
    fn advance(&mut self) -> Result<()> {
        TableIter::advance(self)
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        TableIter::seek(self, target)
    }
}

/// The tables of one sorted level (non-overlapping, in key order) read one after another.
pub struct LevelSource {
    tables: Vec<Arc<TableHandle>>,
    next: usize,
    iter: Option<TableIter>,
    /// Where table reads are counted; `None` = each table's own counters.
    counters: Option<Arc<Counters>>,
}

impl LevelSource {
    /// Positioned at the first entry of the first table.
    pub fn new(tables: Vec<Arc<TableHandle>>) -> Result<LevelSource> {
        let mut s = LevelSource {
            tables,
            next: 0,
            iter: None,
            counters: None,
        };
        s.open_next()?;
        Ok(s)
    }

    /// Unpositioned (no table opened yet) until `seek`; reads are counted in `counters`.
    pub fn for_seek(tables: Vec<Arc<TableHandle>>, counters: Arc<Counters>) -> LevelSource {
        LevelSource {
            next: tables.len(),
            tables,
            iter: None,
            counters: Some(counters),
        }
    }

    fn open(&self, t: &TableHandle) -> Result<TableIter> {
        let r = t.reader()?;
        match &self.counters {
            Some(c) => r.iter_counted(c.clone()),
            None => r.iter(),
        }
    }

    fn open_next(&mut self) -> Result<()> {
        while self.next < self.tables.len() {
            let t = &self.tables[self.next];
            self.next += 1;
            let mut it = self.open(t)?;
            it.seek_to_first()?;
            if it.valid() {
                self.iter = Some(it);
                return Ok(());
            }
        }
        self.iter = None;
        Ok(())
    }
}

impl Source for LevelSource {
    fn valid(&self) -> bool {
        self.iter.as_ref().is_some_and(|i| i.valid())
    }
    fn key(&self) -> &[u8] {
        self.iter.as_ref().map(|i| i.key()).unwrap_or_default()
    }
    fn value(&self) -> Bytes {
        self.iter.as_ref().map(|i| i.value()).unwrap_or_default()
    }
    fn advance(&mut self) -> Result<()> {
        if let Some(it) = &mut self.iter {
            it.advance()?;
            if !it.valid() {
                self.open_next()?;
            }
        }
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        // Only the first table whose largest key is `>= target` can hold the answer; should
        // it hold nothing `>= target`, the answer is the next table's first entry.
        let i = self
            .tables
            .partition_point(|t| cmp_ikey(&t.props.largest, target) == Ordering::Less);
        self.iter = None;
        self.next = i + 1;
        let Some(t) = self.tables.get(i) else {
            self.next = self.tables.len();
            return Ok(());
        };
        let mut it = self.open(t)?;
        it.seek(target)?;
        if it.valid() {
            self.iter = Some(it);
            return Ok(());
        }
        self.open_next()
    }
}

/// Yields the entries of all sources in internal-key order. Sources are few (L0 tables plus
/// one per sorted level), so a linear scan for the minimum beats a heap.
pub struct MergingIter {
    sources: Vec<Box<dyn Source>>,
    current: Option<usize>,
}

impl MergingIter {
    pub fn new(sources: Vec<Box<dyn Source>>) -> Self {
        let mut m = MergingIter {
            sources,
            current: None,
        };
        m.pick();
        m
    }

    fn pick(&mut self) {
        let mut best: Option<usize> = None;
        for (i, s) in self.sources.iter().enumerate() {
            if !s.valid() {
                continue;
            }
            best = match best {
                Some(b) if cmp_ikey(self.sources[b].key(), s.key()) != Ordering::Greater => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }

    pub fn valid(&self) -> bool {
        self.current.is_some()
    }

    pub fn key(&self) -> &[u8] {
        self.current
            .map(|i| self.sources[i].key())
            .unwrap_or_default()
    }

    pub fn value(&self) -> Bytes {
        self.current
            .map(|i| self.sources[i].value())
            .unwrap_or_default()
    }

    pub fn advance(&mut self) -> Result<()> {
        if let Some(i) = self.current {
            self.sources[i].advance()?;
            self.pick();
        }
        Ok(())
    }

    /// Positions every source at its first entry `>= target`, so the merge continues from
    /// the smallest of them.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        for s in &mut self.sources {
            s.seek(target)?;
        }
        self.pick();
        Ok(())
    }
}
