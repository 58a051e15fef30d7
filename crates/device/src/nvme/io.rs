//! KV I/O onto the device's dispatch: each KV command becomes the native command that does
//! the same (Store, Retrieve, Exist, Delete, List) and runs where the native port's do (the
//! network thread or a worker); its status becomes the KV command set's. Unconditional Stores
//! join the puts held on the network thread (`put_batch`), with the native connections' and
//! the other queues'; any other command first stores what is held of its namespace.

use super::answer::{invalid_field, invalid_namespace, Answer};
use super::conn::Conn;
use super::flight::Done;
use super::held_retrieves::Answering;
use crate::put_batch::{HeldPut, PutReply, StoreAnswer};
use crate::workers::answer;
use bytes::Bytes;
use cerberus_proto::nvme::{
    KvCommand, KvOpcode, NvmeStatus, Sqe, STORE_ONLY_IF_ABSENT, STORE_ONLY_IF_PRESENT,
};
use cerberus_proto::{Command, Opcode, Reply, Request, Response, Status, StoreMode};

impl Conn {
    /// Starts an I/O command holding `cost` bytes of the connection's budget: refused at
    /// once, or run on a worker; either way its answer comes back through `flight`.
    pub(super) fn io(&mut self, sqe: Sqe, data: Bytes, cost: usize) {
        let opcode = sqe.opcode;
        let joins = |c: &Command| c.request.opcode() as u8 == opcode;
        if !self.held.cmds.first().is_some_and(joins) {
            // Held commands are carried out before a command of another kind starts.
            self.run_held();
        }
        if self.vendor(&sqe, &data, cost) {
            return;
        }
        if sqe.opcode == FLUSH {
            self.flush_cache(sqe, cost);
            return;
        }
        match self.io_request(&sqe, data) {
            Ok((request, buffer)) => self.execute(sqe, request, buffer, cost),
            Err(answer) => self.flight.finish_now(sqe, answer, cost),
        }
    }

    /// Carries out the held Retrieves (of one namespace, in arrival order) as one engine
    /// read, as the native port does a connection's pipelined gets (`Shared::retrieve_many`).
    pub(super) fn run_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        // Taken and given back: the two lists keep their room from batch to batch.
        let mut held = std::mem::take(&mut self.held);
        let shared = &self.target.shared;
        let (ns, opcode) = (held.cmds[0].nsid, Opcode::Retrieve as u8);
        let n = held.cmds.len();
        if n > 1 {
            shared.metrics.get_batches.inc();
            shared.metrics.batched_gets.inc_by(n as u64);
        }
        let responses = shared.retrieve_many(ns, &held.cmds);
        for (resp, h) in responses.into_iter().zip(held.answering.drain(..)) {
            let ok = resp.status.is_success();
            shared.record(ns, opcode, ok, h.arrived.elapsed());
            self.flight.finish_now(h.sqe, reply(resp, h.buffer), h.cost);
        }
        held.cmds.clear();
        self.held = held;
    }

    /// The native request a KV command is, and the host's buffer size; or its refusal.
    fn io_request(&mut self, sqe: &Sqe, data: Bytes) -> Result<(Request, usize), Answer> {
        let cmd = match KvCommand::decode(sqe) {
            Ok(Some(c)) => c,
            Ok(None) => return Err(Answer::status(NvmeStatus::error(0, 0x01))),
            Err(s) => return Err(Answer::status(s)),
        };
        if !self.may_use(sqe.nsid) {
            return Err(Answer::status(invalid_namespace()));
        }
        let key = Bytes::copy_from_slice(&cmd.key);
        let request = match cmd.opcode {
            KvOpcode::Store => {
                let mode = match cmd.options & (STORE_ONLY_IF_ABSENT | STORE_ONLY_IF_PRESENT) {
                    0 => StoreMode::Always,
                    STORE_ONLY_IF_ABSENT => StoreMode::OnlyIfAbsent,
                    STORE_ONLY_IF_PRESENT => StoreMode::OnlyIfPresent,
                    _ => return Err(Answer::status(invalid_field())),
                };
                if cmd.size as usize != data.len() {
                    // A value larger than the device takes was not fetched; the data
                    // the host sent must be the size it gave.
                    return Err(Answer::status(
                        match cmd.size > self.target.shared.config.max_value_len {
                            true => cerberus_proto::nvme::kv_status::invalid_value_size(),
                            false => invalid_field(),
                        },
                    ));
                }
                Request::Store {
                    key,
                    value: data,
                    mode,
                    sync: self.target.config.sync_stores,
                }
            }
            KvOpcode::Retrieve => Request::Retrieve { key },
            KvOpcode::Exist => Request::Exist { key },
            KvOpcode::Delete => Request::Delete { key },
            KvOpcode::List => Request::List {
                start: key,
                start_exclusive: false,
                max_keys: self.target.shared.config.max_list_keys,
            },
        };
        Ok((request, cmd.size as usize))
    }

    /// Flush (NVM command set opcode 00h, which a KV host may send too): every Store
    /// completed before it is made durable (the engine's value log synced, on a worker;
    /// syncs asked for at once share one, `Db::sync_log`). The log is the device's, so a
    /// namespace's Flush syncs all. A Flush names one of the host's namespaces: through it
    /// the gate weighs it (its shares, its limit). Nsid FFFFFFFFh is refused, as Identify
    /// says (VWC's flush behavior 10b): it names no namespace, so any host could sync the
    /// device's log, which every tenant's writes wait for, past its own limit.
    fn flush_cache(&mut self, sqe: Sqe, cost: usize) {
        if !self.may_use(sqe.nsid) {
            self.flight
                .finish_now(sqe, Answer::status(invalid_namespace()), cost);
            return;
        }
        self.run_held();
        let shared = self.target.shared.clone();
        let done = self.flight.completer(cost);
        let queued = self.target.workers.submit(Box::new(move || {
            let status = match shared.db.sync_log() {
                Ok(()) => NvmeStatus::SUCCESS,
                Err(e) => {
                    tracing::warn!(error = %e, "NVMe/TCP: a Flush could not sync the log");
                    NvmeStatus::error(0, 0x06)
                }
            };
            done.send(sqe, Answer::status(status));
        }));
        if !queued {
            self.not_queued(sqe, cost);
        }
    }

    /// Whether this queue's host was granted `nsid` (read again once if not: a namespace
    /// created or granted since the queue connected).
    pub(super) fn may_use(&mut self, nsid: u32) -> bool {
        let Some(q) = self.queue.as_mut() else {
            return false;
        };
        if q.visible.contains(&nsid) {
            return true;
        }
        let host = q.ctrl.lock().hostnqn.clone();
        q.visible = self.target.visible(&host);
        q.visible.contains(&nsid)
    }

    /// A KV Store of a value that fits the device, or a vendor Submit of a frame it reads,
    /// whose data is not in its capsule.
    pub(super) fn wants_data(&self, sqe: &Sqe, data: &Bytes) -> bool {
        let size = sqe.cdw(10);
        let max_body = self.target.shared.config.max_frame_body();
        if data.is_empty() && super::vendor_state::wants_data(sqe, max_body) {
            return true;
        }
        sqe.opcode == cerberus_proto::nvme::KvOpcode::Store as u8
            && data.is_empty()
            && size > 0
            && size <= self.target.shared.config.max_value_len
    }

    /// Whether a command's data may be asked for (R2T): its namespace is granted to this
    /// queue's host, or it is the device's own (vendor commands of the admin) and the host
    /// is an admin host.
    pub(super) fn may_fetch(&mut self, nsid: u32) -> bool {
        if nsid == cerberus_proto::DEVICE_NSID {
            return self.admin_host();
        }
        self.may_use(nsid)
    }

    /// Whether this queue's host is in `nvme.admin_hosts`.
    pub(super) fn admin_host(&self) -> bool {
        self.queue.as_ref().is_some_and(|q| {
            let host = &q.ctrl.lock().hostnqn;
            self.target.config.admin_hosts.iter().any(|h| h == host)
        })
    }

    /// Runs `request` here or on a worker, as the native port runs its commands (metrics
    /// included); its answer goes back to this connection by its command id.
    fn execute(&mut self, sqe: Sqe, request: Request, buffer: usize, cost: usize) {
        let cmd = Command {
            cid: u32::from(sqe.cid),
            nsid: sqe.nsid,
            request,
        };
        let arrived = quanta::Instant::now();
        let shared = self.target.shared.clone();
        if let Request::Store { .. } = &cmd.request {
            if shared.batchable(&cmd) {
                self.hold_store(sqe, cmd, cost, arrived);
                return;
            }
        }
        let get = matches!(&cmd.request, Request::Retrieve { .. });
        if get && shared.batches_get(&cmd) && shared.runs_inline(&cmd) && !self.store_first(&cmd) {
            // Held while the connection has more at hand, then carried out together
            // (`run_held`): at most 64, of one namespace.
            if self.held.cmds.first().is_some_and(|c| c.nsid != cmd.nsid) {
                self.run_held();
            }
            if self.held.is_empty() {
                // The batch comes after the puts of its namespace held before it, this
                // queue's and the other connections' of this thread.
                self.puts.store_for(&shared, cmd.nsid);
            }
            self.held.cmds.push(cmd);
            self.held.answering.push(Answering {
                sqe,
                buffer,
                cost,
                arrived,
            });
            if self.held.cmds.len() >= MAX_HELD {
                self.run_held();
            }
            return;
        }
        // Anything else (a conditional Store among them) comes after what is held: here, or
        // with the command on a worker when the engine would hold the store up.
        self.run_held();
        let store_first = self.store_first(&cmd);
        if store_first {
            shared.metrics.writes_off_loop.inc();
        } else {
            self.puts.store_for(&shared, cmd.nsid);
            if shared.runs_inline(&cmd) {
                // As on the native port: a point command on files is answered on this
                // network thread, without two hand-offs between threads.
                let answer = reply(answer(&shared, cmd, &self.iters, arrived), buffer);
                self.flight.finish_now(sqe, answer, cost);
                return;
            }
        }
        let iters = self.iters.clone();
        let done = self.flight.completer(cost);
        let core = crate::scheduler::current_core();
        let nsid = cmd.nsid;
        let job = Box::new(move || {
            let resp =
                crate::scheduler::on_behalf_of(core, || answer(&shared, cmd, &iters, arrived));
            done.send(sqe, reply(resp, buffer));
        });
        // After the held puts it must follow. Other commands of a queue keep no order
        // (NVMe's rule: a host that needs one waits for the completion).
        let queued = if store_first {
            self.puts
                .follow(&self.target.shared, nsid, self.order_id, job)
        } else {
            self.target.workers.submit(job)
        };
        if !queued {
            self.not_queued(sqe, cost);
        }
    }

    /// Holds an unconditional Store with the puts of this network thread's connections; its
    /// answer comes back through `flight` once they are stored.
    fn hold_store(&mut self, sqe: Sqe, cmd: Command, cost: usize, arrived: quanta::Instant) {
        // Held Retrieves were read before it: they must not see it.
        self.run_held();
        let reply = PutReply::Nvme(Box::new(StoreReply {
            sqe,
            cost,
            done: self.flight.done_tx.clone(),
        }));
        let put = HeldPut {
            cmd,
            arrived,
            reply,
            iters: self.iters.clone(),
            from: self.order_id,
        };
        self.puts.hold(put, &self.target.shared);
    }

    /// Whether `cmd` must run on a worker after what it must follow (`HeldPuts::follow`),
    /// as natively.
    pub(super) fn store_first(&self, cmd: &Command) -> bool {
        let shared = &self.target.shared;
        self.puts.must_follow(shared, cmd.nsid, self.order_id)
    }

    /// Stores the held puts of the namespaces this queue may use, its own Stores among them
    /// (a queue closing, or with commands waiting for the budget its Stores hold).
    pub(super) fn store_own_puts(&self) {
        let Some(q) = self.queue.as_ref().filter(|q| q.qid != 0) else {
            return;
        };
        let shared = &self.target.shared;
        shared.scheduler.busy(false, || {
            for &ns in &q.visible {
                self.puts.store_for(shared, ns);
            }
        });
    }
}

impl Conn {
    /// A job the workers refused (the device is stopping): answered so, its bytes given
    /// back by its dropped completer.
    pub(super) fn not_queued(&mut self, sqe: Sqe, cost: usize) {
        self.flight.not_queued(cost);
        let stopping = nvme_status(Status::ShuttingDown);
        self.flight.finish_now(sqe, Answer::status(stopping), 0);
    }
}

/// The NVM command set's Flush.
const FLUSH: u8 = 0x00;

/// Retrieves held for one engine call at most (as the native port's batches).
const MAX_HELD: usize = 64;

/// Where a held Store's answer goes (`put_batch::PutReply::Nvme`): its queue's completions.
struct StoreReply {
    sqe: Sqe,
    cost: usize,
    done: tokio::sync::mpsc::UnboundedSender<Done>,
}

impl StoreAnswer for StoreReply {
    /// Completes the Store with `resp`'s status, its budget freed when its queue takes it.
    fn send(self: Box<Self>, resp: Response) {
        let answer = reply(resp, 0);
        // Gone only if the connection closed meanwhile.
        let _ = self.done.send(Done {
            sqe: self.sqe,
            answer,
            cost: self.cost,
            away: None,
        });
    }
}

/// Values below this may be slices of a buffer the engine shares among many records (its
/// memtable's chunks are 64 KiB).
const SHARED_CHUNK: usize = 64 << 10;

/// A native response as the KV command set answers it (`buffer`: the host's bytes).
fn reply(resp: Response, buffer: usize) -> Answer {
    if !resp.status.is_success() {
        return Answer::status(nvme_status(resp.status));
    }
    match resp.reply {
        Reply::Value(v) => Answer::Done {
            status: NvmeStatus::SUCCESS,
            dw0: u32::try_from(v.len()).unwrap_or(u32::MAX),
            dw1: 0,
            // Copied when cut: a slice would keep the whole value's memory alive (a host
            // asking a byte of many large values, not counted at their size). Copied when
            // small too: it may be a slice of the memtable's shared chunks, which a host
            // that reads slowly would keep alive at the chunk's size, not the value's.
            data: Some(match v.len() > buffer {
                true => Bytes::copy_from_slice(&v[..buffer]),
                false if v.len() < SHARED_CHUNK => Bytes::copy_from_slice(&v),
                false => v,
            }),
        },
        Reply::Keys { keys, .. } => Answer::data(list_buffer(&keys, buffer)),
        _ => Answer::ok(0),
    }
}

/// A native status as the KV command set (type 1) or the generic set (type 0) says it.
pub(super) fn nvme_status(s: Status) -> NvmeStatus {
    let code = s.code();
    match code {
        0x85..=0x89 => NvmeStatus::error(1, code as u8),
        0x01 | 0x02 | 0x0B | 0x81 => NvmeStatus::error(0, code as u8),
        // A cluster move's fence: the generic set's "Namespace is Write Protected".
        _ if s == Status::NamespaceReadOnly => NvmeStatus::error(0, 0x20),
        // Namespace not ready (retry may succeed) while stopping; else an internal error.
        _ if s == Status::ShuttingDown => NvmeStatus {
            dnr: false,
            ..NvmeStatus::error(0, 0x82)
        },
        _ => NvmeStatus::error(0, 0x06),
    }
}

/// The KV List data (KV Command Set 1.0): the number of keys returned (4 bytes), then per
/// key its length (2 bytes) and its bytes, each entry padded to a multiple of 4 bytes;
/// as many whole entries as fit in `buffer` bytes.
pub(crate) fn list_buffer(keys: &[Bytes], buffer: usize) -> Vec<u8> {
    let mut out = vec![0u8; 4];
    let mut n = 0u32;
    for k in keys {
        let entry = (2 + k.len()).next_multiple_of(4);
        if out.len() + entry > buffer || k.len() > usize::from(u16::MAX) {
            break;
        }
        out.extend_from_slice(&(k.len() as u16).to_le_bytes());
        out.extend_from_slice(k);
        out.resize(out.len().next_multiple_of(4), 0);
        n += 1;
    }
    out[..4].copy_from_slice(&n.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_data_holds_whole_padded_entries() {
        let keys = [Bytes::from_static(b"a"), Bytes::from_static(b"bcdef")];
        let d = list_buffer(&keys, 4096);
        // count, then [len 1, 'a', pad], [len 5, "bcdef", pad to 8].
        assert_eq!(d.len(), 4 + 4 + 8);
        assert_eq!(&d[..4], &2u32.to_le_bytes());
        assert_eq!(&d[4..7], &[1, 0, b'a']);
        assert_eq!(&d[8..15], &[5, 0, b'b', b'c', b'd', b'e', b'f']);
        // A buffer that holds the first entry only.
        assert_eq!(&list_buffer(&keys, 12)[..4], &1u32.to_le_bytes());
        assert_eq!(list_buffer(&keys, 0), vec![0, 0, 0, 0]);
    }

    #[test]
    fn native_statuses_become_the_sets() {
        assert_eq!(
            nvme_status(Status::KeyNotExist),
            cerberus_proto::nvme::kv_status::key_does_not_exist()
        );
        assert_eq!(nvme_status(Status::KeyExists), NvmeStatus::error(1, 0x89));
        assert_eq!(
            nvme_status(Status::InvalidNamespace),
            NvmeStatus::error(0, 0x0B)
        );
        assert_eq!(
            nvme_status(Status::CapacityExceeded),
            NvmeStatus::error(0, 0x81)
        );
        assert_eq!(nvme_status(Status::Corrupted), NvmeStatus::error(0, 0x06));
        assert_eq!(
            nvme_status(Status::NamespaceReadOnly),
            NvmeStatus::error(0, 0x20)
        );
        assert!(!nvme_status(Status::ShuttingDown).dnr);
    }
}
