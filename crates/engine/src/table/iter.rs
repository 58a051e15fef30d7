//! A walk over one table's entries in order, block by block, reading ahead if asked.

use super::block::{Block, BlockIter};
use super::reader::TableReader;
use crate::error::{Error, Result};
use crate::key::cmp_ikey;
use crate::prefetch::{Pending, ReadPool};
use crate::stats::Counters;
use bytes::Bytes;
use std::sync::Arc;

/// How a scan reads tables.
#[derive(Clone)]
pub struct IterConfig {
    /// Index and data blocks read go into the block cache.
    pub fill_cache: bool,
    /// Read the next data block (and a level's next table) on this pool while the current
    /// one is walked.
    pub readahead: Option<Arc<ReadPool>>,
}

impl Default for IterConfig {
    fn default() -> Self {
        IterConfig {
            fill_cache: true,
            readahead: None,
        }
    }
}

/// The data block after the current one, being read on the pool.
struct BlockAhead {
    pool: Arc<ReadPool>,
    /// Its handle (as the index stores it) and its read.
    next: Option<(Vec<u8>, Pending<Result<Block>>)>,
}

/// Ordered walk over a table.
pub struct TableIter {
    table: Arc<TableReader>,
    index: BlockIter,
    data: Option<BlockIter>,
    counters: Arc<Counters>,
    fill_cache: bool,
    ahead: Option<Box<BlockAhead>>,
}

impl TableIter {
    /// Bytes of the blocks it holds (its index block and the data block it is in).
    pub fn buffer_bytes(&self) -> usize {
        self.index.block_bytes() + self.data.as_ref().map_or(0, BlockIter::block_bytes)
    }

    pub fn valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    /// Current key; only while `valid()`.
    pub fn key(&self) -> &[u8] {
        self.data.as_ref().map(|d| d.key()).unwrap_or_default()
    }

    pub fn value(&self) -> Bytes {
        self.data.as_ref().map(|d| d.value()).unwrap_or_default()
    }

    /// Current value, borrowed from its block; only while `valid()`.
    pub fn value_slice(&self) -> &[u8] {
        self.data
            .as_ref()
            .map(|d| d.value_slice())
            .unwrap_or_default()
    }

    pub fn seek_to_first(&mut self) -> Result<()> {
        self.index.seek_to_first();
        self.load_block(None, false)
    }

    /// [`TableIter::seek_to_first`] for a walk that came here from the table before it: with
    /// readahead, the walk is sequential, so the next block is read ahead at once.
    pub fn continue_from_start(&mut self) -> Result<()> {
        self.index.seek_to_first();
        self.load_block(None, true)
    }

    /// Positions at the first entry whose internal key is `>= target`: the index names the
    /// first block whose last key is `>= target`, and the block holds the entry.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.index.seek(target, cmp_ikey);
        self.load_block(Some(target), false)
    }

    pub fn advance(&mut self) -> Result<()> {
        if let Some(d) = &mut self.data {
            if d.advance() {
                return Ok(());
            }
            if d.corrupt() {
                return Err(self.corrupt());
            }
            self.index.advance();
            return self.load_block(None, true);
        }
        Ok(())
    }

    /// With readahead, starts reading the block after the one the index points at.
    fn read_next_ahead(&mut self) {
        let Some(a) = &mut self.ahead else {
            return;
        };
        let mut peek = self.index.clone();
        peek.advance();
        if !peek.valid() {
            a.next = None;
            return;
        }
        let handle = peek.value_slice().to_vec();
        let (table, c, h) = (self.table.clone(), self.counters.clone(), handle.clone());
        let fill = self.fill_cache;
        a.next = Some((
            handle,
            a.pool.submit(move || table.data_block(&h, &c, fill)),
        ));
    }

    fn corrupt(&self) -> Error {
        Error::corruption(self.table.name(), 0, "malformed block entry")
    }

    /// Loads the block the index points at, skipping empty ones, and positions at its first
    /// entry `>= target` (or its first entry). Should the block hold nothing `>= target`
    /// despite what the index says, the walk goes on with the next block. A `sequential`
    /// load (the walk crossed from the block before) starts reading the next block ahead,
    /// with readahead on; a seek does not, so short scans read nothing they do not use.
    fn load_block(&mut self, target: Option<&[u8]>, sequential: bool) -> Result<()> {
        loop {
            if !self.index.valid() {
                if self.index.corrupt() {
                    return Err(self.corrupt());
                }
                self.data = None;
                return Ok(());
            }
            let handle = self.index.value_slice();
            let early = match &mut self.ahead {
                Some(a) if a.next.as_ref().is_some_and(|(h, _)| h.as_slice() == handle) => {
                    a.next.take().map(|(_, rx)| rx)
                }
                _ => None,
            };
            let block = match early {
                Some(rx) => rx.wait().unwrap_or_else(|| {
                    Err(Error::Background("block prefetch reader stopped".into()))
                })?,
                None => self
                    .table
                    .data_block(handle, &self.counters, self.fill_cache)?,
            };
            if sequential {
                self.read_next_ahead();
            }
            let mut it = block.iter();
            match target {
                Some(t) => it.seek(t, cmp_ikey),
                None => it.seek_to_first(),
            }
            if it.corrupt() {
                return Err(self.corrupt());
            }
            if it.valid() {
                self.data = Some(it);
                return Ok(());
            }
            self.index.advance();
        }
    }
}

impl TableReader {
    /// Iterates all entries in order, counting reads in the table's own counters.
    pub fn iter(self: &Arc<Self>) -> Result<TableIter> {
        self.iter_counted(self.counters())
    }

    /// Iterates all entries in order, counting reads in `counters` (a namespace's, for
    /// reads made on its behalf). Unpositioned until `seek_to_first` or `seek`.
    pub fn iter_counted(self: &Arc<Self>, counters: Arc<Counters>) -> Result<TableIter> {
        self.iter_with(counters, &IterConfig::default())
    }

    /// [`TableReader::iter_counted`] as a scan asks for it (`config`).
    pub fn iter_with(
        self: &Arc<Self>,
        counters: Arc<Counters>,
        config: &IterConfig,
    ) -> Result<TableIter> {
        let index = self.index(&counters, config.fill_cache)?;
        Ok(TableIter {
            table: self.clone(),
            index: index.iter(),
            data: None,
            counters,
            fill_cache: config.fill_cache,
            ahead: config
                .readahead
                .clone()
                .map(|pool| Box::new(BlockAhead { pool, next: None })),
        })
    }
}
