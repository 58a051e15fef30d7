//! The commands in flight on one connection: a completion slot per command id, the bound on
//! how many are in flight and on a request's size (the device's limits, once known), and why
//! the connection closed. Both ways of driving a connection (tasks on the runtime, or the
//! callers' own threads in `direct` and `nvme_direct`) complete commands through it.

use crate::error::{Error, Result};
use cerberus_proto::{key_size_refusal, value_size_refusal, Frame, Identify, Response};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

/// Largest completion body accepted (raised to what the device's Identify allows). It only
/// stops a corrupt length from making the reader buffer gigabytes.
pub(crate) const MAX_RESPONSE_BODY: u32 = 64 << 20;

/// What a caller waits on: the completion, or why its frame could not be read.
type Slot = oneshot::Sender<Result<Response>>;

struct Pending {
    slot: Slot,
    /// Held until the completion arrives (not until the caller stops waiting): a command the
    /// caller gave up on is still in flight at the device.
    _permit: Option<OwnedSemaphorePermit>,
}

#[derive(Default)]
struct State {
    pending: FxHashMap<u32, Pending>,
    /// Why the connection closed, once it has.
    closed: Option<String>,
    tasks: Vec<AbortHandle>,
}

/// One connection's commands in flight, shared by its callers, its reader and its writer.
pub(crate) struct Shared {
    state: Mutex<State>,
    next_cid: AtomicU32,
    /// Bounds commands in flight to the device's `max_inflight`, once known.
    limit: OnceLock<Arc<Semaphore>>,
    /// The device's limits, once its Identify answered: a request over its `max_frame_body`
    /// would make it close the connection under every other caller, so it is refused here.
    device: OnceLock<Identify>,
    /// Largest completion body the reader takes.
    pub(crate) max_response_body: AtomicU32,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared {
            state: Mutex::new(State::default()),
            next_cid: AtomicU32::new(1),
            limit: OnceLock::new(),
            device: OnceLock::new(),
            max_response_body: AtomicU32::new(MAX_RESPONSE_BODY),
        }
    }

    pub(crate) fn close_reason(&self) -> Option<String> {
        self.state.lock().closed.clone()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed.is_some()
    }

    /// Forgets command `cid`, registered and never sent (its caller gave up waiting for
    /// room on the link): its slot and in-flight place go back.
    pub(crate) fn abandon(&self, cid: u32) {
        let gone = self.state.lock().pending.remove(&cid);
        drop(gone);
    }

    /// Closes the connection for everyone; the first reason given is kept.
    pub(crate) fn close(&self, reason: impl Into<String>) {
        let (pending, tasks) = {
            let mut st = self.state.lock();
            if st.closed.is_none() {
                st.closed = Some(reason.into());
            }
            (
                std::mem::take(&mut st.pending),
                std::mem::take(&mut st.tasks),
            )
        };
        if let Some(sem) = self.limit.get() {
            sem.close();
        }
        // Dropping the slots wakes their callers with `ConnectionClosed`.
        drop(pending);
        for t in tasks {
            t.abort();
        }
    }

    pub(crate) fn add_task(&self, task: AbortHandle) {
        let mut st = self.state.lock();
        if st.closed.is_some() {
            task.abort();
        } else {
            st.tasks.push(task);
        }
    }

    /// Hands a completion to whoever waits for its command id.
    pub(crate) fn complete(&self, frame: Frame) {
        let cid = frame.header.cid;
        let Some(p) = self.state.lock().pending.remove(&cid) else {
            // Not a command of ours (or a duplicate completion): nobody to tell.
            return;
        };
        // The body is checked per command: a malformed one fails that call, not the stream,
        // since the framing around it is intact.
        let result = Response::decode(&frame).map_err(Error::from);
        let _ = p.slot.send(result);
    }

    /// From now on, at most `max_inflight` commands are in flight (0: no bound).
    pub(crate) fn set_max_inflight(&self, max_inflight: u32) {
        if max_inflight == 0 {
            return;
        }
        let _ = self
            .limit
            .set(Arc::new(Semaphore::new(max_inflight as usize)));
        if self.state.lock().closed.is_some() {
            // Closed before the limit existed: make sure nobody waits on it.
            if let Some(sem) = self.limit.get() {
                sem.close();
            }
        }
    }

    /// Keeps the device's limits as its Identify gave them.
    pub(crate) fn set_device(&self, id: Identify) {
        let _ = self.device.set(id);
    }

    /// The device's `max_frame_body`, once known (0 in its Identify: it did not say).
    pub(crate) fn max_request_body(&self) -> Option<u32> {
        self.device
            .get()
            .map(|d| d.max_frame_body)
            .filter(|&m| m > 0)
    }

    /// Why the device would refuse a put of `key` and `value`, in its own words, if its
    /// limits are known and the key or the value is over them.
    pub(crate) fn store_refusal(&self, key: &[u8], value: &[u8]) -> Option<Error> {
        let d = self.device.get()?;
        if d.max_key_len > 0 && key.len() > d.max_key_len as usize {
            return Some(Error::InvalidKeySize(key_size_refusal(
                key.len(),
                d.max_key_len,
            )));
        }
        if d.max_value_len > 0 && value.len() > d.max_value_len as usize {
            let len = value.len() as u64;
            return Some(Error::InvalidValueSize(value_size_refusal(
                len,
                d.max_value_len,
            )));
        }
        None
    }

    /// Whether every place among the commands in flight is taken.
    pub(crate) fn at_limit(&self) -> bool {
        self.limit.get().is_some_and(|l| l.available_permits() == 0)
    }

    /// A place among the commands in flight, once one is free (none when there is no bound).
    pub(crate) async fn permit(&self) -> Result<Option<OwnedSemaphorePermit>> {
        match self.limit.get() {
            Some(sem) => Ok(Some(
                sem.clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| Error::ConnectionClosed)?,
            )),
            None => Ok(None),
        }
    }

    /// Picks a command id not in flight, lets `send` stamp and queue the frame under it (false:
    /// the stream is gone), and registers `slot` for its completion, all under one lock.
    pub(crate) fn register(
        &self,
        slot: Slot,
        permit: Option<OwnedSemaphorePermit>,
        send: impl FnOnce(u32) -> bool,
    ) -> Result<()> {
        let mut st = self.state.lock();
        if st.closed.is_some() {
            return Err(Error::ConnectionClosed);
        }
        let cid = loop {
            let cid = self.next_cid.fetch_add(1, Ordering::Relaxed);
            if !st.pending.contains_key(&cid) {
                break cid;
            }
        };
        if !send(cid) {
            return Err(Error::ConnectionClosed);
        }
        st.pending.insert(
            cid,
            Pending {
                slot,
                _permit: permit,
            },
        );
        Ok(())
    }
}

/// Closes the connection when a task ends however it ends (returned, aborted, or dropped
/// with its runtime), so no caller waits on a task that is gone.
pub(crate) struct CloseOnExit(pub(crate) Arc<Shared>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        self.0.close("the connection's tasks stopped");
    }
}
