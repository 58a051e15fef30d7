//! A connection's turn on its network thread, on either wire (`network_frames_per_turn`).
//!
//! A connection that keeps its socket full would otherwise be served on and on while the
//! others of its thread wait. It gives its thread away once it has had a turn's frames: at
//! the end of what it has read (cheap frames of one read are taken together, so that its
//! pipelined gets still run as one engine read), or at once, before the next frame read
//! already, when the turn ran a query on the thread: such a query may take hundreds of
//! microseconds, and a read holds hundreds of them.

use crate::metrics::Metrics;

/// Frames a query answered on the network thread counts as: one may run up to
/// `inline_query_work` (150-250 us at 4,096 units), so a connection pipelining them holds
/// its thread for at most 4 before the others run, where its turn of 32 small frames is
/// tens of microseconds.
pub(crate) const INLINE_QUERY_FRAMES: usize = 8;

/// What a connection's turn has used so far.
#[derive(Debug, Default)]
pub(crate) struct TurnCount {
    frames: usize,
    /// It answered a query on the thread.
    heavy: bool,
}

impl TurnCount {
    /// A frame (a native frame, an NVMe/TCP PDU) was handled.
    pub(crate) fn frame(&mut self) {
        self.frames += 1;
    }

    /// The frame just handled was a query answered on the thread.
    pub(crate) fn inline_query(&mut self) {
        self.frames += INLINE_QUERY_FRAMES - 1;
        self.heavy = true;
    }

    /// Whether the turn's `per_turn` frames are spent (0: turns are off).
    pub(crate) fn over(&self, per_turn: usize) -> bool {
        per_turn > 0 && self.frames >= per_turn
    }

    /// Whether the turn must end before the next frame read already.
    pub(crate) fn over_mid_read(&self, per_turn: usize) -> bool {
        self.heavy && self.over(per_turn)
    }

    /// Ends the turn (counted in `cerberus_turns_given`): the thread's other connections run
    /// before this one comes back.
    pub(crate) async fn give(&mut self, metrics: &Metrics) {
        *self = TurnCount::default();
        metrics.turns_given.inc();
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restart(t: &mut TurnCount) {
        *t = TurnCount::default();
    }

    #[test]
    fn cheap_frames_end_a_turn_with_the_read_and_queries_within_it() {
        let mut t = TurnCount::default();
        for _ in 0..31 {
            t.frame();
        }
        assert!(!t.over(32));
        t.frame();
        assert!(t.over(32) && !t.over_mid_read(32));
        assert!(!t.over(0), "0 turns them off");
        restart(&mut t);
        for _ in 0..4 {
            t.frame();
            t.inline_query();
        }
        assert!(t.over_mid_read(32));
        restart(&mut t);
        assert!(!t.over(1));
    }
}
