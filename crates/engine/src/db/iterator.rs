//! Iterators over one namespace at a snapshot (IterKVSSD's Seek/Next): keys in byte order
//! with their values, bounded by an upper bound or a prefix, with value prefetch.
//!
//! An iterator merges the memtables and the tables of the super version it was opened on;
//! the table lists are the version's own (shared by every reader of it), so an open iterator
//! holds its sources' positions and blocks, not a copy of the tree. Values that sit in the
//! value log are read when their key is yielded, or ahead of it with `prefetch_degree > 0`:
//! the next D value reads are issued to a small pool of reader threads and overlap.
//!
//! An open iterator pins the value log only while it reads a value, not for its whole life:
//! a pin keeps every segment retired since it was taken, of every namespace, so an iterator
//! kept open by a `next` now and then would hold back all tenants' collected segments. Its
//! values are safe without one: value-log GC leaves every segment holding a record its
//! snapshot reads (of its own namespace, destroyed or not) until the snapshot goes.

use super::namespaces::NsEntry;
use super::snapshot::Snapshot;
use super::Inner;
use crate::error::{Error, Result};
use crate::iter::SnapshotScan;
use crate::key::{self, IndexValue, Kind};
use crate::prefetch::{Pending, ReadPool};
use crate::stats::Counters;
use crate::table::IterConfig;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A value on its way to the caller.
enum Fetch {
    Ready(Bytes),
    /// Not asked for yet: read when its key is yielded.
    Later(key::ValueAddr),
    /// Being read on the pool.
    Pending(Pending<Result<Bytes>>),
}

impl Fetch {
    /// Bytes held for this value now.
    fn bytes(&self) -> usize {
        match self {
            Fetch::Ready(v) => v.len(),
            Fetch::Later(_) | Fetch::Pending(_) => 0,
        }
    }
}

/// How an iterator reads. `ReadOptions::default()`: whole namespace, keys and values,
/// values prefetched [`DEFAULT_PREFETCH_DEGREE`] ahead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Keys at or above this one are past the end.
    pub upper_bound: Option<Vec<u8>>,
    /// Only keys that start with these bytes; the iterator starts at the first of them.
    pub prefix: Option<Vec<u8>>,
    /// Yield empty values and read nothing from the value log.
    pub keys_only: bool,
    /// Value-log reads issued ahead of the caller: the values of the next `prefetch_degree`
    /// entries are read while the caller handles this one (0 = each value is read when its
    /// key is yielded).
    pub prefetch_degree: usize,
    /// Index prefetch: the next data block of each table, and the next table of each level,
    /// are read while the current ones are walked.
    pub index_prefetch: bool,
    /// Index blocks the iterator reads go into the block cache (off: a one-off scan does
    /// not push out what point lookups use).
    pub fill_cache: bool,
}

/// Value reads in flight ahead of an iterator by default.
pub const DEFAULT_PREFETCH_DEGREE: usize = 0;

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            upper_bound: None,
            prefix: None,
            keys_only: false,
            prefetch_degree: DEFAULT_PREFETCH_DEGREE,
            index_prefetch: true,
            fill_cache: true,
        }
    }
}

/// What an open iterator holds, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IterMemory {
    /// Its own state and its sources' (positions, keys), beyond the blocks and entries.
    pub state: usize,
    /// Blocks and memtable entries its sources hold, and values read ahead.
    pub buffers: usize,
}

/// One entry read from the merge, its value on the way.
struct Ahead {
    key: Bytes,
    value: Fetch,
}

/// Keys and values of one namespace at one snapshot, in byte order. Yields
/// `Result<(key, value)>`; after an error it yields nothing more.
pub struct Iter {
    inner: Arc<Inner>,
    entry: Arc<NsEntry>,
    snapshot: Snapshot,
    scan: SnapshotScan,
    opts: ReadOptions,
    /// Entries taken from the merge, oldest first, values read or being read.
    ahead: VecDeque<Ahead>,
    /// The merge has nothing more within bounds.
    exhausted: bool,
    /// Not positioned yet: the first item seeks to the start (so a caller that seeks right
    /// after opening reads nothing twice).
    unpositioned: bool,
    /// Entries yielded since the last seek: the value read-ahead window grows with them up
    /// to `prefetch_degree`, so a short scan issues few reads it will not use.
    streak: usize,
    failed: bool,
}

impl std::fmt::Debug for Iter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter")
            .field("snapshot", &self.snapshot)
            .field("opts", &self.opts)
            .finish()
    }
}

impl Iter {
    pub(super) fn open(snapshot: Snapshot, opts: ReadOptions) -> Result<Iter> {
        let ns = snapshot.namespace();
        let (inner, entry) = (ns.inner.clone(), ns.entry.clone());
        if inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        entry.check_live()?;
        // After the snapshot's seqno was pinned: everything at or below it is in this super
        // version (or in what compactions keep for the snapshot), and GC keeps the segments
        // of what it reads.
        let sv = inner.super_version();
        let counters = entry.list_counters.clone();
        let config = IterConfig {
            fill_cache: opts.fill_cache,
            readahead: opts.index_prefetch.then(|| inner.prefetcher().clone()),
        };
        let scan = sv.scan(entry.id, snapshot.seq(), &counters, &config)?;
        Counters::add(&counters.local().lists, 1);
        let it = Iter {
            inner,
            entry,
            snapshot,
            scan,
            opts,
            ahead: VecDeque::new(),
            exhausted: false,
            unpositioned: true,
            streak: 0,
            failed: false,
        };
        // Positioned on the first `next` or `seek`.
        Ok(it)
    }

    /// Positions at the first key `>= key` (and within the prefix, if one is set): the next
    /// item is that key's. Values read ahead for the old position are dropped.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        // As `next`: an iterator of a closed database answers nothing more.
        if self.inner.closed.load(Ordering::Acquire) {
            self.failed = true;
            return Err(Error::Closed);
        }
        if let Err(e) = self.snapshot.check() {
            self.failed = true;
            return Err(e);
        }
        self.ahead.clear();
        self.exhausted = false;
        self.unpositioned = false;
        self.streak = 0;
        self.failed = false;
        let target = match &self.opts.prefix {
            Some(p) if key < p.as_slice() => p.as_slice(),
            _ => key,
        };
        if let Err(e) = self.scan.seek(target) {
            self.failed = true;
            return Err(e);
        }
        Ok(())
    }

    /// The snapshot this iterator reads at.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Bytes this iterator holds now.
    pub fn memory(&self) -> IterMemory {
        let (scan_state, scan_buffers) = self.scan.memory();
        let ahead: usize = self
            .ahead
            .iter()
            .map(|a| a.key.len() + a.value.bytes())
            .sum();
        IterMemory {
            state: std::mem::size_of::<Iter>() - std::mem::size_of::<SnapshotScan>()
                + scan_state
                + self.ahead.capacity() * std::mem::size_of::<Ahead>(),
            buffers: scan_buffers + ahead,
        }
    }

    /// Whether `key` is past the end set by the options.
    fn past_end(&self, key: &[u8]) -> bool {
        let above = |b: &Vec<u8>| key >= b.as_slice();
        self.opts.upper_bound.as_ref().is_some_and(above)
            || self
                .opts
                .prefix
                .as_ref()
                .is_some_and(|p| !key.starts_with(p))
    }

    /// Takes the next live entry from the merge, its value read, started or left for later.
    fn pull(&mut self) -> Result<Option<Ahead>> {
        while !self.exhausted {
            if !self.scan.valid() || self.past_end(self.scan.key()) {
                self.exhausted = true;
                break;
            }
            if self.scan.kind() == Kind::Delete {
                self.scan.next()?;
                continue;
            }
            let key = Bytes::copy_from_slice(self.scan.key());
            let index_value = self.scan.index_value();
            self.scan.next()?;
            let value = match index_value {
                _ if self.opts.keys_only => Fetch::Ready(Bytes::new()),
                Some(IndexValue::Addr {
                    inline: Some(v), ..
                })
                | Some(IndexValue::Table(v)) => Fetch::Ready(v),
                Some(IndexValue::Addr { addr, inline: None }) => Fetch::Later(addr),
                _ => {
                    return Err(Error::corruption(
                        "index",
                        0,
                        "iterator entry without a value or an address",
                    ))
                }
            };
            return Ok(Some(Ahead { key, value }));
        }
        Ok(None)
    }

    fn step(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        if self.unpositioned {
            self.seek(&[])?;
        }
        // The entry to yield, and behind it the window of entries whose values are read
        // ahead; the one yielded now is read here if it was not.
        let window = self.opts.prefetch_degree.min(self.streak);
        while self.ahead.len() <= window {
            match self.pull()? {
                Some(a) => self.ahead.push_back(a),
                None => break,
            }
        }
        for a in self.ahead.iter_mut().skip(1) {
            if let Fetch::Later(addr) = a.value {
                let inner = self.inner.clone();
                let (ns, k) = (self.entry.id, a.key.clone());
                let c = self.entry.list_counters.clone();
                let pin = self.inner.vlog_reader.pin();
                a.value = Fetch::Pending(self.inner.prefetcher().submit(move || {
                    let _pin = pin;
                    inner.vlog_reader.read_value(addr, ns, &k, &c)
                }));
            }
        }
        let Some(a) = self.ahead.pop_front() else {
            return Ok(None);
        };
        self.streak += 1;
        let c = &self.entry.list_counters;
        let value = match a.value {
            Fetch::Ready(v) => v,
            Fetch::Later(addr) => {
                let _pin = self.inner.vlog_reader.pin_brief();
                self.inner
                    .vlog_reader
                    .read_value(addr, self.entry.id, &a.key, c)?
            }
            Fetch::Pending(rx) => rx
                .wait()
                .unwrap_or_else(|| Err(Error::Background("prefetch reader stopped".into())))?,
        };
        Counters::add(&c.local().keys_listed, 1);
        Ok(Some((a.key, value)))
    }
}

impl Iterator for Iter {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.inner.closed.load(Ordering::Acquire) {
            self.failed = true;
            return Some(Err(Error::Closed));
        }
        // Past its age its pin is gone, and GC may have taken what it would read: a read
        // that failed for that says so.
        match self.snapshot.check().and_then(|()| self.step()) {
            Ok(item) => item.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(self.snapshot.check().err().unwrap_or(e)))
            }
        }
    }
}

impl Inner {
    /// The reader threads iterators prefetch through, started on first use.
    pub(super) fn prefetcher(&self) -> &Arc<ReadPool> {
        self.prefetcher.get_or_init(|| {
            Arc::new(ReadPool::new(
                self.opts.prefetch_threads,
                self.storage.nand_stats().is_some(),
            ))
        })
    }

    /// The reader threads of background work (a flush's lookups), started on first use: as
    /// the prefetch threads, at the background threads' priority.
    pub(super) fn background_reader(&self) -> &Arc<ReadPool> {
        self.background_reads.get_or_init(|| {
            let pool = ReadPool::new(
                self.opts.prefetch_threads,
                self.storage.nand_stats().is_some(),
            );
            Arc::new(pool.for_background("cerberus-bgread", self.opts.background_nice))
        })
    }
}
