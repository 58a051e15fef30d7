//! Scans: a device iterator read in batches, as a Rust iterator.

use crate::{BlockingClient, Result};
use bytes::Bytes;
use std::collections::VecDeque;

/// What a scan reads: where it starts and ends, whether values come along, and how much
/// each round trip brings.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// First key (empty: the first key of the namespace).
    pub start: Bytes,
    /// Keys at or above this are past the end.
    pub upper_bound: Option<Bytes>,
    /// Only keys that begin with this.
    pub prefix: Option<Bytes>,
    /// Keys with empty values; nothing is read from the device's value log.
    pub keys_only: bool,
    /// Most entries per round trip.
    pub batch_entries: u32,
    /// About this many bytes of keys and values per round trip (the device caps it at its
    /// `max_iter_batch_bytes`).
    pub batch_bytes: u32,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            start: Bytes::new(),
            upper_bound: None,
            prefix: None,
            keys_only: false,
            batch_entries: 1024,
            batch_bytes: 1 << 20,
        }
    }
}

/// The entries of a namespace at one snapshot, in key order, fetched a batch at a time.
/// Yields `Result<(key, value)>`; after an error it yields nothing more. Dropping it before
/// the end closes the device's iterator.
pub struct Scan {
    client: BlockingClient,
    nsid: u32,
    iter: u32,
    opts: ScanOptions,
    batch: VecDeque<(Bytes, Bytes)>,
    /// The device has nothing after `batch`.
    done: bool,
    failed: bool,
}

impl Scan {
    pub(crate) fn open(client: BlockingClient, nsid: u32, opts: ScanOptions) -> Result<Scan> {
        let iter = client.iter_open(nsid, &opts)?;
        Ok(Scan {
            client,
            nsid,
            iter,
            opts,
            batch: VecDeque::new(),
            done: false,
            failed: false,
        })
    }
}

impl Iterator for Scan {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.batch.is_empty() && !self.done {
            match self.client.iter_next(
                self.nsid,
                self.iter,
                self.opts.batch_entries,
                self.opts.batch_bytes,
            ) {
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
        let _ = self.client.iter_close(self.nsid, self.iter);
    }
}
