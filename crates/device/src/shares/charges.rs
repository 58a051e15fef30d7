//! What the namespaces' compactions were charged up to (`charge`): when the counters were
//! last looked at, and each namespace's count then.

use parking_lot::Mutex;
use std::collections::HashMap;

/// Where the charging of compactions stands (`Shares::after_job`).
#[derive(Default)]
pub(super) struct Charges {
    pub(super) state: Mutex<State>,
}

/// The last look at the counters and what each namespace's stood at then.
#[derive(Default)]
pub(super) struct State {
    pub(super) last: Option<quanta::Instant>,
    /// Compaction bytes of each namespace at the last look.
    pub(super) seen: HashMap<u32, u64>,
}

impl Charges {
    pub(super) fn forget(&self, ns: u32) {
        self.state.lock().seen.remove(&ns);
    }
}
