//! Carrying out a command against the engine. Runs on the worker threads (engine calls block
//! on storage); access checks have been made by the connection before a command gets here.

//!
//! `run` routes each command to its group: `data` (point commands on keys), `scans` (list
//! and iterators), `indexes` (secondary indexes and queries), `admin` (namespaces, stats,
//! identify). `engine_error` is the one place an engine error becomes a status.

mod admin;
mod backup;
mod backup_gate;
mod data;
mod delete_range;
mod engine_error;
#[cfg(feature = "fault-injection")]
mod fault;
mod gets;
mod indexes;
mod scans;

use crate::auth::Credentials;
use crate::config::DeviceConfig;
use crate::dedup::Dedup;
use crate::held::HeldBytes;
use crate::iterators::ConnIterators;
use crate::metrics::Metrics;
use crate::scheduler::{Policy, Scheduler};
use crate::shares::Shares;
use arc_swap::ArcSwap;
use cerberus_engine::{Db, Namespace};
use cerberus_proto::{
    key_size_refusal, Command, Identify, Reply, Request, Response, Status, VERSION,
};
use engine_error::engine;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
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
    /// The seed of a key's stripe: drawn at start, so that no client can aim its keys at
    /// another tenant's stripe.
    stripe_seed: u64,
    /// Handles of the namespaces commands have named, kept so that a get borrows one: making
    /// a handle per command takes the engine's namespace lock and two shared reference
    /// counts, contended writes when two network threads serve gets at once. A destroyed
    /// namespace's handle answers as an unknown namespace, as the engine does.
    handles: ArcSwap<FxHashMap<u32, Namespace>>,
    /// Places background tasks on the cores (the network threads).
    pub scheduler: Arc<Scheduler>,
    /// The deduplication service, when enabled and the policy runs background work.
    pub dedup: Option<Dedup>,
    /// The namespaces' I/O shares, enforced by the gate each command passes on its core.
    pub shares: Shares,
    /// The bytes the device holds for clients on every wire (`max_held_bytes`).
    pub held: Arc<HeldBytes>,
    /// One backup at a time.
    backup: backup_gate::BackupGate,
    /// Which query shapes to try on the network thread.
    query_fit: crate::query_fit::QueryFit,
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
        let shares = Shares::new(&config.shares);
        let held = Arc::new(HeldBytes::new(
            usize::try_from(config.max_held_bytes).unwrap_or(usize::MAX),
        ));
        let shared = Shared {
            db,
            creds,
            metrics: Metrics::default(),
            config,
            identify,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            stripe_seed: rand::RngCore::next_u64(&mut rand::rngs::OsRng),
            handles: ArcSwap::default(),
            scheduler,
            dedup,
            shares,
            held,
            backup: Default::default(),
            query_fit: Default::default(),
        };
        // Queued before the stop: past the bound too.
        for w in pending {
            shared.queue_dedup(w);
        }
        // Shares are kept by the engine across restarts: the scheduler gets them back.
        shared.apply_kept_shares();
        shared
    }

    /// Runs `cmd` for a connection whose iterators are `iters`, and builds its completion.
    pub fn execute(&self, cmd: Command, iters: &ConnIterators) -> Response {
        #[cfg(feature = "fault-injection")]
        if let Some(resp) = fault::intercept(&cmd) {
            return resp;
        }
        let head = (cmd.cid, cmd.nsid, cmd.request.opcode() as u8);
        completion(head, self.run(cmd, iters))
    }

    /// Records one completed command of namespace `nsid` (or the device) in the metrics;
    /// a namespace destroyed meanwhile gets no series again (`Metrics::record`).
    pub fn record(&self, nsid: u32, opcode: u8, ok: bool, latency: std::time::Duration) {
        let live = || self.db.namespace(nsid).is_ok();
        self.metrics.record(nsid, opcode, ok, latency, live);
    }

    /// A handle to namespace `ns`, or the engine's answer for an unknown one.
    fn namespace(&self, ns: u32) -> Result<Namespace, (Status, String)> {
        self.db.namespace(ns).map_err(engine)
    }

    /// Runs `f` on a kept handle to namespace `ns` (see `handles`).
    fn with_namespace<T>(
        &self,
        ns: u32,
        f: impl FnOnce(&Namespace) -> Result<T, (Status, String)>,
    ) -> Result<T, (Status, String)> {
        if let Some(h) = self.handles.load().get(&ns) {
            return f(h);
        }
        let h = self.namespace(ns)?;
        let out = f(&h);
        // Kept only while the namespace lives: a destroy since (it removes the handle after
        // the engine's destroy) would otherwise leave a dead handle kept for good. `rcu`
        // tries again if the destroy changed the map meanwhile, and then sees it gone.
        self.handles.rcu(|m| {
            let mut m = FxHashMap::clone(m);
            if self.db.namespace(ns).is_ok() {
                m.insert(ns, h.clone());
            }
            m
        });
        out
    }

    /// Routes `cmd` to the command group that carries it out.
    fn run(&self, cmd: Command, iters: &ConnIterators) -> Outcome {
        let ns = cmd.nsid;
        match cmd.request {
            Request::Store {
                key,
                value,
                mode,
                sync,
            } => self.store(ns, &key, &value, mode, sync),
            Request::Retrieve { key } => self.retrieve(ns, &key),
            Request::Exist { key } => self.exist(ns, &key),
            Request::Delete { key } => self.delete(ns, &key),
            Request::WriteBatch { writes, sync } => self.write_batch(ns, &writes, sync),
            Request::DeleteRange {
                start,
                end,
                max_keys,
            } => self.delete_range(ns, &start, &end, max_keys),
            Request::List {
                start,
                start_exclusive,
                max_keys,
            } => self.list(ns, &start, start_exclusive, max_keys),
            Request::IterOpen {
                start,
                upper_bound,
                prefix,
                keys_only,
            } => self.iter_open(ns, iters, &start, &upper_bound, &prefix, keys_only),
            Request::IterNext {
                iter,
                max_entries,
                max_bytes,
            } => self.iter_next(ns, iters, iter, max_entries, max_bytes),
            Request::IterClose { iter } => self.iter_close(ns, iters, iter),
            Request::IndexCreate { attr, vas } => self.index_create(ns, &attr, vas),
            Request::IndexDrop { attr } => self.index_drop(ns, &attr),
            Request::IndexList => self.index_list(ns),
            Request::Query { query } => self.query(ns, &query),
            Request::Backup { dir } => self.backup(&dir),
            Request::NamespaceCreate { name, settings } => self.namespace_create(&name, settings),
            Request::NamespaceConfigure {
                settings,
                read_only,
            } => self.namespace_configure(ns, settings, read_only),
            Request::NamespaceDestroy => self.namespace_destroy(ns),
            Request::NamespaceRekey => self.namespace_rekey(ns),
            Request::NamespaceList => self.namespace_list(),
            Request::Stats => self.stats(ns),
            Request::Identify => Ok(Reply::Identify(self.identify)),
            // Answered by the connection itself, in order with the commands around it.
            Request::Authenticate { .. } | Request::AuthenticateByName { .. } => Err((
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
}

/// The completion of the command `(cid, nsid, opcode)` that had `outcome`.
fn completion((cid, nsid, opcode): (u32, u32, u8), outcome: Outcome) -> Response {
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

#[cfg(test)]
mod tests;
