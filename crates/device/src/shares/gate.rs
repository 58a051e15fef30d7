//! The gate a command passes on its core (network thread) before it runs.
//!
//! - Fast path: shares off, or the core uncontended (or every namespace at the default shares)
//!   and the namespace without a ceiling: the command goes on at once, after a check of this
//!   thread's gate (no lock, no clock).
//! - A ceiling, uncontended: the command books the earliest start its L tag allows and its
//!   connection's task sleeps until then; the core's other connections go on.
//! - Contended: the core has seen commands of two namespaces within the last
//!   [`MIX_WINDOW`] commands, or commands are waiting. A command then registers in the core's
//!   queue, yields once (so the other connections with commands ready register too; not if
//!   its namespace is owed its floor, as it is chosen first anyway), and
//!   waits for its turn: one command of the core holds the turn at a time, and the next is
//!   chosen by the tags (`Book::choose`) when it ends. The turn covers the command's run on
//!   the core, or its hand-off to a worker.
//!
//! The queue and the turn are the core's own (a thread-local: each network thread is one
//! core); the tags are the device's (one book behind a lock), so a namespace's floor, share
//! and ceiling hold over all cores together, as if each core were a dmClock server that
//! reads the client's service elsewhere from the shared tags rather than from rho and delta
//! carried by its requests.

use super::tags::{Candidate, Choice, Phase};
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

    /// With the turn free, wakes the first waiter to choose the next.
    fn kick(&mut self) {
        if !self.turn {
            if let Some(w) = self.waiters.first() {
                w.signal.notify.notify_one();
            }
        }
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
                if self.scratch.iter().any(|c| c.ns != w.c.ns) {
                    book.contended(w.c.ns);
                }
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

/// Commands of one connection a turn may cover: the connection's next commands, read
/// already, run in the same turn (each charged to the tags) rather than each waiting for a
/// choice. Interleaving connections command by command made the replies go out one write
/// each instead of one write per batch: on a contended core, 10x fewer gets.
pub const QUANTUM_OPS: u32 = 32;
/// Request bytes a turn may cover.
pub const QUANTUM_BYTES: u64 = 256 << 10;

/// Held while a command has its core's turn; dropping it frees the turn (see [`kick`]).
pub struct Turn<'a> {
    shares: &'a Shares,
    ns: u32,
    ops_left: u32,
    bytes_left: u64,
}

impl Turn<'_> {
    /// The connection's next command, of `ns` carrying `bytes`: whether it runs within this
    /// turn (same namespace, the quantum not spent, its limit not reached). If so it is
    /// charged to the tags as a command served in the weight phase.
    pub fn extend(&mut self, ns: u32, bytes: u64) -> bool {
        if ns != self.ns || self.ops_left == 0 || bytes > self.bytes_left {
            return false;
        }
        let now = self.shares.now();
        let mut book = self.shares.book.lock();
        if book.limit_at(ns) > now {
            return false;
        }
        book.arrive(ns, now);
        book.serve(ns, bytes, Phase::Weight, now, now);
        self.ops_left -= 1;
        self.bytes_left -= bytes;
        true
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        release();
    }
}

/// Frees the turn and wakes the first waiter to choose the next. The choice is made when
/// that waiter runs, not here: by then the connection that held the turn has registered its
/// next command if it had one read (a pipelining client), and it is chosen with the others;
/// choosing here would alternate between connections whatever their weights. The waiter
/// finds the turn taken again if that connection's command won it.
fn release() {
    GATE.with(|g| {
        let mut g = g.borrow_mut();
        g.turn = false;
        g.kick();
    });
}

/// With the turn free, the first waiter chooses the next.
fn kick() {
    GATE.with(|g| g.borrow_mut().kick());
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
            release();
            return;
        }
        GATE.with(|g| {
            let mut g = g.borrow_mut();
            g.waiters.retain(|w| w.id != self.id);
            // It may have been the one asked to choose the next.
            g.kick();
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

/// What the gate asks of a command before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Run it now: shares off, the core uncontended and no ceiling, or not its namespace's
    /// command.
    Go,
    /// The core is uncontended but the namespace has a ceiling: its slot is booked with
    /// [`Shares::ceiling_wait`] (by the caller, when the command starts).
    Ceiling,
    /// The core is contended: wait for the core's turn ([`take_turn`]), which charges the
    /// tags (ceiling included).
    Turn,
}

/// The gate's decision for a command of `ns`, which uses the tags of `ns` only if `own()`
/// (the connection proved that namespace: another's frames must not spend its shares).
/// `own` is asked only off the fast path. One decision for every wire: the native port
/// acts on it in [`pass_if`]; the NVMe/TCP target, whose queue goes on serving its other
/// commands while one waits for its ceiling, acts on it itself (`nvme/gate.rs`).
pub fn decide(shares: &Shares, ns: u32, own: impl FnOnce() -> bool) -> Pass {
    if !shares.enabled {
        return Pass::Go;
    }
    // With every namespace at the default shares (equal weights, no floor, no ceiling) the
    // tags would only interleave the namespaces more finely than the loop's polling does, at
    // a measured 20-42 % of a contended core's gets (tests/shares.rs, weights test): they are left out then.
    let shaped = shares.any_shaped.load(Relaxed);
    let contended = GATE.with(|g| {
        let mut g = g.borrow_mut();
        let mixed = g.note(ns);
        mixed && (shaped || g.turn || !g.waiters.is_empty())
    });
    let limited = shares.any_limit.load(Relaxed) && shares.book.lock().has_limit(ns);
    if !contended && !limited {
        return Pass::Go;
    }
    if !own() {
        // Not its namespace's command: the turn, if free, goes on.
        kick();
        return Pass::Go;
    }
    if contended {
        Pass::Turn
    } else {
        Pass::Ceiling
    }
}

/// As [`pass`], for a command that uses the tags of `ns` only if `own()` (see [`decide`]).
pub async fn pass_if(
    shares: &Shares,
    ns: u32,
    bytes: u64,
    own: impl FnOnce() -> bool,
) -> Option<Turn<'_>> {
    match decide(shares, ns, own) {
        Pass::Go => None,
        Pass::Ceiling => {
            if let Some(wait) = shares.ceiling_wait(ns, bytes) {
                tokio::time::sleep(wait).await;
            }
            None
        }
        Pass::Turn => Some(take_turn(shares, ns, bytes).await),
    }
}

/// Waits for the core's turn for a command of `ns` carrying `bytes` (the gate said
/// [`Pass::Turn`]); the turn returned is held while the command runs or is handed off.
pub async fn take_turn(shares: &Shares, ns: u32, bytes: u64) -> Turn<'_> {
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
    let owed = {
        let mut book = shares.book.lock();
        book.arrive(ns, now);
        book.owed(ns, now)
    };
    let mut reg = Registered {
        shares,
        id,
        ns,
        signal,
        done: false,
    };
    // Alone, it lets the other connections with commands ready register before the
    // choice (once); else they are there already. Not when its namespace is owed its floor:
    // the reservation phase chooses it before any of theirs, and the yield waits for the
    // loop's next look at the sockets (measured, debug build: 1-2 ms of a reader's get
    // beside 7 writers).
    if !owed && GATE.with(|g| g.borrow().waiters.len() == 1) {
        tokio::task::yield_now().await;
    }
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
    Turn {
        shares,
        ns,
        ops_left: QUANTUM_OPS - 1,
        bytes_left: QUANTUM_BYTES.saturating_sub(bytes),
    }
}
