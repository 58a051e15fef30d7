//! What an NVMe/TCP queue waits on between its turns, made once a connection: one timer
//! set to the earliest of its deadlines (`crate::deadlines`) and moved only when that
//! changes, the device's stop, its controller going.

use super::conn::{Conn, End};
use crate::deadlines::{Expired, Timer};
use crate::stop::stopped;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long past its KATO a controller that heard nothing stays (the host's timer and
/// ours do not start at the same instant).
const KATO_GRACE: Duration = Duration::from_secs(1);

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
    pub(super) timer: Timer,
    pub(super) stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    pub(super) gone: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Waiting {
    pub(super) fn new(stop: &watch::Receiver<bool>) -> Waiting {
        let mut stop = stop.clone();
        Waiting {
            timer: Timer::new(),
            stop: Box::pin(async move { stopped(&mut stop).await }),
            gone: None,
        }
    }
}

impl Conn {
    /// A deadline was reached: closes the queue if it says so.
    pub(super) fn expired(&mut self, w: &mut Waiting, why: Option<Expired>) -> Result<(), End> {
        let Some(why) = why else {
            w.timer.arm(None);
            return Ok(());
        };
        // An admin queue silent while its controller's I/O queues are busy waits on (they
        // mark their activity once an idle period, so twice that is recent).
        let waits_on = self
            .queue
            .as_ref()
            .is_some_and(|q| q.qid == 0 && q.activity.recent(self.deadlines.idle_timeout() * 2));
        if !self.deadlines.closes(&why, waits_on) {
            return Ok(());
        }
        why.count(&self.target.shared.metrics);
        if why == Expired::KeepAlive {
            tracing::info!("NVMe/TCP: keep-alive timeout; the controller goes");
        }
        tracing::debug!(
            reason = why.as_str(),
            "NVMe/TCP: closing a queue at its deadline"
        );
        Err(End::Quiet)
    }

    /// Any command on an admin queue restarts its keep-alive timer (Keep Alive among
    /// them); the KATO may have changed (Connect, Set Features).
    pub(super) fn restart_keep_alive(&mut self) {
        let Some(q) = self.queue.as_ref().filter(|q| q.qid == 0) else {
            return;
        };
        let kato = q.ctrl.lock().kato_ms;
        self.deadlines.keep_alive = (kato > 0)
            .then(|| Instant::now() + Duration::from_millis(u64::from(kato)) + KATO_GRACE);
    }
}
