//! Merging of sorted sources of internal keys.

use crate::error::Result;
use crate::key::cmp_ikey;
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
}

/// The tables of one sorted level (non-overlapping, in key order) read one after another.
pub struct LevelSource {
    tables: Vec<Arc<TableHandle>>,
    next: usize,
    iter: Option<TableIter>,
}

impl LevelSource {
    pub fn new(tables: Vec<Arc<TableHandle>>) -> Result<LevelSource> {
        let mut s = LevelSource {
            tables,
            next: 0,
            iter: None,
        };
        s.open_next()?;
        Ok(s)
    }

    fn open_next(&mut self) -> Result<()> {
        while self.next < self.tables.len() {
            let t = &self.tables[self.next];
            self.next += 1;
            let mut it = t.reader()?.iter()?;
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
}
