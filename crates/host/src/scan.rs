//! Scans: a device iterator read in batches, as a Rust iterator.

use crate::blocking_namespace::BlockingNamespace;
use crate::error::Result;
use crate::scan_options::ScanOptions;
use bytes::Bytes;
use std::collections::VecDeque;

/// The entries of a namespace at one snapshot, in key order, fetched a batch at a time.
/// Yields `Result<(key, value)>`; after an error it yields nothing more. Dropping it before
/// the end closes the device's iterator.
pub struct Scan {
    ns: BlockingNamespace,
    iter: u32,
    opts: ScanOptions,
    batch: VecDeque<(Bytes, Bytes)>,
    /// The device has nothing after `batch`.
    done: bool,
    failed: bool,
}

impl Scan {
    pub(crate) fn open(ns: BlockingNamespace, opts: ScanOptions) -> Result<Scan> {
        let iter = ns.iter_open(&opts)?;
        Ok(Scan {
            ns,
            iter,
            opts,
            batch: VecDeque::new(),
            done: false,
            failed: false,
        })
    }
}

impl BlockingNamespace {
    /// Every entry of the namespace within `opts`, at one snapshot, in key order, fetched in
    /// batches over one device iterator (the engine's `iter`).
    pub fn scan(&self, opts: ScanOptions) -> Result<Scan> {
        Scan::open(self.clone(), opts)
    }
}

impl Iterator for Scan {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.batch.is_empty() && !self.done {
            match self
                .ns
                .iter_next(self.iter, self.opts.batch_entries, self.opts.batch_bytes)
            {
                Ok((entries, done)) => {
                    self.batch.extend(entries);
                    self.done = done;
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        self.batch.pop_front().map(Ok)
    }
}

impl Drop for Scan {
    fn drop(&mut self) {
        // The device keeps an iterator open after its last batch too: close it whether or
        // not the scan got to the end, or it holds a snapshot and a slot until it sits idle.
        // Best effort: the device closes it anyway once it sits idle.
        let _ = self.ns.iter_close(self.iter);
    }
}
