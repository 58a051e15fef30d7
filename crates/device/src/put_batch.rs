//! Puts held back to be stored together. Unconditional puts that do not wait for durability,
//! read on one network thread from any of its connections, are held until every connection
//! that was ready has had its turn (or a command after them on the same connection needs
//! them stored), then stored with one engine write per namespace: one log append for many
//! clients, as Redis writes its append-only file once per turn of its event loop.

use crate::dispatch::Shared;
use crate::iterators::ConnIterators;
use crate::workers::{answer, catch_command, Outbox};
use bytes::Bytes;
use cerberus_proto::{Command, Opcode, Reply, Request, Response, Status};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::{Notify, OwnedSemaphorePermit};

/// Held puts are stored at once when they reach this many bytes.
const HELD_BYTES: usize = 1 << 20;

/// A put waiting to be stored, with what its answer needs.
pub struct HeldPut {
    pub cmd: Command,
    pub permit: OwnedSemaphorePermit,
    pub arrived: quanta::Instant,
    pub reply: Outbox,
    pub iters: Arc<ConnIterators>,
}

/// The puts held on one network thread.
#[derive(Default)]
pub struct HeldPuts {
    held: Mutex<Held>,
    wake: Notify,
}

#[derive(Default)]
struct Held {
    puts: Vec<HeldPut>,
    /// Key and value bytes of `puts`.
    bytes: usize,
}

impl HeldPuts {
    pub fn hold(&self, put: HeldPut, shared: &Shared) {
        let full = {
            let mut held = self.held.lock();
            if let Request::Store { key, value, .. } = &put.cmd.request {
                held.bytes += key.len() + value.len();
            }
            held.puts.push(put);
            if held.puts.len() == 1 {
                self.wake.notify_one();
            }
            held.bytes >= HELD_BYTES
        };
        if full {
            self.store(shared);
        }
    }

    /// Stores what is held and answers each put.
    pub fn store(&self, shared: &Shared) {
        let puts = std::mem::take(&mut *self.held.lock()).puts;
        if puts.is_empty() {
            return;
        }
        // One write per namespace, in the order the puts came.
        let mut groups: Vec<(u32, Vec<HeldPut>)> = Vec::new();
        for p in puts {
            match groups.iter_mut().find(|(ns, _)| *ns == p.cmd.nsid) {
                Some((_, g)) => g.push(p),
                None => groups.push((p.cmd.nsid, vec![p])),
            }
        }
        for (nsid, group) in groups {
            store_group(shared, nsid, group);
        }
    }

    /// Runs on each network thread: stores the held puts once the connections that were
    /// ready with them have all been served.
    pub async fn run(self: Arc<Self>, shared: Arc<Shared>) {
        loop {
            self.wake.notified().await;
            // To the back of the queue: every connection ready now is served first.
            tokio::task::yield_now().await;
            shared.scheduler.busy(false, || self.store(&shared));
        }
    }
}

fn store_group(shared: &Shared, nsid: u32, mut group: Vec<HeldPut>) {
    if group.len() == 1 {
        // One put alone takes the path of any other command.
        if let Some(p) = group.pop() {
            let resp = answer(shared, p.cmd, &p.iters, p.arrived);
            let _ = p.reply.send((resp, Some(p.permit)));
        }
        return;
    }
    let kvs: Vec<(Bytes, Bytes)> = group
        .iter()
        .filter_map(|p| match &p.cmd.request {
            Request::Store { key, value, .. } => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect();
    let opcode = Opcode::Store as u8;
    let outcome = catch_command(nsid, opcode, || shared.store_all(nsid, &kvs)).and_then(|r| r);
    for p in group {
        let resp = match &outcome {
            Ok(()) => Response {
                cid: p.cmd.cid,
                nsid,
                opcode,
                status: Status::Success,
                reply: Reply::Empty,
            },
            Err((status, msg)) => Response::error(p.cmd.cid, nsid, opcode, *status, msg.clone()),
        };
        shared
            .metrics
            .record(nsid, opcode, outcome.is_ok(), p.arrived.elapsed());
        let _ = p.reply.send((resp, Some(p.permit)));
    }
}
