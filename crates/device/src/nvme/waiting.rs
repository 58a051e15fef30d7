//! What an NVMe/TCP queue waits on between its turns, made once a connection: one timer
//! set to the earliest of its deadlines (`crate::deadlines`) and moved only when that
//! changes, the device's stop, its controller going.

use crate::deadlines::Expired;
use crate::stop::stopped;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

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
