//! The gate a command passes on its core (network thread) before it runs.
//!
//! - Fast path: shares off, or the core uncontended and the namespace without a ceiling: the
//!   command goes on at once, after a check of this thread's gate (no lock, no clock).
//! - A ceiling, uncontended: the command books the earliest start its L tag allows and its
//!   connection's task sleeps until then; the core's other connections go on.
//! - Contended: the core has seen commands of two namespaces within the last
//!   [`MIX_WINDOW`] commands, or commands are waiting. A command then registers in the core's
//!   queue, yields once (so the other connections with commands ready register too), and
//!   waits for its turn: one command of the core holds the turn at a time, and the next is
//!   chosen by the tags (`Book::choose`) when it ends. The turn covers the command's run on
//!   the core, or its hand-off to a worker.
//!
//! The queue and the turn are the core's own (a thread-local: each network thread is one
//! core); the tags are the device's (one book behind a lock), so a namespace's floor, share
//! and ceiling hold over all cores together, as if each core were a dmClock server that
//! reads the client's service elsewhere from the shared tags rather than from rho and delta
//! carried by its requests.

use super::tags::{Candidate, Choice};
use super::Shares;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Commands after the last change of namespace during which the core counts as contended.
pub const MIX_WINDOW: u32 = 64;

#[derive(Default)]
struct Signal {
    granted: AtomicBool,
    notify: Notify,
}

struct Waiter {
    id: u64,
    c: Candidate,
    since: u64,
    signal: Arc<Signal>,
}

#[derive(Default)]
struct CoreGate {
    last_ns: u32,
    mixed: u32,
    waiters: Vec<Waiter>,
    /// A command holds the turn (granted, not yet done).
    turn: bool,
    next_id: u64,
    /// Reused for the choice, so a dispatch does not allocate.
    scratch: Vec<Candidate>,
}

thread_local! {
    static GATE: RefCell<CoreGate> = RefCell::new(CoreGate::default());
}

impl CoreGate {
    /// Notes a command of `ns`; whether the core is contended.
    fn note(&mut self, ns: u32) -> bool {
        if ns != self.last_ns {
            self.last_ns = ns;
            self.mixed = MIX_WINDOW;
        } else {
            self.mixed = self.mixed.saturating_sub(1);
        }
        self.mixed > 0 || self.turn || !self.waiters.is_empty()
    }

    /// With the turn free, chooses the next command and grants it the turn. When every
    /// waiter is over its limit, the time to look again.
    fn dispatch(&mut self, shares: &Shares) -> Option<u64> {
        if self.turn || self.waiters.is_empty() {
            return None;
        }
        self.scratch.clear();
        self.scratch.extend(self.waiters.iter().map(|w| w.c));
        let now = shares.now();
        let mut book = shares.book.lock();
        match book.choose(&self.scratch, now) {
            Choice::Serve(i, phase) => {
                let w = self.waiters.remove(i);
                book.serve(w.c.ns, w.c.bytes, phase, now, w.since);
                self.turn = true;
                w.signal.granted.store(true, Relaxed);
                w.signal.notify.notify_one();
                None
            }
            Choice::WaitUntil(t) => Some(t),
            Choice::Empty => None,
        }
    }
}

/// Held while a command has its core's turn; dropping it passes the turn on.
pub struct Turn<'a> {
    shares: &'a Shares,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        release(self.shares);
    }
}

/// Frees the turn. The next is not chosen here but by the first waiter once it runs: by
/// then the connection that held the turn has registered its next command, if it had one
/// read (a pipelining client), so a heavier namespace's next command is there to be chosen
/// (choosing at once would alternate between connections whatever their weights).
fn release(_shares: &Shares) {
    GATE.with(|g| {
        let mut g = g.borrow_mut();
        g.turn = false;
        if let Some(w) = g.waiters.first() {
            w.signal.notify.notify_one();
        }
    });
}

/// A registered command; if dropped before its turn (its connection gone), it leaves the
/// queue, and a turn granted to it is passed on.
struct Registered<'a> {
    shares: &'a Shares,
    id: u64,
    ns: u32,
    signal: Arc<Signal>,
    done: bool,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.signal.granted.load(Relaxed) {
            release(self.shares);
            return;
        }
        GATE.with(|g| {
            let mut g = g.borrow_mut();
            g.waiters.retain(|w| w.id != self.id);
            // It may have been the one asked to choose the next.
            if !g.turn {
                if let Some(w) = g.waiters.first() {
                    w.signal.notify.notify_one();
                }
            }
        });
        self.shares.book.lock().leave(self.ns);
    }
}

/// Passes the gate for a command of `ns` whose request carries `bytes`; the turn returned
/// (if any) is to be held while the command runs or is handed off.
#[cfg(test)]
pub async fn pass(shares: &Shares, ns: u32, bytes: u64) -> Option<Turn<'_>> {
    pass_if(shares, ns, bytes, || true).await
}

/// As [`pass`], for a command that uses the tags of `ns` only if `own()` (the connection
/// proved that namespace: another's frames must not spend its shares). `own` is asked only
/// off the fast path.
pub async fn pass_if(
    shares: &Shares,
    ns: u32,
    bytes: u64,
    own: impl FnOnce() -> bool,
) -> Option<Turn<'_>> {
    if !shares.enabled {
        return None;
    }
    let contended = GATE.with(|g| g.borrow_mut().note(ns));
    let limited = shares.any_limit.load(Relaxed) && shares.book.lock().has_limit(ns);
    if (!contended && !limited) || !own() {
        return None;
    }
    if !contended {
        let now = shares.now();
        let at = shares.book.lock().book_slot(ns, bytes, now);
        if at > now {
            tokio::time::sleep(Duration::from_nanos(at - now)).await;
        }
        return None;
    }
    Some(wait_turn(shares, ns, bytes).await)
}

async fn wait_turn(shares: &Shares, ns: u32, bytes: u64) -> Turn<'_> {
    let now = shares.now();
    let signal = Arc::new(Signal::default());
    let id = GATE.with(|g| {
        let mut g = g.borrow_mut();
        let id = g.next_id;
        g.next_id += 1;
        g.waiters.push(Waiter {
            id,
            c: Candidate { ns, bytes },
            since: now,
            signal: signal.clone(),
        });
        id
    });
    shares.book.lock().arrive(ns, now);
    let mut reg = Registered {
        shares,
        id,
        ns,
        signal,
        done: false,
    };
    // The other connections with commands ready register before the choice.
    tokio::task::yield_now().await;
    loop {
        if reg.signal.granted.load(Relaxed) {
            break;
        }
        let again = GATE.with(|g| g.borrow_mut().dispatch(shares));
        if reg.signal.granted.load(Relaxed) {
            break;
        }
        match again {
            Some(t) => {
                let d = Duration::from_nanos(t.saturating_sub(shares.now()));
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    _ = reg.signal.notify.notified() => {}
                }
            }
            None => reg.signal.notify.notified().await,
        }
    }
    reg.done = true;
    Turn { shares }
}
