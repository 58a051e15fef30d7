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

use super::inner::Inner;
use super::namespace_set::NsEntry;
use super::snapshot::Snapshot;
use super::snapshots::Release;
use crate::error::{Error, Result};
use crate::iter::SnapshotScan;
use crate::key::{self, IndexValue, Kind, ValueAt};
use crate::prefetch::Pending;
use crate::stats::Counters;
use crate::table::IterConfig;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

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

/// Where an iterator stands and what it reads through: the merge over the memtables and
/// tables of the super version it was opened on, and the values read ahead. This is what
/// holds memory and disk space (each memtable, every table of the version, even after
/// compactions replaced them): it goes as soon as the snapshot expires or a read fails.
struct Position {
    scan: SnapshotScan,
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
}

/// An iterator's position, shared (weakly) with its snapshot's expiry: the sweep that
/// expires the snapshot takes it even if the iterator is never used again. Locked once per
/// `next`, `next_batch` or `seek`, uncontended but for that sweep.
struct Held(Mutex<Option<Position>>);

impl Release for Held {
    fn release(&self) {
        // Dropped under the lock (it takes none of the iterator's): whoever looks next
        // (`memory`, the iterator) finds the tables, and the files of those compactions
        // replaced, gone.
        let mut held = self.0.lock();
        *held = None;
    }
}

/// Keys and values of one namespace at one snapshot, in byte order. Yields
/// `Result<(key, value)>`. After an error it yields nothing more, but for
/// [`Error::SnapshotExpired`], which every later `next` and `seek` returns too; either
/// way it has given back its tables, memtables and read-ahead by then. Past its snapshot's
/// maximum age it gives them back even if never used again.
pub struct Iter {
    inner: Arc<Inner>,
    entry: Arc<NsEntry>,
    snapshot: Snapshot,
    opts: ReadOptions,
    held: Arc<Held>,
    /// A read failed (not for the snapshot's age): nothing more until a seek.
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
        let it = Iter {
            held: Arc::new(Held(Mutex::new(None))),
            inner,
            entry,
            snapshot,
            opts,
            failed: false,
        };
        *it.held.0.lock() = Some(it.position()?);
        let reader: Weak<Held> = Arc::downgrade(&it.held);
        if !it.snapshot.hold(reader) {
            return Err(it.snapshot.expired_error());
        }
        Counters::add(&it.entry.list_counters.local().lists, 1);
        // Positioned on the first `next` or `seek`.
        Ok(it)
    }

    /// A merge over the current super version, unpositioned.
    fn position(&self) -> Result<Position> {
        // After the snapshot's seqno was pinned: everything at or below it is in this super
        // version (or in what compactions keep for the snapshot), and GC keeps the segments
        // of what it reads.
        let sv = self.inner.versions.super_version();
        let config = IterConfig {
            fill_cache: self.opts.fill_cache,
            readahead: self
                .opts
                .index_prefetch
                .then(|| self.inner.prefetcher().clone()),
        };
        let counters = &self.entry.list_counters;
        let scan = sv.scan(self.entry.id, self.snapshot.seq(), counters, &config)?;
        Ok(Position {
            scan,
            ahead: VecDeque::new(),
            exhausted: false,
            unpositioned: true,
            streak: 0,
        })
    }

    /// Fails, as `next` and `seek` do, if the database closed or the snapshot expired; the
    /// position is given back then.
    fn usable(&mut self) -> Result<()> {
        // An iterator of a closed database answers nothing more.
        if self.inner.closed.load(Ordering::Acquire) {
            self.failed = true;
            self.held.release();
            return Err(Error::Closed);
        }
        // Past its age its pin is gone (the check reaps it, and its readers' positions, if
        // the background has not yet).
        self.snapshot.check().inspect_err(|_| self.held.release())
    }

    /// Positions at the first key `>= key` (and within the prefix, if one is set): the next
    /// item is that key's. Values read ahead for the old position are dropped. After a
    /// failed read, it opens a new merge over the snapshot.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.usable()?;
        self.failed = false;
        let mut held = self.held.0.lock();
        let outcome = self.seek_held(&mut held, key);
        let gone = outcome.is_err().then(|| held.take());
        drop((held, gone));
        if outcome.is_err() && !self.snapshot.released() {
            self.failed = true;
        }
        outcome
    }

    fn seek_held(&self, held: &mut Option<Position>, key: &[u8]) -> Result<()> {
        if self.snapshot.released() {
            // Expired since the check: its sweep took the position, or is waiting for it.
            return Err(self.snapshot.expired_error());
        }
        let p = match held.take() {
            Some(p) => p,
            None => self.position()?,
        };
        self.seek_in(held.insert(p), key)
    }

    fn seek_in(&self, p: &mut Position, key: &[u8]) -> Result<()> {
        p.ahead.clear();
        p.exhausted = false;
        p.unpositioned = false;
        p.streak = 0;
        let target = match &self.opts.prefix {
            Some(pre) if key < pre.as_slice() => pre.as_slice(),
            _ => key,
        };
        p.scan.seek(target)
    }

    /// The snapshot this iterator reads at.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Bytes this iterator holds now (its own state alone once it has given its position
    /// back).
    pub fn memory(&self) -> IterMemory {
        // The position sits in `Held` (its allocation stays once given back); the scan
        // counts its own size in `scan_state`.
        let own = std::mem::size_of::<Iter>() + std::mem::size_of::<Held>();
        let held = self.held.0.lock();
        let Some(p) = held.as_ref() else {
            return IterMemory {
                state: own,
                buffers: 0,
            };
        };
        let (scan_state, scan_buffers) = p.scan.memory();
        let ahead: usize = p.ahead.iter().map(|a| a.key.len() + a.value.bytes()).sum();
        IterMemory {
            state: own - std::mem::size_of::<SnapshotScan>()
                + scan_state
                + p.ahead.capacity() * std::mem::size_of::<Ahead>(),
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
    fn pull(&self, p: &mut Position) -> Result<Option<Ahead>> {
        while !p.exhausted {
            if !p.scan.valid() || self.past_end(p.scan.key()) {
                p.exhausted = true;
                break;
            }
            if p.scan.kind() == Kind::Delete {
                p.scan.next()?;
                continue;
            }
            let key = Bytes::copy_from_slice(p.scan.key());
            let index_value = p.scan.index_value();
            p.scan.next()?;
            let value = match index_value.and_then(IndexValue::value_at) {
                _ if self.opts.keys_only => Fetch::Ready(Bytes::new()),
                Some(ValueAt::Here(v)) => Fetch::Ready(v),
                Some(ValueAt::Log(addr)) => Fetch::Later(addr),
                None => {
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

    /// The next entry; `wanted`: how many the caller means to take from here on, this one
    /// included (`usize::MAX`: not known).
    fn step(&self, p: &mut Position, wanted: usize) -> Result<Option<(Bytes, Bytes)>> {
        if p.unpositioned {
            self.seek_in(p, &[])?;
        }
        // The entry to yield, and behind it the window of entries whose values are read
        // ahead; the one yielded now is read here if it was not. Only while the entry to
        // yield has its value in the log: a value at hand (the memtable's, one kept in its
        // table) needs no read, and reading entries ahead of it was walking past the end of
        // every short scan (by 8 entries in 50, in YCSB e out of the memtable).
        if p.ahead.is_empty() {
            if let Some(a) = self.pull(p)? {
                p.ahead.push_back(a);
            }
        }
        let in_log = p
            .ahead
            .front()
            .is_some_and(|a| !matches!(a.value, Fetch::Ready(_)));
        let window = match in_log {
            true => self
                .opts
                .prefetch_degree
                .min(p.streak)
                .min(wanted.saturating_sub(1)),
            false => 0,
        };
        while p.ahead.len() <= window {
            match self.pull(p)? {
                Some(a) => p.ahead.push_back(a),
                None => break,
            }
        }
        for a in p.ahead.iter_mut().skip(1) {
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
        let Some(a) = p.ahead.pop_front() else {
            return Ok(None);
        };
        p.streak += 1;
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
        Ok(Some((a.key, value)))
    }
}

impl Iter {
    /// Appends up to `max` next entries to `out`, under one lock and one count: how a
    /// caller that knows how many it wants (a scan of N, a reply of N) reads them fastest.
    /// Fewer than `max` (how many: the answer) only at the end of the range, or before an
    /// error, which comes after the entries before it are in `out`, as [`Iterator::next`]
    /// would have yielded them (and then nothing more, as `next`).
    pub fn next_batch(&mut self, max: usize, out: &mut Vec<(Bytes, Bytes)>) -> Result<usize> {
        match self.pump(max, max, |kv| out.push(kv)) {
            Ok(n) => Ok(n),
            Err(Some(e)) => Err(e),
            Err(None) => Ok(0),
        }
    }

    /// Hands up to `max` next entries to `put`: how many (fewer only at the end), or the
    /// error to say (`None`: nothing more, an error was said before). `wanted`: how many
    /// the caller means to take (`usize::MAX`: not known), so that no value is read ahead
    /// past them.
    fn pump(
        &mut self,
        max: usize,
        wanted: usize,
        mut put: impl FnMut((Bytes, Bytes)),
    ) -> std::result::Result<usize, Option<Error>> {
        let failed_before = self.failed;
        if let Err(e) = self.usable() {
            // Every call past the age says so; other failures are said once.
            let expired = e.kind() == crate::error::ErrorKind::SnapshotExpired;
            return Err((expired || !failed_before).then_some(e));
        }
        if self.failed {
            return Err(None);
        }
        let mut held = self.held.0.lock();
        let mut n = 0;
        let outcome = match &mut *held {
            Some(p) if !self.snapshot.released() => loop {
                if n == max {
                    break Ok(());
                }
                // A long batch stops at the snapshot's age as a run of `next` would.
                if n > 0 && self.snapshot.past_age() {
                    break Err(self.snapshot.expired_error());
                }
                match self.step(p, wanted.saturating_sub(n)) {
                    Ok(Some(kv)) => put(kv),
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
                n += 1;
            },
            // Its snapshot expired since the check: the sweep took the position (or waits).
            _ => Err(self.snapshot.expired_error()),
        };
        if n > 0 {
            Counters::add(&self.entry.list_counters.local().keys_listed, n as u64);
        }
        let e = match outcome {
            Ok(()) => return Ok(n),
            Err(e) => e,
        };
        let gone = held.take();
        drop((held, gone));
        // GC may have taken what a read past the age wanted: such a failure says so.
        if self.snapshot.released() || self.snapshot.check().is_err() {
            return Err(Some(self.snapshot.expired_error()));
        }
        self.failed = true;
        Err(Some(e))
    }
}

impl Iterator for Iter {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut got = None;
        match self.pump(1, usize::MAX, |kv| got = Some(kv)) {
            Ok(_) => got.map(Ok),
            Err(e) => e.map(Err),
        }
    }
}
