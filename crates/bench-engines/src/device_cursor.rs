//! seekrandom's cursor over the device: the iterator commands 0xC6-0xC8 (`docs/protocol.md`).
//!
//! `seek` opens a device iterator at the key (Iterator open takes the device's snapshot there),
//! `next` hands out the entries of batches fetched with Iterator next, and the next `seek` or
//! the drop closes it (Iterator close). The device keeps an iterator open after it said `done`
//! until it is closed (or sits idle for `iterator_idle_secs`), and a connection may hold only
//! `max_iterators` (16 by default), so the cursor always closes what it opened.
//!
//! The device chooses the iterator's read options itself: Iterator open carries no prefetch
//! degree and no index prefetch, so `CursorOptions::prefetch_degree` and `index_prefetch` are
//! not used here. The device reads values ahead by its `iterator_prefetch_degree` (a device
//! that `--device local` starts gets seekrandom's `--prefetch-degree`, see `device.rs`).

use crate::db::{BenchCursor, CursorOptions};
use crate::error::{Doing, EngineError, Result};
use crate::op::Op;
use bytes::Bytes;
use cerberus_host::{BlockingNamespace, ScanOptions};
use std::collections::VecDeque;

/// Entries one Iterator next asks for when the caller's scan length is not known, or once the
/// caller reads past it.
pub const DEFAULT_BATCH_ENTRIES: u32 = 128;
/// The most entries one Iterator next asks for.
pub const MAX_BATCH_ENTRIES: u32 = 4096;
/// Key and value bytes one Iterator next asks for (the device caps it at its
/// `max_iter_batch_bytes`, 1 MiB by default; one entry always comes, whatever its size).
pub const BATCH_BYTES: u32 = 1 << 20;

/// A device iterator of one namespace, reopened at every seek.
pub struct DeviceCursor {
    ns: BlockingNamespace,
    keys_only: bool,
    /// Entries the caller reads after a seek (0: not known).
    scan_length: usize,
    /// The open device iterator.
    iter: Option<u32>,
    /// The device said nothing follows the entries already fetched.
    done: bool,
    /// Entries fetched since the seek.
    fetched: usize,
    batch: VecDeque<(Bytes, Bytes)>,
    /// The entry `next` returned last.
    current: Option<(Bytes, Bytes)>,
}

impl DeviceCursor {
    pub fn new(ns: BlockingNamespace, opts: &CursorOptions) -> DeviceCursor {
        DeviceCursor {
            ns,
            keys_only: opts.keys_only,
            scan_length: opts.scan_length,
            iter: None,
            done: false,
            fetched: 0,
            batch: VecDeque::new(),
            current: None,
        }
    }

    /// Entries the next Iterator next asks for: what remains of the scan length, at once.
    fn batch_entries(&self) -> u32 {
        batch_entries(self.scan_length, self.fetched)
    }

    fn close(&mut self) -> Result<()> {
        match self.iter.take() {
            Some(id) => self.ns.iter_close(id).doing(Op::CloseIterator { id }),
            None => Ok(()),
        }
    }

    fn open(&mut self, start: &[u8]) -> Result<()> {
        self.close()?;
        self.batch.clear();
        self.current = None;
        self.done = false;
        self.fetched = 0;
        let opts = ScanOptions {
            start: Bytes::copy_from_slice(start),
            keys_only: self.keys_only,
            ..ScanOptions::default()
        };
        self.iter = Some(self.ns.iter_open(&opts).doing(Op::OpenIterator)?);
        Ok(())
    }
}

/// Entries to ask for after `fetched` of a scan of `scan_length` (0: not known).
pub fn batch_entries(scan_length: usize, fetched: usize) -> u32 {
    if scan_length > fetched {
        u32::try_from(scan_length - fetched)
            .unwrap_or(u32::MAX)
            .min(MAX_BATCH_ENTRIES)
    } else {
        DEFAULT_BATCH_ENTRIES
    }
}

impl BenchCursor for DeviceCursor {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.open(key)
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.iter.is_none() && !self.done {
            // Not positioned yet: from the first key, as the engine's iterator.
            self.open(b"")?;
        }
        if self.batch.is_empty() && !self.done {
            let id = self.iter.ok_or(EngineError::CursorNotOpen)?;
            let (entries, done) = self
                .ns
                .iter_next(id, self.batch_entries(), BATCH_BYTES)
                .doing(Op::ReadIterator { id })?;
            self.fetched += entries.len();
            self.batch.extend(entries);
            self.done = done;
        }
        self.current = self.batch.pop_front();
        Ok(self.current.as_ref().map(|(k, v)| (&k[..], &v[..])))
    }
}

impl Drop for DeviceCursor {
    fn drop(&mut self) {
        // Best effort: the device closes it anyway once it sits idle, or with the connection.
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_the_scan_length() {
        assert_eq!(batch_entries(0, 0), DEFAULT_BATCH_ENTRIES);
        assert_eq!(batch_entries(100, 0), 100);
        assert_eq!(batch_entries(100, 40), 60);
        assert_eq!(batch_entries(100, 100), DEFAULT_BATCH_ENTRIES);
        assert_eq!(batch_entries(1, 0), 1);
        assert_eq!(batch_entries(1_000_000, 0), MAX_BATCH_ENTRIES);
    }
}
