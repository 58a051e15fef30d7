//! Point commands on keys: store (with its modes), retrieve, exist, delete, and the batched
//! unconditional puts of one connection. Writes of one key are serialized by its stripe.

use super::engine_error::engine;
use super::{Outcome, Shared, INLINE_MAX_VALUE, STRIPES};
use crate::panics::catch_command;
use bytes::Bytes;
use cerberus_engine::Readable;
use cerberus_engine::{WriteBatch, WriteOptions, WritePressure};
use cerberus_proto::Response;
use cerberus_proto::{
    value_size_refusal, BatchWrite, Command, Opcode, Reply, Request, Status, StoreMode,
};
use parking_lot::Mutex;

impl Shared {
    pub(super) fn store(
        &self,
        ns: u32,
        key: &[u8],
        value: &[u8],
        mode: StoreMode,
        sync: bool,
    ) -> Outcome {
        self.check_key(key)?;
        if value.len() > self.config.max_value_len as usize {
            return Err((
                Status::InvalidValueSize,
                value_size_refusal(value.len() as u64, self.config.max_value_len),
            ));
        }
        let handle = self
            .namespace(ns)?
            .with_write_options(WriteOptions { sync });
        writable(&handle)?;
        let _g = self.stripe(ns, key).lock();
        match mode {
            StoreMode::Always => {}
            StoreMode::OnlyIfAbsent => {
                if handle.contains(key).map_err(engine)? {
                    return Err((Status::KeyExists, String::new()));
                }
            }
            StoreMode::OnlyIfPresent => {
                if !handle.contains(key).map_err(engine)? {
                    return Err((Status::KeyNotExist, String::new()));
                }
            }
        }
        handle.put(key, value).map_err(engine)?;
        self.written(ns, key);
        Ok(Reply::Empty)
    }

    pub(super) fn retrieve(&self, ns: u32, key: &[u8]) -> Outcome {
        self.check_key(key)?;
        self.with_namespace(ns, |h| match h.get(key).map_err(engine)? {
            Some(v) => Ok(Reply::Value(v)),
            None => Err((Status::KeyNotExist, String::new())),
        })
    }

    pub(super) fn exist(&self, ns: u32, key: &[u8]) -> Outcome {
        self.check_key(key)?;
        self.with_namespace(ns, |h| {
            if h.contains(key).map_err(engine)? {
                Ok(Reply::Empty)
            } else {
                Err((Status::KeyNotExist, String::new()))
            }
        })
    }

    pub(super) fn delete(&self, ns: u32, key: &[u8]) -> Outcome {
        self.check_key(key)?;
        let handle = self.namespace(ns)?;
        writable(&handle)?;
        let _g = self.stripe(ns, key).lock();
        if !handle.contains(key).map_err(engine)? {
            return Err((Status::KeyNotExist, String::new()));
        }
        handle.delete(key).map_err(engine)?;
        self.written(ns, key);
        Ok(Reply::Empty)
    }

    /// Whether `cmd` runs on the network thread that read it: point commands on files (the
    /// page cache answers reads; writes go to the memtable and the value log's buffer),
    /// unless they wait for durability or carry a large value. On the NAND model a read
    /// waits for its die, so every command goes to the workers. A write the engine would
    /// slow down or make wait (`Db::write_pressure`) runs on a worker too: on the loop it
    /// would hold up every other tenant's commands there (counted in `writes_off_loop`).
    pub fn runs_inline(&self, cmd: &Command) -> bool {
        match self.inline_shape(cmd) {
            Inline::No => false,
            Inline::Read => true,
            Inline::Write => {
                let calm = self.db.write_pressure() == WritePressure::None;
                if !calm {
                    self.metrics.writes_off_loop.inc();
                }
                calm
            }
        }
    }

    /// `cmd` answered here if it is a query that needs at most `inline_query_work` units of
    /// the engine's work (`Namespace::with_query_work_limit`), where point commands run
    /// inline; `None` if it must go to a worker (a query that stopped at the limit returned
    /// nothing and changed nothing, and runs there whole; one of a shape that just stopped
    /// there is not tried: `query_fit`). `tried`: it ran here, answered or not (either way
    /// up to `inline_query_work` of the network thread's time).
    pub fn answer_small_query(&self, cmd: &Command, tried: &mut bool) -> Option<Response> {
        let Request::Query { query } = &cmd.request else {
            return None;
        };
        let work = self.config.inline_query_work;
        if work == 0 || !self.inline_allowed() {
            return None;
        }
        #[cfg(feature = "fault-injection")]
        if let Some(resp) = super::fault::intercept(cmd) {
            return Some(resp);
        }
        let (slot, try_it) = self.query_fit.consult(cmd.nsid, query);
        if !try_it {
            self.metrics.queries_skipped_inline.inc();
            return None;
        }
        *tried = true;
        let outcome = self.query_within(cmd.nsid, query, work);
        match outcome {
            Some(_) => self.metrics.queries_inline.inc(),
            None => {
                self.query_fit.overflowed(slot);
                self.metrics.queries_off_loop.inc()
            }
        };
        let head = (cmd.cid, cmd.nsid, cmd.request.opcode() as u8);
        Some(super::completion(head, outcome?))
    }

    /// Whether commands that cannot block for long may run on the network thread: on files,
    /// without a sync per write, and `inline_commands` on.
    fn inline_allowed(&self) -> bool {
        self.config.inline_commands
            && !self.config.sync
            && self.config.storage == crate::config::StorageChoice::Posix
    }

    fn inline_shape(&self, cmd: &Command) -> Inline {
        if !self.inline_allowed() {
            return Inline::No;
        }
        match &cmd.request {
            Request::Retrieve { .. } | Request::Exist { .. } => Inline::Read,
            Request::Delete { .. } => Inline::Write,
            Request::Store { value, sync, .. } if !sync && value.len() <= INLINE_MAX_VALUE => {
                Inline::Write
            }
            _ => Inline::No,
        }
    }

    /// The most `cmd`'s answer may hold of the device's bytes (`max_held_bytes`), from the
    /// bounds its request and the settings put on it: a value for a get, the keys a list may
    /// return, the batch an iterator's next may (`min_reply_bytes`' reckoning: the bytes, as
    /// much again in lengths, one record past them, a summary), a whole reply for a query or
    /// the lists of namespaces and indexes; nothing for the rest, whose answers are small
    /// and bounded by the connection's in-flight limit (an iterator's open answers its id).
    pub fn answer_room(&self, cmd: &Command) -> usize {
        let c = &self.config;
        let bound = c.reply_bytes_bound() as usize;
        let room = match &cmd.request {
            Request::Retrieve { .. } => c.max_frame_body() as usize,
            Request::List { max_keys, .. } => {
                let keys = (*max_keys).min(c.max_list_keys) as usize;
                keys.saturating_mul(c.max_key_len as usize + 4) + 64
            }
            Request::IterNext { max_bytes, .. } => {
                let bytes = (*max_bytes).min(c.max_iter_batch_bytes) as usize;
                bytes
                    .saturating_mul(4)
                    .saturating_add(c.max_frame_body() as usize)
                    .saturating_add(64 << 10)
            }
            Request::Query { .. } | Request::NamespaceList | Request::IndexList => bound,
            _ => 0,
        };
        room.min(bound)
    }

    /// Whether `cmd` may join its connection's batch of puts: an unconditional store that
    /// does not wait for durability, valid, and run on the network thread (not counted as
    /// off the loop here: `runs_inline` counts it when it is carried out).
    pub fn batchable(&self, cmd: &Command) -> bool {
        match &cmd.request {
            Request::Store {
                key,
                value,
                mode: StoreMode::Always,
                sync: false,
            } => {
                self.check_key(key).is_ok()
                    && value.len() <= self.config.max_value_len as usize
                    && self.inline_shape(cmd) == Inline::Write
                    && self.db.write_pressure() == WritePressure::None
            }
            _ => false,
        }
    }

    /// Stores unconditional puts of one namespace as one engine write (one log append, all
    /// or none), holding each key's stripe as a single store would.
    pub fn store_all(&self, ns: u32, puts: &[(Bytes, Bytes)]) -> Result<(), (Status, String)> {
        let handle = self.namespace(ns)?;
        let mut batch = WriteBatch::new();
        for (k, v) in puts {
            batch.put(k.to_vec(), v.to_vec());
        }
        self.write_striped(&handle, ns, batch, puts.iter().map(|(k, _)| k))
    }

    /// Answers `cmds` (unconditional stores of namespace `ns` that [`Shared::batchable`]
    /// took) with one engine write ([`Shared::store_all`]): a response each, in their order,
    /// each with the write's outcome. A panic answers every store of the batch.
    pub fn store_many<'a>(
        &self,
        ns: u32,
        cmds: impl Iterator<Item = &'a Command> + Clone,
    ) -> Vec<Response> {
        let opcode = Opcode::Store as u8;
        let kvs: Vec<(Bytes, Bytes)> = cmds
            .clone()
            .filter_map(|c| match &c.request {
                Request::Store { key, value, .. } => Some((key.clone(), value.clone())),
                _ => None,
            })
            .collect();
        let outcome = catch_command(ns, opcode, || self.store_all(ns, &kvs)).and_then(|r| r);
        cmds.map(|c| {
            let done = outcome.clone().map(|()| Reply::Empty);
            super::completion((c.cid, ns, opcode), done)
        })
        .collect()
    }

    /// A client's batch (`WriteBatch`): every write checked first, so that a bad one refuses
    /// the batch whole (its index in the message), then one engine write. A delete of a key
    /// that holds nothing is no error, as in the engine's batch (unlike `Delete`).
    pub(super) fn write_batch(&self, ns: u32, writes: &[BatchWrite], sync: bool) -> Outcome {
        for (i, w) in writes.iter().enumerate() {
            let checked = self.check_key(w.key()).and_then(|()| match w {
                BatchWrite::Put { value, .. }
                    if value.len() > self.config.max_value_len as usize =>
                {
                    Err((
                        Status::InvalidValueSize,
                        value_size_refusal(value.len() as u64, self.config.max_value_len),
                    ))
                }
                _ => Ok(()),
            });
            checked.map_err(|(status, msg)| (status, format!("write {i} of the batch: {msg}")))?;
        }
        let handle = self
            .namespace(ns)?
            .with_write_options(WriteOptions { sync });
        let mut batch = WriteBatch::new();
        for w in writes {
            match w {
                BatchWrite::Put { key, value } => batch.put(key.to_vec(), value.to_vec()),
                BatchWrite::Delete { key } => batch.delete(key.to_vec()),
            };
        }
        self.write_striped(&handle, ns, batch, writes.iter().map(BatchWrite::key))?;
        // The gate charged the command as one operation: the rest of its writes too, so a
        // batch buys no more of the device than its writes sent one by one.
        self.shares
            .charge(ns, writes.len().saturating_sub(1) as u64, 0);
        Ok(Reply::Empty)
    }

    /// Writes `batch` holding the stripes of `keys` (taken in index order, each once: batches
    /// cannot deadlock each other), then queues their dedup tasks.
    pub(super) fn write_striped<'k>(
        &self,
        handle: &cerberus_engine::Namespace,
        ns: u32,
        batch: WriteBatch,
        keys: impl Iterator<Item = &'k Bytes> + Clone,
    ) -> Result<(), (Status, String)> {
        let mut stripes: Vec<usize> = keys.clone().map(|k| self.stripe_index(ns, k)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let held: Vec<_> = stripes.iter().map(|&i| self.stripes[i].lock()).collect();
        handle.write(batch).map_err(engine)?;
        drop(held);
        for k in keys {
            self.written(ns, k);
        }
        Ok(())
    }

    fn stripe(&self, ns: u32, key: &[u8]) -> &Mutex<()> {
        &self.stripes[self.stripe_index(ns, key)]
    }

    /// Every put takes one: a seeded xxh3 costs a sixth of a SipHash of the same bytes.
    fn stripe_index(&self, ns: u32, key: &[u8]) -> usize {
        let seed = self.stripe_seed ^ u64::from(ns);
        (xxhash_rust::xxh3::xxh3_64_with_seed(key, seed) % STRIPES as u64) as usize
    }
}

/// A read-only namespace's refusal before a conditional store or a delete looks the key up:
/// the answer is then the same whether the key exists or not. (The engine refuses the write
/// itself either way.)
pub(super) fn writable(handle: &cerberus_engine::Namespace) -> Result<(), (Status, String)> {
    match handle.is_read_only() {
        false => Ok(()),
        true => Err(engine(cerberus_engine::Error::NamespaceReadOnly(
            handle.id(),
        ))),
    }
}

/// Where a command may run (`Shared::runs_inline`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Inline {
    No,
    Read,
    /// On the loop while the engine does not hold writes up.
    Write,
}
