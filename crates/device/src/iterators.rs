//! The iterators one connection has open: ids, the per-connection limit, and closing those
//! left idle, so a client that opens iterators and goes away holds no snapshot for long.

use bytes::Bytes;
use cerberus_engine::Iter;
use cerberus_proto::Status;
use parking_lot::Mutex;
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
    /// its limit open (idle ones are closed first).
    pub fn open(&self, nsid: u32, iter: Iter) -> Result<u32, Failure> {
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
        t.open.insert(
            id,
            Slot {
                nsid,
                cursor: Arc::new(Mutex::new(Cursor {
                    iter,
                    pending: None,
                })),
                last_used: Instant::now(),
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

    /// Closes the iterators unused for longer than the idle limit; returns how many.
    pub fn sweep(&self) -> usize {
        Self::sweep_locked(&mut self.table.lock(), self.idle)
    }

    fn sweep_locked(t: &mut Table, idle: Duration) -> usize {
        let before = t.open.len();
        t.open.retain(|_, s| s.last_used.elapsed() < idle);
        before - t.open.len()
    }
}

fn not_found(id: u32) -> Failure {
    (
        Status::IteratorNotFound,
        format!(
            "no open iterator {id} on this connection for this namespace (never opened, \
             closed, or closed by the device after sitting idle)"
        ),
    )
}
