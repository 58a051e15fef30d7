//! A connection's deadlines, on either port: to authenticate (native) or connect (NVMe/TCP:
//! ICReq, then Fabrics Connect), to finish a frame or PDU once begun, the admin queue's
//! keep-alive (NVMe/TCP), and to send something now and then. A connection waits on one
//! timer set to the earliest of them, moved only when that changes: no timer made and no
//! clock read per command.

use crate::config::DeviceConfig;
use crate::metrics::Metrics;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Why a connection's deadline closes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expired {
    /// Not authenticated (NVMe/TCP: connected) in time.
    Auth,
    /// A frame (PDU) begun was not whole in time.
    Frame,
    /// Nothing read for a whole idle timeout.
    Idle,
    /// An NVMe/TCP admin queue's keep-alive timer ran out.
    KeepAlive,
}

impl Expired {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Expired::Auth => "not authenticated in time",
            Expired::Frame => "frame not finished in time",
            Expired::Idle => "idle",
            Expired::KeepAlive => "keep-alive timeout",
        }
    }

    /// Counts the connection's closing in the device's metrics.
    pub(crate) fn count(self, m: &Metrics) {
        match self {
            Expired::Auth => m.auth_timeouts.inc(),
            Expired::Frame => m.frame_timeouts.inc(),
            Expired::Idle | Expired::KeepAlive => m.idle_timeouts.inc(),
        };
    }
}

pub(crate) struct Deadlines {
    pub(crate) auth: Instant,
    frame_timeout: Duration,
    /// Zero: never idle.
    idle_timeout: Duration,
    /// When the partial frame in the buffer began.
    frame_began: Option<Instant>,
    /// When the idle check is due.
    idle_at: Option<Instant>,
    /// Whether the client sent anything since the last idle check (no clock read per
    /// command).
    pub(crate) heard: bool,
    /// An NVMe/TCP admin queue's keep-alive deadline (None: no KATO, or another queue).
    pub(crate) keep_alive: Option<Instant>,
    /// Since when data an NVMe/TCP R2T asked for is owed without a byte of it coming (the
    /// earliest of the queue's Stores): it must keep coming within the frame timeout, as a
    /// PDU begun must, whatever other PDUs the host sends meanwhile.
    pub(crate) owed_since: Option<Instant>,
}

impl Deadlines {
    /// A native connection's, from the device's config.
    pub(crate) fn new(config: &DeviceConfig) -> Deadlines {
        Deadlines::with(
            Instant::now() + Duration::from_millis(config.auth_timeout_ms),
            Duration::from_millis(config.frame_timeout_ms),
            Duration::from_secs(config.idle_timeout_secs),
        )
    }

    pub(crate) fn with(auth: Instant, frame_timeout: Duration, idle_timeout: Duration) -> Self {
        Deadlines {
            auth,
            frame_timeout,
            idle_timeout,
            frame_began: None,
            idle_at: None,
            heard: false,
            keep_alive: None,
            owed_since: None,
        }
    }

    /// A whole frame was taken from the buffer: what is left of it begins the next one.
    pub(crate) fn frame_taken(&mut self) {
        self.frame_began = None;
    }

    /// After the whole frames read were taken (`framed`: some were), with bytes of a partial
    /// one left in the buffer or not (`partial`); `idle`: the idle check applies yet (a
    /// native connection's once authenticated).
    pub(crate) fn after_frames(&mut self, framed: bool, partial: bool, idle: bool) {
        if !partial {
            self.frame_began = None;
        } else if framed || self.frame_began.is_none() {
            // What is left began after the frames just taken.
            self.frame_began = Some(Instant::now());
        }
        if idle && self.idle_at.is_none() && !self.idle_timeout.is_zero() {
            self.idle_at = Some(Instant::now() + self.idle_timeout);
        }
    }

    /// The earliest deadline that applies now, and why it would close the connection.
    pub(crate) fn earliest(&self, authenticated: bool) -> Option<(Instant, Expired)> {
        let deadlines = [
            (!authenticated).then_some((self.auth, Expired::Auth)),
            self.frame_began
                .map(|b| (b + self.frame_timeout, Expired::Frame)),
            self.owed_since
                .map(|b| (b + self.frame_timeout, Expired::Frame)),
            self.idle_at.map(|at| (at, Expired::Idle)),
            self.keep_alive.map(|at| (at, Expired::KeepAlive)),
        ];
        deadlines.into_iter().flatten().min_by_key(|(at, _)| *at)
    }

    /// Whether deadline `why`, just reached, closes the connection. An idle one does not if
    /// the client was heard from since the last check or waits for its own commands (`busy`;
    /// on NVMe/TCP also an admin queue whose I/O queues are busy): it is checked again a
    /// whole timeout later.
    pub(crate) fn closes(&mut self, why: &Expired, busy: bool) -> bool {
        if matches!(why, Expired::Idle) && (self.heard || busy) {
            self.heard = false;
            self.idle_at = Some(Instant::now() + self.idle_timeout);
            return false;
        }
        true
    }

    /// How long a connection may stay silent before its idle check closes it.
    pub(crate) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }
}

/// The one timer a connection waits on, set to its earliest deadline and moved only when
/// that changes.
pub(crate) struct Timer {
    pub(crate) sleep: Pin<Box<Sleep>>,
    armed: Instant,
    /// Moved since [`Timer::take_moved`] last asked: it must be polled to be waited for.
    moved: bool,
}

impl Timer {
    pub(crate) fn new() -> Timer {
        let armed = far();
        Timer {
            sleep: Box::pin(tokio::time::sleep_until(armed)),
            armed,
            moved: true,
        }
    }

    /// Whether the timer was made or moved since this was last asked: a timer moved has no
    /// waker until it is polled again.
    pub(crate) fn take_moved(&mut self) -> bool {
        std::mem::take(&mut self.moved)
    }

    /// Sets the timer to `earliest` (or far off without one); returns why it would fire.
    pub(crate) fn arm(&mut self, earliest: Option<(Instant, Expired)>) -> Option<Expired> {
        let (at, why) = match earliest {
            Some((at, why)) => (at, Some(why)),
            // Without a deadline, a wake-up now and then that changes nothing.
            None => (far(), None),
        };
        if at != self.armed {
            self.armed = at;
            self.sleep.as_mut().reset(at);
            self.moved = true;
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
    fn the_earliest_deadline_applies_and_idle_waits_on_a_heard_client() {
        let t0 = Instant::now();
        let mut d = Deadlines::with(t0 + secs(5), secs(2), secs(10));
        // Not yet authenticated: no idle check.
        d.after_frames(false, false, false);
        assert_eq!(d.idle_at, None);
        d.after_frames(false, false, true);
        let idle_at = d.idle_at.expect("set at the first wait once it applies");
        assert!(idle_at >= t0 + secs(10));
        assert_eq!(d.earliest(false), Some((t0 + secs(5), Expired::Auth)));
        assert_eq!(d.earliest(true), Some((idle_at, Expired::Idle)));
        // A partial frame must be whole within its timeout from when it began, however
        // many waits it takes; a frame taken starts the next one's clock.
        d.after_frames(false, true, true);
        let began = d.frame_began.expect("a partial frame");
        d.after_frames(false, true, true);
        assert_eq!(d.earliest(true), Some((began + secs(2), Expired::Frame)));
        d.frame_taken();
        d.after_frames(false, false, true);
        assert_eq!(d.frame_began, None);
        d.keep_alive = Some(t0 + secs(1));
        assert_eq!(d.earliest(true), Some((t0 + secs(1), Expired::KeepAlive)));
        d.keep_alive = None;
        // Heard since the last check: checked again a timeout later; then silence closes.
        d.heard = true;
        assert!(!d.closes(&Expired::Idle, false));
        assert!(!d.heard);
        assert!(d.idle_at.is_some_and(|at| at >= idle_at));
        assert!(d.closes(&Expired::Idle, false));
        assert!(!d.closes(&Expired::Idle, true), "busy");
        assert!(d.closes(&Expired::Frame, true) && d.closes(&Expired::Auth, true));
        assert!(d.closes(&Expired::KeepAlive, true));
    }

    #[test]
    fn a_zero_idle_timeout_never_closes() {
        let mut d = Deadlines::with(Instant::now(), secs(2), Duration::ZERO);
        d.after_frames(false, false, true);
        assert_eq!(d.earliest(true), None);
    }
}
