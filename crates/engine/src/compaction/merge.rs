//! Merging of sorted sources of internal keys.

use crate::error::Result;
use crate::key::{cmp_ikey, ikey_nsid, IndexValue, Nsid};
use crate::prefetch::Pending;
use crate::stats::Counters;
use crate::table::{IterConfig, TableIter};
use crate::version::{TableHandle, Version};
use bytes::Bytes;
use std::cmp::Ordering;
use std::sync::Arc;

/// A sorted stream of `(internal key, index value)`.
pub trait Source: Send {
    fn valid(&self) -> bool;
    fn key(&self) -> &[u8];
    fn value(&self) -> Bytes;
    /// The value decoded; a source that holds entries decoded already (a memtable) hands
    /// them out without encoding them first.
    fn index_value(&self) -> Option<IndexValue> {
        IndexValue::decode(&self.value())
    }
    /// A secondary index entry's payload (an [`IndexValue::Table`]) borrowed from the source:
    /// an index walk copies it out with no shared-buffer clone and drop per entry. `None`:
    /// not such a value.
    fn table_payload(&self) -> Option<&[u8]>;
    fn advance(&mut self) -> Result<()>;
    /// Positions at the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Bytes it holds, for memory reports: `(its own state, its cursors on blocks and the
    /// blocks or entries they hold)`.
    fn memory(&self) -> (usize, usize);
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
    fn table_payload(&self) -> Option<&[u8]> {
        IndexValue::table_payload(self.value_slice())
    }
    fn advance(&mut self) -> Result<()> {
        TableIter::advance(self)
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        TableIter::seek(self, target)
    }
    fn memory(&self) -> (usize, usize) {
        // A table iterator is a cursor on its index and data blocks: all of it is buffer.
        (0, std::mem::size_of::<TableIter>() + self.buffer_bytes())
    }
}

/// The tables a [`LevelSource`] walks: its own list (a compaction's inputs), or a range of
/// one level of a version that every reader of that version shares, so an open iterator holds
/// no copy of the table list however many tables the level has.
enum Tables {
    Owned(Vec<Arc<TableHandle>>),
    InVersion {
        version: Arc<Version>,
        level: usize,
        range: std::ops::Range<usize>,
    },
}

impl Tables {
    fn get(&self) -> &[Arc<TableHandle>] {
        match self {
            Tables::Owned(v) => v,
            Tables::InVersion {
                version,
                level,
                range,
            } => &version.levels[*level][range.clone()],
        }
    }
}

/// The tables of one sorted level (non-overlapping, in key order) read one after another.
pub struct LevelSource {
    tables: Tables,
    next: usize,
    iter: Option<TableIter>,
    /// Where table reads are counted; `None` = each table's own counters.
    counters: Option<Arc<Counters>>,
    config: IterConfig,
    /// With readahead: table `next`, opened and positioned at its start on the pool.
    next_table: Option<(usize, Pending<Result<TableIter>>)>,
}

/// Opens `t` for a walk from its start, its reads counted in `counters` (`None`: the
/// table's own).
fn open_table(
    t: &TableHandle,
    counters: Option<&Arc<Counters>>,
    config: &IterConfig,
) -> Result<TableIter> {
    let r = t.reader()?;
    let c = counters.cloned().unwrap_or_else(|| r.counters());
    r.iter_with(c, config)
}

impl LevelSource {
    /// Positioned at the first entry of the first table.
    pub fn new(tables: Vec<Arc<TableHandle>>) -> Result<LevelSource> {
        let mut s = LevelSource {
            tables: Tables::Owned(tables),
            next: 0,
            iter: None,
            counters: None,
            // A compaction reads every block once: none of them goes into the cache.
            config: IterConfig {
                fill_cache: false,
                readahead: None,
            },
            next_table: None,
        };
        s.open_next(false)?;
        Ok(s)
    }

    /// The tables of `level` (1 and deeper) of `version` that may hold namespace `ns`,
    /// unpositioned until `seek`, read as `config` says; reads are counted in `counters`.
    /// `None` if there are none.
    pub fn for_namespace(
        version: &Arc<Version>,
        level: usize,
        ns: Nsid,
        counters: Arc<Counters>,
        config: &IterConfig,
    ) -> Option<LevelSource> {
        let all = &version.levels[level];
        // Levels are sorted and namespaces contiguous in key order: one range holds them.
        let lo = all.partition_point(|t| ikey_nsid(&t.props.largest) < ns);
        let hi = lo + all[lo..].partition_point(|t| ikey_nsid(&t.props.smallest) <= ns);
        (lo < hi).then(|| LevelSource {
            next: hi - lo,
            tables: Tables::InVersion {
                version: version.clone(),
                level,
                range: lo..hi,
            },
            iter: None,
            counters: Some(counters),
            config: config.clone(),
            next_table: None,
        })
    }

    /// Bytes of the table iterator open now (its blocks), for memory reports.
    pub fn buffer_bytes(&self) -> usize {
        self.iter.as_ref().map_or(0, TableIter::buffer_bytes)
    }

    fn open(&self, t: &TableHandle) -> Result<TableIter> {
        open_table(t, self.counters.as_ref(), &self.config)
    }

    /// With readahead, starts opening table `next` on the pool (its first block read, and
    /// its second being read, as a sequential walk will want them).
    fn read_table_ahead(&mut self) {
        let Some(pool) = &self.config.readahead else {
            return;
        };
        let Some(t) = self.tables.get().get(self.next).cloned() else {
            self.next_table = None;
            return;
        };
        let (counters, config) = (self.counters.clone(), self.config.clone());
        let rx = pool.submit(move || {
            let mut it = open_table(&t, counters.as_ref(), &config)?;
            it.continue_from_start()?;
            Ok(it)
        });
        self.next_table = Some((self.next, rx));
    }

    /// Moves to the first entry of the next non-empty table. `sequential`: the walk came
    /// from the table before (not from a seek), so with readahead the table after it is
    /// opened ahead.
    fn open_next(&mut self, sequential: bool) -> Result<()> {
        while self.next < self.tables.get().len() {
            let i = self.next;
            self.next += 1;
            let early = match self.next_table.take() {
                Some((n, rx)) if n == i => Some(rx),
                _ => None,
            };
            let it = match early {
                Some(rx) => rx.wait().unwrap_or_else(|| {
                    Err(crate::error::Error::Background(
                        "table prefetch reader stopped".into(),
                    ))
                })?,
                None => {
                    let t = self.tables.get()[i].clone();
                    let mut it = self.open(&t)?;
                    if sequential {
                        it.continue_from_start()?;
                    } else {
                        it.seek_to_first()?;
                    }
                    it
                }
            };
            if sequential {
                self.read_table_ahead();
            }
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
    fn table_payload(&self) -> Option<&[u8]> {
        self.iter.as_ref().and_then(Source::table_payload)
    }
    fn advance(&mut self) -> Result<()> {
        if let Some(it) = &mut self.iter {
            it.advance()?;
            if !it.valid() {
                self.open_next(true)?;
            }
        }
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        // Only the first table whose largest key is `>= target` can hold the answer; should
        // it hold nothing `>= target`, the answer is the next table's first entry.
        let tables = self.tables.get();
        let i = tables.partition_point(|t| cmp_ikey(&t.props.largest, target) == Ordering::Less);
        self.iter = None;
        self.next = i + 1;
        let Some(t) = tables.get(i).cloned() else {
            self.next = tables.len();
            return Ok(());
        };
        let mut it = self.open(&t)?;
        it.seek(target)?;
        if it.valid() {
            self.iter = Some(it);
            return Ok(());
        }
        self.open_next(false)
    }
    fn memory(&self) -> (usize, usize) {
        let cursor = std::mem::size_of::<Option<TableIter>>();
        let own = std::mem::size_of::<LevelSource>() - cursor;
        (own, cursor + self.buffer_bytes())
    }
}

/// Yields the entries of all sources in internal-key order. Sources are few (L0 tables plus
/// one per sorted level), so a linear scan for the minimum beats a heap.
pub struct MergingIter {
    sources: Vec<Box<dyn Source>>,
    current: Option<usize>,
    /// The source with the smallest key after the current one's, as of the last full pick:
    /// the others do not move while the current one advances, so as long as it stays below
    /// this one an advance takes one comparison, not one per source (a walk over a range
    /// that one level holds, the usual case, compares no other source).
    runner_up: Option<usize>,
}

impl MergingIter {
    pub fn new(sources: Vec<Box<dyn Source>>) -> Self {
        let mut m = MergingIter {
            sources,
            current: None,
            runner_up: None,
        };
        m.pick();
        m
    }

    /// The smallest source (the first of equals) and the runner-up.
    fn pick(&mut self) {
        let (mut best, mut second): (Option<usize>, Option<usize>) = (None, None);
        let before = |a: usize, b: &dyn Source| cmp_ikey(self.sources[a].key(), b.key());
        for (i, s) in self.sources.iter().enumerate() {
            if !s.valid() {
                continue;
            }
            match best {
                Some(b) if before(b, s.as_ref()) != Ordering::Greater => {
                    if second.is_none_or(|r| before(r, s.as_ref()) == Ordering::Greater) {
                        second = Some(i);
                    }
                }
                // The old best is no greater than any other seen: the new runner-up.
                _ => (best, second) = (Some(i), best),
            }
        }
        (self.current, self.runner_up) = (best, second);
    }

    pub fn valid(&self) -> bool {
        self.current.is_some()
    }

    /// The bytes its sources hold: their own state, and the blocks or entries they buffer.
    pub fn memory(&self) -> (usize, usize) {
        let vec = self.sources.capacity() * std::mem::size_of::<Box<dyn Source>>();
        self.sources
            .iter()
            .map(|s| s.memory())
            .fold((vec, 0), |(a, b), (own, buf)| (a + own, b + buf))
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

    /// The current entry's value decoded; `None` when not valid or malformed.
    pub fn index_value(&self) -> Option<IndexValue> {
        self.current.and_then(|i| self.sources[i].index_value())
    }

    /// The current entry's [`Source::table_payload`].
    pub fn table_payload(&self) -> Option<&[u8]> {
        self.current.and_then(|i| self.sources[i].table_payload())
    }

    pub fn advance(&mut self) -> Result<()> {
        if let Some(i) = self.current {
            self.sources[i].advance()?;
            let source = &self.sources[i];
            // Still strictly below the runner-up: still the smallest (on a tie the full pick
            // decides, as it would have).
            let stays = source.valid()
                && self.runner_up.is_none_or(|r| {
                    cmp_ikey(source.key(), self.sources[r].key()) == Ordering::Less
                });
            if !stays {
                self.pick();
            }
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
