//! A connection's deadlines: to authenticate, to finish a frame once begun, and to send
//! something now and then once authenticated.

use crate::config::DeviceConfig;
use std::time::Duration;
use tokio::time::Instant;

/// Why a connection's deadline closes it.
pub(super) enum Expired {
    Auth,
    Frame,
    Idle,
}

impl Expired {
    pub(super) fn as_str(&self) -> &'static str {
        match self {
            Expired::Auth => "not authenticated in time",
            Expired::Frame => "frame not finished in time",
            Expired::Idle => "idle",
        }
    }
}

pub(super) struct Deadlines {
    pub(super) auth: Instant,
    frame_timeout: Duration,
    idle_timeout: Duration,
    /// When the partial frame in the buffer began.
    frame_began: Option<Instant>,
    /// When the idle check is due.
    idle_at: Option<Instant>,
    /// Whether the client sent anything since the last idle check (no clock read per
    /// command).
    pub(super) heard: bool,
}

impl Deadlines {
    pub(super) fn new(config: &DeviceConfig) -> Deadlines {
        Deadlines {
            auth: Instant::now() + Duration::from_millis(config.auth_timeout_ms),
            frame_timeout: Duration::from_millis(config.frame_timeout_ms),
            idle_timeout: Duration::from_secs(config.idle_timeout_secs),
            frame_began: None,
            idle_at: None,
            heard: false,
        }
    }

    /// After the whole frames read were taken (`framed`: some were), with bytes of a partial
    /// one left in the buffer or not (`partial`).
    pub(super) fn after_frames(&mut self, framed: bool, partial: bool, authenticated: bool) {
        if !partial {
            self.frame_began = None;
        } else if framed || self.frame_began.is_none() {
            // What is left began after the frames just taken.
            self.frame_began = Some(Instant::now());
        }
        if authenticated && self.idle_at.is_none() && !self.idle_timeout.is_zero() {
            self.idle_at = Some(Instant::now() + self.idle_timeout);
        }
    }

    /// The earliest deadline that applies now, and why it would close the connection.
    pub(super) fn earliest(&self, authenticated: bool) -> Option<(Instant, Expired)> {
        let deadlines = [
            (!authenticated).then_some((self.auth, Expired::Auth)),
            self.frame_began
                .map(|b| (b + self.frame_timeout, Expired::Frame)),
            self.idle_at.map(|at| (at, Expired::Idle)),
        ];
        deadlines.into_iter().flatten().min_by_key(|(at, _)| *at)
    }

    /// Whether deadline `why`, just reached, closes the connection. An idle one does not if
    /// the client was heard from since the last check or waits for its own commands (`busy`):
    /// it is checked again a whole timeout later.
    pub(super) fn closes(&mut self, why: &Expired, busy: bool) -> bool {
        if matches!(why, Expired::Idle) && (self.heard || busy) {
            self.heard = false;
            self.idle_at = Some(Instant::now() + self.idle_timeout);
            return false;
        }
        true
    }
}
