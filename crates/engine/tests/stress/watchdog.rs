//! A hang would show only as a test that never ends (or a script's time limit). Each thread
//! running operations says which one it is in ([`busy`]); one that stays in a single
//! operation past the limit makes the watchdog print every thread's operation, with its
//! seed, and abort the process. `CERBERUS_STRESS_OP_SECS` sets the limit (default 120 s:
//! operations take milliseconds, a compaction of the whole test database seconds).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static BUSY: Mutex<Option<HashMap<u64, (String, Instant)>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// What this thread runs (a seed), put in front of each operation's name.
    static CONTEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Names what the operations this thread runs from now on belong to (a seed, a worker).
pub fn context(what: String) {
    CONTEXT.with(|c| *c.borrow_mut() = what);
}

/// An operation in progress, until dropped.
pub struct Busy(u64);

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(map) = BUSY.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            map.remove(&self.0);
        }
    }
}

/// Marks this thread as in operation `what` (formatted only when the watchdog reports).
pub fn busy(what: impl std::fmt::Display) -> Busy {
    start();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = CONTEXT.with(|c| format!("{} {what}", c.borrow()));
    BUSY.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(id, (name, Instant::now()));
    Busy(id)
}

fn start() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let limit = Duration::from_secs(
            std::env::var("CERBERUS_STRESS_OP_SECS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(120),
        );
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_secs(1));
            let map = BUSY.lock().unwrap_or_else(|e| e.into_inner());
            let Some(map) = map.as_ref() else { continue };
            if map.values().all(|(_, since)| since.elapsed() < limit) {
                continue;
            }
            // Straight to the file: the test harness captures `eprintln!`, and the abort
            // would take the captured text with it.
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "stress watchdog: an operation has run for more than {limit:?} (a hang):"
            );
            for (what, since) in map.values() {
                let _ = writeln!(err, "  {:>6.1} s in {what}", since.elapsed().as_secs_f64());
            }
            std::process::abort();
        });
    });
}
