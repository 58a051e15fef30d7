//! A connection's outbox and the write side that empties it: completions, encoded by whoever answers them straight
//! into one buffer, written in few writes, each under a deadline, with a last guard on their
//! size.
//!
//! The buffer replaced a channel of `Response`s to the writer: a get's reply went through a
//! channel slot and a wake-up of the connection's own task (reader and writer share it, see
//! `read_then_write`), which tokio answered with one more poll of the task. Now a reply is
//! encoded under the outbox's lock (uncontended but for worker threads' replies) and the
//! writer is woken only when it waits and the reply came from elsewhere. The order of
//! replies is the order they were sent, as before.
//!
//! Replies of at least `COUNTED_FROM` bytes count in the device's held bytes
//! (`max_held_bytes`, `crate::held`) from the moment they are encoded until they are written
//! (the connection's large request frames count for as long as their bodies live,
//! `held::counted`). They are counted under the lock a reply takes anyway; a small reply adds
//! a comparison of its length and nothing else.

use crate::dispatch::Shared;
use crate::held::{HeldBytes, COUNTED_FROM};
use bytes::BytesMut;
use cerberus_proto::{Response, Status, HEADER_LEN};
use parking_lot::Mutex;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OwnedSemaphorePermit};

/// Where a connection's replies go: each with the in-flight permit of its command, given
/// back once the reply is written, so replies a client does not read stop its commands.
/// Cloned by whatever answers later (a worker's job, a held put); the writer ends once every
/// clone is gone and all they sent is written.
pub(crate) struct Outbox {
    inner: Arc<Inner>,
}

/// The writer's end of an [`Outbox`].
pub(crate) struct Replies {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    /// The device's `max_reply_bytes` (see [`encode`]).
    max_body: u32,
    /// Set once the writer has given up; `gone` wakes those waiting for it.
    closed: AtomicBool,
    gone: Notify,
    /// The device's held bytes.
    held: Arc<HeldBytes>,
}

#[derive(Default)]
struct State {
    /// Replies encoded and not yet taken by the writer.
    out: BytesMut,
    /// Their commands' permits.
    permits: Vec<OwnedSemaphorePermit>,
    /// The writer, when it waits for replies.
    waker: Option<Waker>,
    /// Outboxes alive.
    senders: usize,
    /// Bytes of the replies in `out` counted in the device's held bytes.
    counted: usize,
}

/// The writer is gone: the reply was dropped, with its permit.
#[derive(Debug)]
pub(crate) struct WriterGone;

/// A connection's outbox and the writer's end of it; replies longer than `max_body` are
/// replaced by a `ReplyTooLarge` error.
pub(crate) fn outbox(max_body: u32, held: Arc<HeldBytes>) -> (Outbox, Replies) {
    let inner = Arc::new(Inner {
        state: Mutex::new(State {
            senders: 1,
            ..State::default()
        }),
        max_body,
        closed: AtomicBool::new(false),
        gone: Notify::new(),
        held,
    });
    let replies = Replies {
        inner: inner.clone(),
    };
    (Outbox { inner }, replies)
}

impl Outbox {
    /// Queues `r` for the writer, waking it if it waits.
    pub(crate) fn send(
        &self,
        (r, permit): (Response, Option<OwnedSemaphorePermit>),
    ) -> Result<(), WriterGone> {
        if let Some(w) = self.push(&r, permit, true)? {
            w.wake();
        }
        Ok(())
    }

    /// [`Outbox::send`] without waking the writer: only for the connection's own reader
    /// answering on its task, whose writer is polled right after it in the same poll of the
    /// task (`read_then_write`). A wake-up there would cost the task one more poll.
    pub(crate) fn send_here(
        &self,
        r: &Response,
        permit: OwnedSemaphorePermit,
    ) -> Result<(), WriterGone> {
        self.push(r, Some(permit), false).map(drop)
    }

    /// Encodes `r` into the buffer; the writer's waker if it waits for it and `wake`.
    fn push(
        &self,
        r: &Response,
        permit: Option<OwnedSemaphorePermit>,
        wake: bool,
    ) -> Result<Option<Waker>, WriterGone> {
        let mut st = self.inner.state.lock();
        // Checked under the lock, which the writer's end takes after setting it: nothing is
        // left in the buffer once it has emptied it.
        if self.inner.closed.load(Ordering::Relaxed) {
            return Err(WriterGone);
        }
        let mark = st.out.len();
        encode(r, &mut st.out, self.inner.max_body);
        let len = st.out.len() - mark;
        if len >= COUNTED_FROM {
            // It exists: counted whatever the budget (the reader waits before its next
            // frame instead).
            self.inner.held.take(len);
            st.counted += len;
        }
        st.permits.extend(permit);
        // A reply sent here leaves the waker in place: the writer, polled next, may take
        // the buffer and wait again, and a reply from elsewhere must still find it.
        Ok(if wake { st.waker.take() } else { None })
    }

    /// Whether the writer is gone (a plain load: [`Outbox::closed`] waits for it).
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Completes once the writer has given up (a client that does not take its replies, or
    /// a failed write).
    pub(crate) async fn closed(&self) {
        loop {
            // Made before the check: a `notify_waiters` after it is not missed.
            let notified = self.inner.gone.notified();
            if self.inner.closed.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

impl Clone for Outbox {
    fn clone(&self) -> Outbox {
        self.inner.state.lock().senders += 1;
        Outbox {
            inner: self.inner.clone(),
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        let waker = {
            let mut st = self.inner.state.lock();
            st.senders -= 1;
            match st.senders {
                0 => st.waker.take(),
                _ => None,
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl Replies {
    /// Moves the replies sent into `out` (empty), their permits into `permits` and their
    /// counted bytes into `counted`: `true` once there were some, `false` once every outbox
    /// is gone and nothing is left.
    fn take(
        &self,
        out: &mut BytesMut,
        permits: &mut Vec<OwnedSemaphorePermit>,
        counted: &mut Counted,
        cx: &mut Context<'_>,
    ) -> Poll<bool> {
        let mut st = self.inner.state.lock();
        if !st.out.is_empty() {
            // The two buffers trade places: each keeps its capacity for the next turn.
            std::mem::swap(out, &mut st.out);
            std::mem::swap(permits, &mut st.permits);
            counted.bytes += std::mem::take(&mut st.counted);
            return Poll::Ready(true);
        }
        if st.senders == 0 {
            return Poll::Ready(false);
        }
        match &st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Drop for Replies {
    /// The writer is gone: later replies are dropped, and the permits of those not written
    /// go back; the reader learns it through [`Outbox::closed`].
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Release);
        let (unwritten, counted) = {
            let mut st = self.inner.state.lock();
            let counted = std::mem::take(&mut st.counted);
            let unwritten = (std::mem::take(&mut st.out), std::mem::take(&mut st.permits));
            (unwritten, counted)
        };
        drop(unwritten);
        self.inner.held.give(counted);
        self.inner.gone.notify_waiters();
    }
}

pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    wr: W,
    replies: Replies,
    timeout: Duration,
    shared: Arc<Shared>,
) {
    let timed_out = || {
        shared.metrics.write_timeouts.inc();
        tracing::debug!("closing a connection that does not take its replies");
    };
    write_replies(wr, replies, timeout, timed_out).await;
}

/// Writes what `replies` takes until every outbox is gone, each write under `timeout`; a
/// write that does not finish in time calls `timed_out` and gives up.
async fn write_replies<W: AsyncWrite + Unpin>(
    mut wr: W,
    replies: Replies,
    timeout: Duration,
    timed_out: impl FnOnce(),
) {
    let mut out = BytesMut::new();
    let mut written = Vec::new();
    // Given back once written, or when the writer gives up or is dropped.
    let mut counted = Counted {
        held: replies.inner.held.clone(),
        bytes: 0,
    };
    while std::future::poll_fn(|cx| replies.take(&mut out, &mut written, &mut counted, cx)).await {
        let write = async {
            wr.write_all(&out).await?;
            wr.flush().await
        };
        // Most writes are done when first polled: the timeout (a clock read and a timer)
        // is made only for one the socket holds up.
        let mut write = std::pin::pin!(write);
        let first = std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await;
        let done = match first {
            Poll::Ready(r) => Ok(r),
            Poll::Pending => tokio::time::timeout(timeout, write).await,
        };
        match done {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => {
                timed_out();
                return;
            }
        }
        // Written: the commands' permits go back, the reading side may take more. The
        // network thread polls a while from here: a client's next command comes a
        // round trip after its reply, not after its command.
        crate::spin::touch();
        counted.give();
        written.clear();
        out.clear();
        if out.capacity() > 4 << 20 {
            // One large reply does not keep its buffer for the life of the connection.
            out = BytesMut::new();
        }
    }
    let _ = wr.shutdown().await;
}

/// Bytes of the replies the writer has taken and not yet written, counted in the device's
/// held bytes.
struct Counted {
    held: Arc<HeldBytes>,
    bytes: usize,
}

impl Counted {
    fn give(&mut self) {
        self.held.give(std::mem::take(&mut self.bytes));
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.give();
    }
}

/// Appends `r`'s frame to `out`; a reply whose body would exceed `max_body` (the device's
/// `max_reply_bytes`: a last guard, every command bounds its answer before building it) is
/// replaced by a `ReplyTooLarge` error.
fn encode(r: &Response, out: &mut BytesMut, max_body: u32) {
    let mark = out.len();
    let failure = match r.encode(out) {
        Ok(()) if out.len() - mark - HEADER_LEN <= max_body as usize => None,
        Ok(()) => Some((
            Status::ReplyTooLarge,
            format!(
                "the reply is {} bytes; this device replies with at most {max_body} bytes \
                 (max_reply_bytes)",
                out.len() - mark - HEADER_LEN
            ),
        )),
        Err(e) => Some((
            Status::InternalError,
            format!("completion could not be encoded: {e}"),
        )),
    };
    if let Some((status, message)) = failure {
        out.truncate(mark);
        let fallback = Response::error(r.cid, r.nsid, r.opcode, status, message);
        // A short error message always encodes.
        let _ = fallback.encode(out);
    }
}

#[cfg(test)]
#[path = "outbox_tests.rs"]
mod tests;
