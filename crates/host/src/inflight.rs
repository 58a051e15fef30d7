//! The commands in flight on one connection: a completion slot per command id, the bound on
//! how many are in flight and on a request's size (the device's limits, once known), and why
//! the connection closed. Both ways of driving a connection (tasks on the runtime, or the
//! callers' own threads in `direct`) complete commands through it.

use crate::{Error, Result};
use cerberus_proto::{Frame, Response};
use parking_lot::Mutex;
use std::collections::HashMap;
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
    pending: HashMap<u32, Pending>,
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
    /// The device's `max_frame_body`, once known: a larger request would make the device
    /// close the connection under every other caller, so it is refused here instead.
    max_request_body: OnceLock<u32>,
    /// The device's `max_key_len` and `max_value_len`, once known: a put too large to send is
    /// refused with the device's own words for its key or value, not the frame's size.
    kv_limits: OnceLock<(u32, u32)>,
    /// Largest completion body the reader takes.
    pub(crate) max_response_body: AtomicU32,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared {
            state: Mutex::new(State::default()),
            next_cid: AtomicU32::new(1),
            limit: OnceLock::new(),
            max_request_body: OnceLock::new(),
            kv_limits: OnceLock::new(),
            max_response_body: AtomicU32::new(MAX_RESPONSE_BODY),
        }
    }

    pub(crate) fn close_reason(&self) -> Option<String> {
        self.state.lock().closed.clone()
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

    /// Requests with a body over `max` are refused here from now on (the device's
    /// `max_frame_body`: a larger request would make it close the connection).
    pub(crate) fn set_max_request_body(&self, max: u32) {
        let _ = self.max_request_body.set(max);
    }

    pub(crate) fn set_kv_limits(&self, max_key_len: u32, max_value_len: u32) {
        let _ = self.kv_limits.set((max_key_len, max_value_len));
    }

    /// Refuses a key or a value the device would refuse, in the device's words.
    pub(crate) fn check_key_value(&self, key: Option<&[u8]>, value: Option<&[u8]>) -> Result<()> {
        let Some(&(max_key, max_value)) = self.kv_limits.get() else {
            return Ok(());
        };
        if let Some(k) = key.filter(|k| k.len() > max_key as usize) {
            return Err(Error::InvalidKeySize(format!(
                "key is {} bytes; this device accepts keys of 1 to {max_key} bytes (max_key_len)",
                k.len()
            )));
        }
        if let Some(v) = value.filter(|v| v.len() > max_value as usize) {
            return Err(Error::InvalidValueSize(format!(
                "value is {} bytes; this device accepts values up to {max_value} bytes \
                 (max_value_len)",
                v.len()
            )));
        }
        Ok(())
    }

    pub(crate) fn max_request_body(&self) -> Option<u32> {
        self.max_request_body.get().copied()
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
