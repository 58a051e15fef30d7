//! Both compaction slots, taken by a manual job (a manual compaction, a namespace's or
//! index's drop) and held until dropped.

use super::background_state::Background;
use crate::error::{Error, Result};
use crate::options::BackgroundRunner;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Both compaction slots, held by a manual job until dropped: released however the job ends,
/// a panic included (slots left taken would keep every later compaction out, and writers
/// waiting for room would wait for good).
pub(super) struct ManualSlots<'a> {
    bg: &'a Background,
    runner: Option<&'a BackgroundRunner>,
}

impl<'a> ManualSlots<'a> {
    /// Takes both compaction slots for a manual job: waits until the compaction and split
    /// running now have ended (whatever errors or shutdown say meanwhile: a running job
    /// always ends, and two must never overlap), and keeps automatic ones out until the
    /// returned slots are dropped. Fails, holding nothing, if the database is `closed` or
    /// read-only. `runner` is woken when they are released.
    pub(super) fn acquire(
        bg: &'a Background,
        closed: &AtomicBool,
        runner: Option<&'a BackgroundRunner>,
    ) -> Result<ManualSlots<'a>> {
        let mut state = bg.state.lock();
        state.policy.manual_wants_slots();
        while !state.policy.manual_may_start() {
            bg.done_cv.wait_for(&mut state, Duration::from_millis(50));
        }
        let refuse = if let Some(e) = &state.policy.error {
            Some(Error::Background(e.clone()))
        } else if state.policy.shutdown || closed.load(Ordering::Acquire) {
            Some(Error::Closed)
        } else {
            None
        };
        state.policy.manual_stops_waiting(refuse.is_none());
        if let Some(e) = refuse {
            bg.done_cv.notify_all();
            return Err(e);
        }
        Ok(ManualSlots { bg, runner })
    }
}

impl Drop for ManualSlots<'_> {
    fn drop(&mut self) {
        self.bg.state.lock().policy.manual_ended();
        self.bg.wake(self.runner);
        self.bg.done_cv.notify_all();
    }
}
