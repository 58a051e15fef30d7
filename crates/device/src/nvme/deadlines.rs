//! A queue's deadlines: to be connected (ICReq, then Fabrics Connect), to finish a PDU once
//! begun, the admin queue's keep-alive, and to send something now and then. The connection
//! waits on one timer set to the earliest of them, moved only when that changes: no timer
//! made and no clock read per command (as on the native port, `connection/deadlines.rs`).

use crate::metrics::Metrics;
use crate::stop::stopped;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Why a queue's deadline closes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expired {
    /// Not connected (and authenticated, if its host must be) in time.
    Connect,
    /// The admin queue's keep-alive timer ran out.
    KeepAlive,
    /// A PDU begun was not whole in time.
    Pdu,
    /// Nothing read for a whole idle timeout.
    Idle,
}

impl Expired {
    /// Counts the queue's closing in the device's metrics.
    pub(super) fn count(self, m: &Metrics) {
        match self {
            Expired::KeepAlive => {
                m.idle_timeouts.inc();
                tracing::info!("NVMe/TCP: keep-alive timeout; the controller goes");
            }
            Expired::Connect => {
                m.auth_timeouts.inc();
                tracing::debug!("NVMe/TCP: no Connect in time; closing");
            }
            Expired::Idle => {
                m.idle_timeouts.inc();
            }
            Expired::Pdu => {
                m.frame_timeouts.inc();
            }
        }
    }
}

pub(super) struct Deadlines {
    pub(super) connect_by: Instant,
    /// The admin queue's keep-alive deadline (None: no KATO).
    pub(super) keep_alive: Option<Instant>,
    /// When the partial PDU in the buffer began (None: none).
    pdu_began: Option<Instant>,
    pdu_timeout: Duration,
    idle_timeout: Duration,
    /// When the idle check is due (set at the first wait after the last check).
    idle_at: Option<Instant>,
    /// Whether the host sent anything since the last idle check.
    pub(super) heard: bool,
}

impl Deadlines {
    pub(super) fn new(connect_by: Instant, pdu_timeout: Duration, idle_timeout: Duration) -> Self {
        Deadlines {
            connect_by,
            keep_alive: None,
            pdu_began: None,
            pdu_timeout,
            idle_timeout,
            idle_at: None,
            heard: false,
        }
    }

    /// A whole PDU was taken from the buffer: what is left of it begins the next one now.
    pub(super) fn pdu_taken(&mut self) {
        self.pdu_began = None;
    }

    /// Before the connection waits, with bytes of a partial PDU in its buffer or not.
    pub(super) fn before_wait(&mut self, partial: bool) {
        if !partial {
            self.pdu_began = None;
        } else if self.pdu_began.is_none() {
            self.pdu_began = Some(Instant::now());
        }
        if self.idle_at.is_none() {
            self.idle_at = Some(Instant::now() + self.idle_timeout);
        }
    }

    /// The earliest deadline that applies (`connected`: the queue is connected, and
    /// authenticated if it must be), and why it would close the queue.
    pub(super) fn earliest(&self, connected: bool) -> Option<(Instant, Expired)> {
        let deadlines = [
            (!connected).then_some((self.connect_by, Expired::Connect)),
            self.keep_alive.map(|at| (at, Expired::KeepAlive)),
            self.pdu_began.map(|b| (b + self.pdu_timeout, Expired::Pdu)),
            self.idle_at.map(|at| (at, Expired::Idle)),
        ];
        deadlines.into_iter().flatten().min_by_key(|(at, _)| *at)
    }

    /// Whether deadline `why`, just reached, closes the queue. An idle one does not if the
    /// host was heard from since the last check, or if `waits_on` (an admin queue whose
    /// controller's I/O queues are busy): it is checked again a whole timeout later.
    pub(super) fn closes(&mut self, why: Expired, waits_on: bool) -> bool {
        if why == Expired::Idle && (self.heard || waits_on) {
            self.heard = false;
            self.idle_at = Some(Instant::now() + self.idle_timeout);
            return false;
        }
        true
    }

    /// How long a queue may stay silent before its idle check closes it.
    pub(super) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }
}

/// Waits until the controller behind an I/O queue goes (forever on other queues).
pub(super) async fn went(gone: &mut Option<Pin<Box<dyn Future<Output = ()> + Send>>>) {
    match gone {
        Some(g) => g.await,
        None => std::future::pending().await,
    }
}

/// What a connection waits on, made once and kept across its waits: one timer, moved only
/// when the earliest deadline changes, the device's stop, its controller going.
pub(super) struct Waiting {
    pub(super) timer: Pin<Box<tokio::time::Sleep>>,
    armed: Instant,
    pub(super) stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    pub(super) gone: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Waiting {
    pub(super) fn new(stop: &watch::Receiver<bool>) -> Waiting {
        let mut stop = stop.clone();
        let armed = far();
        Waiting {
            timer: Box::pin(tokio::time::sleep_until(armed)),
            armed,
            stop: Box::pin(async move { stopped(&mut stop).await }),
            gone: None,
        }
    }

    /// Sets the timer to `earliest` (or far off without one); returns why it would fire.
    pub(super) fn arm(&mut self, earliest: Option<(Instant, Expired)>) -> Option<Expired> {
        let (at, why) = match earliest {
            Some((at, why)) => (at, Some(why)),
            // Without a deadline, a wake-up now and then that changes nothing.
            None => (far(), None),
        };
        if at != self.armed {
            self.armed = at;
            self.timer.as_mut().reset(at);
        }
        why
    }
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn the_earliest_deadline_applies_and_idle_waits_on_a_heard_host() {
        let t0 = Instant::now();
        let mut d = Deadlines::new(t0 + secs(5), secs(2), secs(10));
        d.before_wait(false);
        let idle_at = d.idle_at.expect("set at the first wait");
        assert!(idle_at >= t0 + secs(10));
        assert_eq!(d.earliest(false), Some((t0 + secs(5), Expired::Connect)));
        assert_eq!(d.earliest(true), Some((idle_at, Expired::Idle)));
        // A partial PDU must be whole within its timeout from when it began, however many
        // waits it takes.
        d.before_wait(true);
        let began = d.pdu_began.expect("a partial PDU");
        d.before_wait(true);
        assert_eq!(d.earliest(true), Some((began + secs(2), Expired::Pdu)));
        d.pdu_taken();
        d.before_wait(false);
        assert_eq!(d.pdu_began, None);
        d.keep_alive = Some(t0 + secs(1));
        assert_eq!(d.earliest(true), Some((t0 + secs(1), Expired::KeepAlive)));
        d.keep_alive = None;
        // Heard since the last check: checked again a timeout later; then silence closes.
        d.heard = true;
        assert!(!d.closes(Expired::Idle, false));
        assert!(!d.heard);
        assert!(d.idle_at.is_some_and(|at| at >= idle_at));
        assert!(d.closes(Expired::Idle, false));
        assert!(
            !d.closes(Expired::Idle, true),
            "an admin queue of a busy controller"
        );
        assert!(d.closes(Expired::Pdu, true) && d.closes(Expired::Connect, true));
        assert!(d.closes(Expired::KeepAlive, true));
    }
}
