//! The reads of a connection its callers' own threads drive (`direct` on the native wire,
//! `nvme_direct` on NVMe/TCP). The first thread to find the read side free leads: it reads
//! and hands each completion to its caller until its own has come; the others wait on a
//! condition variable and look again whenever the leader has handed something out or stepped
//! down.

use crate::error::{Error, Result};
use crate::inflight::Shared;
use bytes::BytesMut;
use cerberus_proto::Response;
use parking_lot::{Condvar, Mutex};
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a leader blocks in one read before it looks at its deadline again (the
/// stream's read timeout), and a follower waits before it looks again.
pub(crate) const READ_SLICE: Duration = Duration::from_millis(200);

/// Bytes a leader reads at most in one system call.
pub(crate) const READ_CHUNK: usize = 64 << 10;

/// A caller's completion, on its way.
pub(crate) type Slot = oneshot::Receiver<Result<Response>>;

/// What a waiting caller looks at: `Some` once it is done waiting.
pub(crate) type Ready<'a, T> = dyn FnMut() -> Option<Result<T>> + 'a;

/// The read side of a connection (its state `S`, held by the leader) and the turns followers
/// wait on.
pub(crate) struct Relay<S> {
    reading: Mutex<S>,
    /// Bumped whenever followers should look again.
    turn: Mutex<u64>,
    changed: Condvar,
}

impl<S> Relay<S> {
    pub(crate) fn new(state: S) -> Self {
        Relay {
            reading: Mutex::new(state),
            turn: Mutex::new(0),
            changed: Condvar::new(),
        }
    }

    /// Tells the followers to look again.
    pub(crate) fn bump(&self) {
        *self.turn.lock() += 1;
        self.changed.notify_all();
    }

    /// Waits until `ready` says something. Whenever the read side is free, this thread
    /// leads with `lead` (given the read state and `ready`; it returns once `ready` does),
    /// then wakes the followers: one of them may have to read now.
    pub(crate) fn drive<T>(
        &self,
        deadline: Option<Instant>,
        ready: &mut Ready<'_, T>,
        mut lead: impl FnMut(&mut S, &mut Ready<'_, T>) -> Result<T>,
    ) -> Result<T> {
        loop {
            let seen = *self.turn.lock();
            if let Some(r) = ready() {
                return r;
            }
            if let Some(mut state) = self.reading.try_lock() {
                let r = lead(&mut state, ready);
                drop(state);
                self.bump();
                return r;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::Timeout);
            }
            let mut turn = self.turn.lock();
            if *turn == seen {
                self.changed.wait_for(&mut turn, READ_SLICE);
            }
        }
    }
}

/// `slot`'s completion if it has come (a closed slot: the connection closed).
pub(crate) fn completed(slot: &mut Slot) -> Option<Result<Response>> {
    match slot.try_recv() {
        Ok(r) => Some(r),
        Err(oneshot::error::TryRecvError::Closed) => Some(Err(Error::ConnectionClosed)),
        Err(oneshot::error::TryRecvError::Empty) => None,
    }
}

/// One read from `stream` into `buf` (through `chunk`), as a leader does it: `Ok` when it
/// read something or its slice passed with the deadline still ahead; the end of the stream
/// or an error closes the connection (`unit` names what a partial read was in the middle
/// of).
pub(crate) fn read_more(
    stream: &TcpStream,
    chunk: &mut [u8],
    buf: &mut BytesMut,
    shared: &Shared,
    deadline: Option<Instant>,
    unit: &str,
) -> Result<()> {
    match (&*stream).read(chunk) {
        Ok(0) => {
            let why = if buf.is_empty() {
                "the device closed the connection".to_string()
            } else {
                format!("the device closed the connection in the middle of a {unit}")
            };
            shared.close(why);
            Err(Error::ConnectionClosed)
        }
        Ok(n) => {
            buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
            Ok(())
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            match deadline.is_some_and(|d| Instant::now() >= d) {
                true => Err(Error::Timeout),
                false => Ok(()),
            }
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => Ok(()),
        Err(e) => {
            shared.close(format!("reading from the device: {e}"));
            Err(Error::ConnectionClosed)
        }
    }
}
