//! The iterators one connection has open: ids, the per-connection limit, and closing those
//! left idle, so a client that opens iterators and goes away holds no snapshot for long.
//! An iterator past its snapshot's maximum age is closed too, however often it is touched:
//! at the next use (which answers `SnapshotExpired`), or by the sweep. Its id is unknown
//! from then on (`IteratorNotFound`, as after the idle sweep): the connection keeps nothing
//! of it, not even a tombstone.

use bytes::Bytes;
use cerberus_engine::Iter;
use cerberus_proto::Status;
use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Failure = (Status, String);

/// An open iterator and the entry it read ahead of the last batch (it did not fit).
pub struct Cursor {
    pub iter: Iter,
    pub pending: Option<(Bytes, Bytes)>,
}

impl Cursor {
    /// The next entry, the one held back first.
    pub fn next_entry(&mut self) -> Option<cerberus_engine::Result<(Bytes, Bytes)>> {
        match self.pending.take() {
            Some(e) => Some(Ok(e)),
            None => self.iter.next(),
        }
    }
}

struct Slot {
    nsid: u32,
    cursor: Arc<Mutex<Cursor>>,
    last_used: Instant,
    /// When its snapshot expires (`None`: never).
    expires: Option<Instant>,
    _counted: Counted,
}

/// One iterator in the device's gauge of open iterators, for as long as its slot lives.
struct Counted(Gauge);

impl Counted {
    fn new(gauge: &Gauge) -> Counted {
        gauge.inc();
        Counted(gauge.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[derive(Default)]
struct Table {
    next_id: u32,
    open: HashMap<u32, Slot>,
}

/// A connection's iterators. Dropped with the connection, which closes them all.
pub struct ConnIterators {
    table: Mutex<Table>,
    max: usize,
    idle: Duration,
}

impl ConnIterators {
    pub fn new(max: u32, idle: Duration) -> ConnIterators {
        ConnIterators {
            table: Mutex::new(Table::default()),
            max: max as usize,
            idle,
        }
    }

    /// Registers `iter` of namespace `nsid` and returns its id, unless the connection has
    /// its limit open (idle and expired ones are closed first); it counts in `gauge` while
    /// open.
    pub fn open(&self, nsid: u32, iter: Iter, gauge: &Gauge) -> Result<u32, Failure> {
        let mut t = self.table.lock();
        Self::sweep_locked(&mut t, self.idle);
        if t.open.len() >= self.max {
            return Err((
                Status::IteratorLimit,
                format!(
                    "this connection has {} iterators open, the most the device allows \
                     (max_iterators); close one first",
                    t.open.len()
                ),
            ));
        }
        // Ids wrap; skip any still open.
        let mut id = t.next_id;
        while t.open.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        t.next_id = id.wrapping_add(1);
        let expires = iter.snapshot().expires_at();
        t.open.insert(
            id,
            Slot {
                nsid,
                cursor: Arc::new(Mutex::new(Cursor {
                    iter,
                    pending: None,
                })),
                last_used: Instant::now(),
                expires,
                _counted: Counted::new(gauge),
            },
        );
        Ok(id)
    }

    /// The cursor of iterator `id` of namespace `nsid`, marked as used now.
    pub fn get(&self, nsid: u32, id: u32) -> Result<Arc<Mutex<Cursor>>, Failure> {
        let mut t = self.table.lock();
        match t.open.get_mut(&id) {
            Some(s) if s.nsid == nsid => {
                s.last_used = Instant::now();
                Ok(s.cursor.clone())
            }
            _ => Err(not_found(id)),
        }
    }

    pub fn close(&self, nsid: u32, id: u32) -> Result<(), Failure> {
        let mut t = self.table.lock();
        match t.open.get(&id) {
            Some(s) if s.nsid == nsid => {
                t.open.remove(&id);
                Ok(())
            }
            _ => Err(not_found(id)),
        }
    }

    /// Closes iterator `id` of `nsid` if open (one that failed).
    pub fn forget(&self, nsid: u32, id: u32) {
        let mut t = self.table.lock();
        if t.open.get(&id).is_some_and(|s| s.nsid == nsid) {
            t.open.remove(&id);
        }
    }

    /// Closes the iterators unused for longer than the idle limit, and those whose snapshot
    /// expired (used or not: the engine gave back what they read through, this gives back
    /// the slot and the entry read ahead); returns how many.
    pub fn sweep(&self) -> usize {
        Self::sweep_locked(&mut self.table.lock(), self.idle)
    }

    fn sweep_locked(t: &mut Table, idle: Duration) -> usize {
        let before = t.open.len();
        let now = Instant::now();
        t.open.retain(|_, s| {
            now.duration_since(s.last_used) < idle && s.expires.is_none_or(|at| at > now)
        });
        before - t.open.len()
    }
}

fn not_found(id: u32) -> Failure {
    (
        Status::IteratorNotFound,
        format!(
            "no open iterator {id} on this connection for this namespace (never opened, \
             closed, or closed by the device: idle, failed, or past the maximum age)"
        ),
    )
}
