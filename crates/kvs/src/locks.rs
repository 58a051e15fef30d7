//! A mutex's guard whether or not a thread panicked holding it: every entry point catches
//! panics (a C caller must never unwind), so a poisoned lock only means a call failed, and
//! the state it guards stays consistent for the next one.

use std::sync::{Mutex, MutexGuard};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}
