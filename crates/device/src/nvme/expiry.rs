//! A queue's deadlines reached (`crate::deadlines`, timed by `waiting`): whether the queue
//! closes, and the admin queue's keep-alive restarted by its commands.

use super::conn::{Conn, End};
use super::waiting::Waiting;
use crate::deadlines::Expired;
use std::time::Duration;
use tokio::time::Instant;

/// How long past its KATO a controller that heard nothing stays (the host's timer and
/// ours do not start at the same instant).
const KATO_GRACE: Duration = Duration::from_secs(1);

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
