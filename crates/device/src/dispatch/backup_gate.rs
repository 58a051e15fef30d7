//! The gate that lets one backup run at a time (`backup`).

use std::sync::atomic::{AtomicBool, Ordering};

/// At most one backup runs at a time.
#[derive(Default)]
pub(crate) struct BackupGate(AtomicBool);

/// The running backup's hold on the gate, given back when dropped.
pub(super) struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl BackupGate {
    pub(super) fn enter(&self) -> Option<Running<'_>> {
        self.0
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Running(&self.0))
    }
}
