//! What a connection's reader waits for between two reads: the socket, and the rare ends
//! (its deadline, the writer giving up, the device's stop, the sweep of idle iterators, an
//! eviction before it authenticated).
//!
//! Polled together on every wake (as `select!` would), the rare ones came to about a third
//! of the connection's own instructions a get (callgrind, a get alone: their futures'
//! wakers checked under the notifiers' locks, the timer wheel asked). Each has a plain load
//! that says whether it may have ended (the timer's and the sweep's `is_elapsed`, the
//! outbox's `closed` flag, the stop watch's version), and their wakers stay registered
//! between polls (one task, one waker), so they are polled only when that load says so, or
//! when one was made or moved and has no waker yet. A wake for the next command polls the
//! socket alone. When they are due they are polled before the read, so a client that keeps
//! the socket full does not hide them.

use crate::deadlines::{Deadlines, Expired, Timer};
use crate::outbox::Outbox;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

/// What ended a wait.
pub(super) enum Woke {
    Read(std::io::Result<usize>),
    /// The deadline the timer was armed for (`None`: the far wake-up of no deadline).
    Deadline(Option<Expired>),
    Evicted,
    WriterGone,
    Stop,
    Sweep,
}

/// A future waited for in place.
pub(super) type Pinned<'a> = Pin<&'a mut (dyn Future<Output = ()> + Send + 'a)>;

/// The rare ends a reader waits for, with what says cheaply whether each may have come.
pub(super) struct Waits<'a> {
    timer: Timer,
    /// Why the timer would fire, as last armed.
    why: Option<Expired>,
    sweep: Pin<Box<Sleep>>,
    sweep_every: Duration,
    writer_gone: Pinned<'a>,
    tx: Outbox,
    shutdown: Pinned<'a>,
    stop_seen: watch::Receiver<bool>,
    /// Every rare wait is polled at the next wait (made, or one of them just ended).
    poll_all: bool,
}

impl<'a> Waits<'a> {
    pub(super) fn new(
        sweep_every: Duration,
        writer_gone: Pinned<'a>,
        tx: Outbox,
        shutdown: Pinned<'a>,
        stop_seen: watch::Receiver<bool>,
    ) -> Waits<'a> {
        Waits {
            timer: Timer::new(),
            why: None,
            sweep: Box::pin(tokio::time::sleep(sweep_every)),
            sweep_every,
            writer_gone,
            tx,
            shutdown,
            stop_seen,
            poll_all: true,
        }
    }

    /// Arms the timer for the earliest of `deadlines` that applies.
    pub(super) fn arm(&mut self, deadlines: &Deadlines, authenticated: bool) {
        self.why = self.timer.arm(deadlines.earliest(authenticated));
    }

    /// The timer fired without a deadline: armed far off again.
    pub(super) fn rearm_far(&mut self) {
        self.why = self.timer.arm(None);
    }

    /// The sweep ran: the next one a period from now.
    pub(super) fn swept(&mut self) {
        self.sweep.as_mut().reset(Instant::now() + self.sweep_every);
        self.poll_all = true;
    }

    /// Waits for `read`, or a rare end; `evicted` counts only while `authenticated` is not
    /// (it is polled every time then: a connection proves itself within a few frames).
    pub(super) async fn next(
        &mut self,
        read: impl Future<Output = std::io::Result<usize>>,
        evicted: impl Future<Output = ()>,
        authenticated: bool,
    ) -> Woke {
        let (mut read, mut evicted) = (std::pin::pin!(read), std::pin::pin!(evicted));
        std::future::poll_fn(|cx| {
            if let Poll::Ready(w) = self.poll_rare(cx) {
                return Poll::Ready(w);
            }
            if !authenticated && evicted.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::Evicted);
            }
            read.as_mut().poll(cx).map(Woke::Read)
        })
        .await
    }

    fn due(&mut self) -> bool {
        // `|`, not `||`: the timer's mark is taken either way.
        std::mem::take(&mut self.poll_all)
            | self.timer.take_moved()
            | self.timer.sleep.is_elapsed()
            | self.sweep.is_elapsed()
            | self.tx.is_closed()
            | self.stop_seen.has_changed().unwrap_or(true)
    }

    fn poll_rare(&mut self, cx: &mut Context<'_>) -> Poll<Woke> {
        if !self.due() {
            return Poll::Pending;
        }
        let woke = if self.timer.sleep.as_mut().poll(cx).is_ready() {
            Woke::Deadline(self.why)
        } else if self.writer_gone.as_mut().poll(cx).is_ready() {
            Woke::WriterGone
        } else if self.shutdown.as_mut().poll(cx).is_ready() {
            Woke::Stop
        } else if self.sweep.as_mut().poll(cx).is_ready() {
            Woke::Sweep
        } else {
            // A timer polled with the task's budget spent answers Pending without taking
            // the waker (tokio wakes the task instead): all are polled again then.
            if !tokio::task::coop::has_budget_remaining() {
                self.poll_all = true;
            }
            return Poll::Pending;
        };
        // What ended is not polled again unless it is moved or the next wait polls all.
        self.poll_all = true;
        Poll::Ready(woke)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::held::HeldBytes;
    use crate::stop::stopped;
    use std::future::{pending, ready};
    use std::sync::Arc;

    const SWEEP: Duration = Duration::from_millis(200);

    fn deadlines(auth_in: Duration) -> Deadlines {
        let long = Duration::from_secs(600);
        Deadlines::with(Instant::now() + auth_in, long, long)
    }

    /// Declares `$w`, a `Waits` over a fresh outbox and stop watch, `$replies`, the writer's
    /// end of the outbox (dropped: the writer is gone), and `$stop`, the stop's sender.
    macro_rules! waits {
        ($w:ident, $replies:ident, $stop:ident) => {
            let held = Arc::new(HeldBytes::new(usize::MAX));
            let (tx, $replies) = crate::outbox::outbox(1 << 20, held);
            let ($stop, stop_rx) = watch::channel(false);
            let writer_gone = tx.closed();
            tokio::pin!(writer_gone);
            let mut shutdown_rx = stop_rx.clone();
            let shutdown = stopped(&mut shutdown_rx);
            tokio::pin!(shutdown);
            let mut $w = Waits::new(SWEEP, writer_gone, tx.clone(), shutdown, stop_rx);
        };
    }

    const LONG: Duration = Duration::from_secs(600);

    /// Arms `w` (the authentication deadline `auth_in` away) and takes a first wait, which
    /// a ready socket answers: every rare wait is polled once, and from then on only when
    /// due.
    async fn first_wait(w: &mut Waits<'_>, auth_in: Duration, authenticated: bool) {
        w.arm(&deadlines(auth_in), authenticated);
        let woke = w.next(ready(Ok(1)), pending(), authenticated).await;
        assert!(matches!(woke, Woke::Read(Ok(1))));
    }

    #[tokio::test]
    async fn a_deadline_ends_a_wait_for_a_silent_socket_after_the_socket_was_polled_alone() {
        {
            waits!(w, _replies, _stop);
            // A first wait answered by the read: every rare wait polled once.
            let d = deadlines(Duration::from_millis(50));
            w.arm(&d, false);
            let woke = w.next(ready(Ok(1)), pending(), true).await;
            assert!(matches!(woke, Woke::Read(Ok(1))));
            // The same deadline: the timer is not moved, this wait starts with the socket
            // alone, and the deadline still ends it.
            w.arm(&d, false);
            assert!(!w.timer.take_moved());
            let woke = w.next(pending(), pending(), true).await;
            assert!(
                matches!(woke, Woke::Deadline(Some(Expired::Auth))),
                "deadline"
            );
        }
    }

    #[tokio::test]
    async fn the_writer_leaving_and_the_stop_end_a_wait() {
        {
            waits!(w, replies, _stop);
            first_wait(&mut w, LONG, true).await;
            let leave = async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                drop(replies);
            };
            let (woke, ()) = tokio::join!(w.next(pending(), pending(), true), leave);
            assert!(matches!(woke, Woke::WriterGone));
        }
        {
            waits!(w, _replies, stop);
            first_wait(&mut w, LONG, true).await;
            let send = async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                let _ = stop.send(true);
            };
            let (woke, ()) = tokio::join!(w.next(pending(), pending(), true), send);
            assert!(matches!(woke, Woke::Stop));
        }
    }

    #[tokio::test]
    async fn a_socket_always_ready_does_not_hide_the_stop_or_the_sweep() {
        {
            waits!(w, _replies, stop);
            first_wait(&mut w, LONG, true).await;
            let _ = stop.send(true);
            let woke = w.next(ready(Ok(1)), pending(), true).await;
            assert!(matches!(woke, Woke::Stop), "the stop comes before the read");
        }
        {
            waits!(w, _replies, _stop);
            first_wait(&mut w, LONG, true).await;
            tokio::time::sleep(SWEEP + Duration::from_millis(5)).await;
            let woke = w.next(ready(Ok(1)), pending(), true).await;
            assert!(matches!(woke, Woke::Sweep));
            w.swept();
            let woke = w.next(ready(Ok(1)), pending(), true).await;
            assert!(
                matches!(woke, Woke::Read(Ok(1))),
                "the sweep is a period away again"
            );
        }
    }

    #[tokio::test]
    async fn an_unauthenticated_connection_is_evicted_while_it_waits() {
        {
            waits!(w, _replies, _stop);
            first_wait(&mut w, LONG, false).await;
            let evicted = tokio::time::sleep(Duration::from_millis(5));
            let woke = w.next(pending(), evicted, false).await;
            assert!(matches!(woke, Woke::Evicted));
        }
    }
}
