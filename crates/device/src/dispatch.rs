//! Carrying out a command against the engine. Runs on the worker threads (engine calls block
//! on storage); access checks have been made by the connection before a command gets here.

use crate::auth::Credentials;
use crate::config::DeviceConfig;
use crate::dedup::Dedup;
use crate::iterators::ConnIterators;
use crate::metrics::Metrics;
use crate::scheduler::{Policy, Scheduler};
use arc_swap::ArcSwap;
use bytes::Bytes;
use cerberus_engine::{Db, Error as EngineError, Namespace, ReadOptions, WriteBatch, WriteOptions};
use cerberus_proto::{
    key_size_refusal, value_size_refusal, Command, Identify, NamespaceEntry, Reply, Request,
    Response, Status, StoreMode, DEVICE_NSID, VERSION,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Locks that make a conditional store (check, then write) and a delete (check, then
/// delete) atomic with respect to every other write of the same key. Writes of different
/// keys rarely share a stripe.
const STRIPES: usize = 1024;

/// Bytes of lengths an entry takes in a reply besides its key and value.
const ENTRY_OVERHEAD: usize = 6;

/// Largest value a store may carry to run on a network thread.
const INLINE_MAX_VALUE: usize = 64 << 10;

/// What every worker shares: the engine, credentials, metrics and limits.
pub struct Shared {
    pub db: Db,
    pub creds: Credentials,
    pub metrics: Metrics,
    pub config: DeviceConfig,
    pub identify: Identify,
    stripes: Vec<Mutex<()>>,
    /// Handles of the namespaces commands have named, kept so that a get borrows one: making
    /// a handle per command takes the engine's namespace lock and two shared reference
    /// counts, contended writes when two network threads serve gets at once. A destroyed
    /// namespace's handle answers as an unknown namespace, as the engine does.
    handles: ArcSwap<HashMap<u32, Namespace>>,
    /// Places background tasks on the cores (the network threads).
    pub scheduler: Arc<Scheduler>,
    /// The deduplication service, when enabled and the policy runs background work.
    pub dedup: Option<Dedup>,
}

/// Outcome of a command: a status, and a body or message.
type Outcome = Result<Reply, (Status, String)>;

impl Shared {
    /// With a scheduler of its own, the engine running its background work on its own
    /// threads (tests).
    #[cfg(test)]
    pub fn new(db: Db, creds: Credentials, config: DeviceConfig) -> Shared {
        let scheduler = Arc::new(Scheduler::new(
            config.network_threads,
            config.scheduler.clone(),
            config.engine.background_threads,
        ));
        Shared::with_scheduler(db, creds, config, scheduler)
    }

    /// `db` opened with `scheduler`'s engine runner.
    pub fn with_scheduler(
        db: Db,
        creds: Credentials,
        config: DeviceConfig,
        scheduler: Arc<Scheduler>,
    ) -> Shared {
        let identify = Identify {
            protocol_version: VERSION,
            max_key_len: config.max_key_len,
            max_value_len: config.max_value_len,
            max_inflight: config.max_inflight,
            max_frame_body: config.max_frame_body(),
            max_list_keys: config.max_list_keys,
            max_iterators: config.max_iterators,
            max_iter_batch_bytes: config.max_iter_batch_bytes,
            iterator_idle_secs: config.iterator_idle_secs,
        };
        // Dedup runs as background work: with the scheduler off there is none.
        let wanted = config.scheduler.policy != Policy::Off;
        let (dedup, pending) = Dedup::open(&db, &config.data_dir, &config.dedup, wanted);
        let shared = Shared {
            db,
            creds,
            metrics: Metrics::default(),
            config,
            identify,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            handles: ArcSwap::default(),
            scheduler,
            dedup,
        };
        // Queued before the stop: past the bound too.
        for w in pending {
            shared.queue_dedup(w);
        }
        shared
    }

    /// Runs `cmd` for a connection whose iterators are `iters`, and builds its completion.
    /// Whether `cmd` runs on the network thread that read it: point commands on files (the
    /// page cache answers reads; writes go to the memtable and the value log's buffer),
    /// unless they wait for durability or carry a large value. On the NAND model a read
    /// waits for its die, so every command goes to the workers.
    pub fn runs_inline(&self, cmd: &Command) -> bool {
        if !self.config.inline_commands
            || self.config.sync
            || self.config.storage != crate::config::StorageChoice::Posix
        {
            return false;
        }
        match &cmd.request {
            Request::Retrieve { .. } | Request::Exist { .. } | Request::Delete { .. } => true,
            Request::Store { value, sync, .. } => !sync && value.len() <= INLINE_MAX_VALUE,
            _ => false,
        }
    }

    pub fn execute(&self, cmd: Command, iters: &ConnIterators) -> Response {
        #[cfg(feature = "fault-injection")]
        if let Some(resp) = fault::intercept(&cmd) {
            return resp;
        }
        let opcode = cmd.request.opcode() as u8;
        let (cid, nsid) = (cmd.cid, cmd.nsid);
        let outcome = self.run(cmd, iters);
        match outcome {
            Ok(reply) => Response {
                cid,
                nsid,
                opcode,
                status: Status::Success,
                reply,
            },
            Err((status, message)) => Response::error(cid, nsid, opcode, status, message),
        }
    }

    /// A handle to namespace `ns`, or the engine's answer for an unknown one.
    fn namespace(&self, ns: u32) -> Result<Namespace, (Status, String)> {
        self.db.namespace(ns).map_err(engine)
    }

    /// Runs `f` on a kept handle to namespace `ns` (see `handles`).
    fn with_namespace(&self, ns: u32, f: impl FnOnce(&Namespace) -> Outcome) -> Outcome {
        if let Some(h) = self.handles.load().get(&ns) {
            return f(h);
        }
        let h = self.namespace(ns)?;
        let out = f(&h);
        self.handles.rcu(|m| {
            let mut m = HashMap::clone(m);
            m.insert(ns, h.clone());
            m
        });
        out
    }

    fn run(&self, cmd: Command, iters: &ConnIterators) -> Outcome {
        let ns = cmd.nsid;
        match cmd.request {
            Request::Store {
                key,
                value,
                mode,
                sync,
            } => {
                self.check_key(&key)?;
                if value.len() > self.config.max_value_len as usize {
                    return Err((
                        Status::InvalidValueSize,
                        value_size_refusal(value.len() as u64, self.config.max_value_len),
                    ));
                }
                let handle = self
                    .namespace(ns)?
                    .with_write_options(WriteOptions { sync });
                let _g = self.stripe(ns, &key).lock();
                match mode {
                    StoreMode::Always => {}
                    StoreMode::OnlyIfAbsent => {
                        if handle.contains(&key).map_err(engine)? {
                            return Err((Status::KeyExists, String::new()));
                        }
                    }
                    StoreMode::OnlyIfPresent => {
                        if !handle.contains(&key).map_err(engine)? {
                            return Err((Status::KeyNotExist, String::new()));
                        }
                    }
                }
                handle.put(&key, &value).map_err(engine)?;
                self.written(ns, &key);
                Ok(Reply::Empty)
            }
            Request::Retrieve { key } => {
                self.check_key(&key)?;
                self.with_namespace(ns, |h| match h.get(&key).map_err(engine)? {
                    Some(v) => Ok(Reply::Value(v)),
                    None => Err((Status::KeyNotExist, String::new())),
                })
            }
            Request::Exist { key } => {
                self.check_key(&key)?;
                self.with_namespace(ns, |h| {
                    if h.contains(&key).map_err(engine)? {
                        Ok(Reply::Empty)
                    } else {
                        Err((Status::KeyNotExist, String::new()))
                    }
                })
            }
            Request::Delete { key } => {
                self.check_key(&key)?;
                let handle = self.namespace(ns)?;
                let _g = self.stripe(ns, &key).lock();
                if !handle.contains(&key).map_err(engine)? {
                    return Err((Status::KeyNotExist, String::new()));
                }
                handle.delete(&key).map_err(engine)?;
                self.written(ns, &key);
                Ok(Reply::Empty)
            }
            Request::List {
                start,
                start_exclusive,
                max_keys,
            } => {
                self.check_len("start key", &start)?;
                let limit = max_keys.min(self.config.max_list_keys) as usize;
                let opts = ReadOptions {
                    keys_only: true,
                    ..ReadOptions::default()
                };
                let mut it = self.namespace(ns)?.iter(opts).map_err(engine)?;
                if start_exclusive {
                    // `start ++ 0x00` is the smallest key after `start`.
                    let mut after = start.to_vec();
                    after.push(0);
                    it.seek(&after).map_err(engine)?;
                } else {
                    it.seek(&start).map_err(engine)?;
                }
                let mut keys = Vec::with_capacity(limit.min(1024));
                for entry in it.by_ref().take(limit) {
                    keys.push(entry.map_err(engine)?.0);
                }
                let more = match it.next() {
                    Some(entry) => entry.map(|_| true).map_err(engine)?,
                    None => false,
                };
                Ok(Reply::Keys { keys, more })
            }
            Request::IterOpen {
                start,
                upper_bound,
                prefix,
                keys_only,
            } => {
                for (what, k) in [
                    ("start", &start),
                    ("upper bound", &upper_bound),
                    ("prefix", &prefix),
                ] {
                    self.check_len(what, k)?;
                }
                let opts = ReadOptions {
                    upper_bound: (!upper_bound.is_empty()).then(|| upper_bound.to_vec()),
                    prefix: (!prefix.is_empty()).then(|| prefix.to_vec()),
                    keys_only,
                    prefetch_degree: self.config.iterator_prefetch_degree(),
                    ..ReadOptions::default()
                };
                let mut it = self.namespace(ns)?.iter(opts).map_err(engine)?;
                it.seek(&start).map_err(engine)?;
                Ok(Reply::Iter(iters.open(ns, it)?))
            }
            Request::IterNext {
                iter,
                max_entries,
                max_bytes,
            } => {
                let cursor = iters.get(ns, iter)?;
                let mut cursor = cursor.lock();
                let budget = max_bytes.min(self.config.max_iter_batch_bytes) as usize;
                let mut entries = Vec::new();
                let mut bytes = 0;
                while entries.len() < max_entries.max(1) as usize {
                    let Some(entry) = cursor.next_entry() else {
                        return Ok(Reply::Entries {
                            entries,
                            done: true,
                        });
                    };
                    let (k, v) = entry.map_err(engine)?;
                    // With the lengths the reply gives them: a batch of tiny entries stays
                    // within the budget too.
                    let size = k.len() + v.len() + ENTRY_OVERHEAD;
                    if !entries.is_empty() && bytes + size > budget {
                        cursor.pending = Some((k, v));
                        return Ok(Reply::Entries {
                            entries,
                            done: false,
                        });
                    }
                    bytes += size;
                    entries.push((k, v));
                }
                // Look one entry ahead, so the client learns of the end without another call.
                let done = match cursor.next_entry() {
                    Some(entry) => {
                        cursor.pending = Some(entry.map_err(engine)?);
                        false
                    }
                    None => true,
                };
                Ok(Reply::Entries { entries, done })
            }
            Request::IterClose { iter } => {
                iters.close(ns, iter)?;
                Ok(Reply::Empty)
            }
            Request::IndexCreate { attr, vas } => {
                crate::queries::create_index(&self.namespace(ns)?, &attr, vas, engine)
            }
            Request::IndexDrop { attr } => {
                self.namespace(ns)?.drop_index(&attr).map_err(engine)?;
                Ok(Reply::Empty)
            }
            Request::IndexList => crate::queries::list_indexes(&self.namespace(ns)?, engine),
            Request::Query { query } => crate::queries::run(
                &self.namespace(ns)?,
                &query,
                &crate::queries::QueryBounds {
                    max_results: self.config.max_query_results,
                    max_page_bytes: self.config.max_iter_batch_bytes,
                    max_reply_bytes: self.config.reply_bytes_bound(),
                },
                engine,
            ),
            Request::NamespaceCreate { name } => {
                let nsid = self.db.create_namespace(&name).map_err(engine)?.id();
                let secret = self
                    .creds
                    .issue(nsid)
                    .map_err(|e| (Status::InternalError, e.to_string()))?;
                tracing::info!(nsid, name = %name, "namespace created");
                Ok(Reply::Created { nsid, secret })
            }
            Request::NamespaceDestroy => {
                self.db.destroy_namespace(ns).map_err(engine)?;
                self.handles.rcu(|m| {
                    let mut m = HashMap::clone(m);
                    m.remove(&ns);
                    m
                });
                self.metrics.forget(ns);
                self.submit_dedup(crate::dedup::DedupWork::Forget { ns });
                self.creds
                    .revoke(ns)
                    .map_err(|e| (Status::InternalError, e.to_string()))?;
                tracing::info!(nsid = ns, "namespace destroyed");
                Ok(Reply::Empty)
            }
            Request::NamespaceList => Ok(Reply::Namespaces(
                self.db
                    .list_namespaces()
                    .into_iter()
                    // The engine's default namespace is not served by the device.
                    .filter(|n| n.nsid != 0)
                    .map(|n| NamespaceEntry {
                        nsid: n.nsid,
                        name: n.name,
                    })
                    .collect(),
            )),
            Request::Stats => {
                // The engine's own serialization: the same names as its Rust API.
                let doc = if ns == DEVICE_NSID {
                    serde_json::to_vec(&self.device_stats())
                } else {
                    let mut doc =
                        serde_json::to_value(self.namespace(ns)?.stats().map_err(engine)?)
                            .map_err(|e| (Status::InternalError, e.to_string()))?;
                    if let (Some(d), Some(obj)) = (&self.dedup, doc.as_object_mut()) {
                        let mine = d.stats().namespaces.get(&ns).copied().unwrap_or_default();
                        obj.insert("dedup".into(), serde_json::json!(mine));
                    }
                    serde_json::to_vec(&doc)
                };
                let doc = doc.map_err(|e| (Status::InternalError, e.to_string()))?;
                Ok(Reply::Stats(Bytes::from(doc)))
            }
            Request::Identify => Ok(Reply::Identify(self.identify)),
            // Answered by the connection itself, in order with the commands around it.
            Request::Authenticate { .. } => Err((
                Status::InternalError,
                "authenticate reached a worker".into(),
            )),
        }
    }

    fn check_key(&self, key: &[u8]) -> Result<(), (Status, String)> {
        if key.is_empty() || key.len() > self.config.max_key_len as usize {
            return Err((
                Status::InvalidKeySize,
                key_size_refusal(key.len(), self.config.max_key_len),
            ));
        }
        Ok(())
    }

    /// A start key, bound or prefix may be empty, but no longer than a key.
    fn check_len(&self, what: &str, k: &[u8]) -> Result<(), (Status, String)> {
        if k.len() > self.config.max_key_len as usize {
            return Err((
                Status::InvalidKeySize,
                format!(
                    "{what} is {} bytes; this device accepts keys of up to {} bytes \
                     (max_key_len)",
                    k.len(),
                    self.config.max_key_len
                ),
            ));
        }
        Ok(())
    }

    fn stripe(&self, ns: u32, key: &[u8]) -> &Mutex<()> {
        &self.stripes[stripe_index(ns, key)]
    }

    /// Whether `cmd` may join its connection's batch of puts: an unconditional store that
    /// does not wait for durability, valid, and run on the network thread.
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
                    && self.runs_inline(cmd)
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
        // Taken in index order, each once: batches cannot deadlock each other.
        let mut stripes: Vec<usize> = puts.iter().map(|(k, _)| stripe_index(ns, k)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _held: Vec<_> = stripes.iter().map(|&i| self.stripes[i].lock()).collect();
        handle.write(batch).map_err(engine)?;
        for (k, _) in puts {
            self.written(ns, k);
        }
        Ok(())
    }
}

fn stripe_index(ns: u32, key: &[u8]) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ns.hash(&mut h);
    key.hash(&mut h);
    h.finish() as usize % STRIPES
}

fn engine(e: EngineError) -> (Status, String) {
    let status = match &e {
        EngineError::UnknownNamespace(_) => Status::InvalidNamespace,
        EngineError::NoSpace { .. } => Status::CapacityExceeded,
        EngineError::Corruption { .. } => Status::Corrupted,
        EngineError::KeyTooLarge { .. } => Status::InvalidKeySize,
        EngineError::ValueTooLarge { .. } => Status::InvalidValueSize,
        EngineError::NamespaceExists(_) => Status::NamespaceExists,
        EngineError::InvalidArgument(_) | EngineError::InvalidQuery(_) => Status::InvalidField,
        EngineError::UnknownIndex(_) => Status::IndexNotFound,
        EngineError::IndexExists { .. } => Status::IndexExists,
        EngineError::Closed => Status::ShuttingDown,
        _ => Status::InternalError,
    };
    if status == Status::InternalError || status == Status::Corrupted {
        tracing::error!(error = %e, "engine error");
    }
    (status, e.to_string())
}

/// Test-only faults (feature `fault-injection`), armed over the wire since tests drive the
/// device as a client: a store of [`fault::PANIC_NEXT_KEY`] whose value is a decimal count N
/// makes the next N commands that reach a worker panic.
#[cfg(feature = "fault-injection")]
mod fault {
    use cerberus_proto::{Command, Reply, Request, Response, Status};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// The NUL keeps it apart from any key a real client would pick.
    const PANIC_NEXT_KEY: &[u8] = b"\0fault-injection:panic-next";

    /// Process-global: a test that arms it must be the only one serving commands in its
    /// process (tests/worker_panic.rs holds one test).
    static PANIC_NEXT: AtomicU32 = AtomicU32::new(0);

    /// Arms on the arming store (and answers it); panics if armed; else lets `cmd` run.
    pub(super) fn intercept(cmd: &Command) -> Option<Response> {
        let opcode = cmd.request.opcode() as u8;
        if let Request::Store { key, value, .. } = &cmd.request {
            if key.as_ref() == PANIC_NEXT_KEY {
                let n = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u32>().ok());
                return Some(match n {
                    Some(n) => {
                        PANIC_NEXT.store(n, Ordering::SeqCst);
                        Response {
                            cid: cmd.cid,
                            nsid: cmd.nsid,
                            opcode,
                            status: Status::Success,
                            reply: Reply::Empty,
                        }
                    }
                    None => Response::error(
                        cmd.cid,
                        cmd.nsid,
                        opcode,
                        Status::InvalidField,
                        "the fault count is a decimal number".into(),
                    ),
                });
            }
        }
        let armed = PANIC_NEXT
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if armed {
            panic!("injected fault (fault-injection feature)");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn shared(dir: &std::path::Path) -> Shared {
        let config = DeviceConfig {
            data_dir: dir.to_path_buf(),
            max_key_len: 16,
            max_value_len: 100,
            ..DeviceConfig::default()
        };
        let db = Db::open(dir.join("db"), config.engine_options()).unwrap();
        let creds = Credentials::open(dir, None).unwrap();
        Shared::new(db, creds, config)
    }

    fn store(s: &Shared, nsid: u32, key: &[u8], value_len: usize) -> Response {
        let iters = ConnIterators::new(1, std::time::Duration::from_secs(1));
        s.execute(
            Command {
                cid: 1,
                nsid,
                request: Request::Store {
                    key: Bytes::copy_from_slice(key),
                    value: Bytes::from(vec![7u8; value_len]),
                    mode: StoreMode::Always,
                    sync: false,
                },
            },
            &iters,
        )
    }

    fn message(r: &Response) -> String {
        match &r.reply {
            Reply::Error(m) => m.clone(),
            other => panic!("not an error reply: {other:?}"),
        }
    }

    #[test]
    fn size_errors_name_the_size_given_and_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let s = shared(dir.path());
        let nsid = s.db.create_namespace("t").unwrap().id();
        assert!(store(&s, nsid, b"k", 100).status.is_success());

        let r = store(&s, nsid, b"k", 101);
        assert_eq!(r.status, Status::InvalidValueSize);
        assert_eq!(
            message(&r),
            "value is 101 bytes; this device accepts values up to 100 bytes (max_value_len)"
        );
        let r = store(&s, nsid, &[b'k'; 17], 1);
        assert_eq!(r.status, Status::InvalidKeySize);
        assert_eq!(
            message(&r),
            "key is 17 bytes; this device accepts keys of 1 to 16 bytes (max_key_len)"
        );
        let r = store(&s, nsid, b"", 1);
        assert_eq!(r.status, Status::InvalidKeySize);
        assert!(message(&r).starts_with("key is 0 bytes;"));
    }
}
