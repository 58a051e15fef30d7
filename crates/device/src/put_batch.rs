//! Puts held back to be stored together. Unconditional puts that do not wait for durability,
//! read on one network thread from any of its connections, are held until every connection
//! that was ready has had its turn (or a command after them on the same connection needs
//! them stored), then stored with one engine write per namespace: one log append for many
//! clients, as Redis writes its append-only file once per turn of its event loop.

use crate::connection::{answer, Outbox};
use crate::dispatch::Shared;
use crate::iterators::ConnIterators;
use crate::workers::panic_message;
use bytes::Bytes;
use cerberus_proto::{Command, Opcode, Reply, Request, Response, Status};
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
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
    held: Mutex<(Vec<HeldPut>, usize)>,
    wake: Notify,
}

impl HeldPuts {
    pub fn hold(&self, put: HeldPut, shared: &Shared) {
        let full = {
            let mut held = self.held.lock();
            if let Request::Store { key, value, .. } = &put.cmd.request {
                held.1 += key.len() + value.len();
            }
            held.0.push(put);
            if held.0.len() == 1 {
                self.wake.notify_one();
            }
            held.1 >= HELD_BYTES
        };
        if full {
            self.store(shared);
        }
    }

    /// Stores what is held and answers each put.
    pub fn store(&self, shared: &Shared) {
        let puts = {
            let mut held = self.held.lock();
            held.1 = 0;
            std::mem::take(&mut held.0)
        };
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
            self.store(&shared);
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
    let outcome = match catch_unwind(AssertUnwindSafe(|| shared.store_all(nsid, &kvs))) {
        Ok(o) => o,
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            tracing::error!(nsid, panic = msg, "a batch of puts panicked");
            Err((
                Status::InternalError,
                format!("the command panicked in the device ({msg}); the device is still serving"),
            ))
        }
    };
    let opcode = Opcode::Store as u8;
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
