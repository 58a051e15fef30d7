//! I/O shares per namespace, in the manner of mClock/dmClock: a floor (reservation), a
//! weight and a ceiling (limit), on operations and on bytes per second.
//!
//! `tags` holds the pure tag logic (R, P and L tags and the two-phase choice), `gate` the
//! check every command makes on its core before it runs, and `charge` what background work
//! (compactions) the namespaces are charged. [`Shares`] is the device's: owned by `Shared`,
//! set per namespace with [`Shares::set`], dropped with [`Shares::forget`].

mod charge;
mod charges;
pub(crate) mod gate;
mod tags;
#[cfg(test)]
mod tests;

use cerberus_engine::IoShares;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use tags::Book;
pub use tags::ShareStats;

/// `[shares]` in the device's TOML file.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SharesConfig {
    /// Serve namespaces by their shares when they contend, and hold them to their limits
    /// (default on). Off: commands run in the order their connections are polled, as
    /// before shares (for comparison).
    pub enabled: bool,
}

impl Default for SharesConfig {
    fn default() -> Self {
        SharesConfig { enabled: true }
    }
}

/// A namespace's shares and what it got, as the stats document shows them.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ShareReport {
    /// Whether the device enforces shares (`[shares] enabled`).
    pub enabled: bool,
    /// The namespace's reservation, weight and limit.
    pub settings: IoShares,
    /// What it was served, waited and was charged.
    #[serde(flatten)]
    pub stats: ShareStats,
}

/// The device's shares: every namespace's tags, and the switch.
pub struct Shares {
    enabled: bool,
    book: Mutex<Book>,
    /// Some namespace has a ceiling: only then does the fast path look a namespace up.
    any_limit: AtomicBool,
    /// Some namespace has shares other than the defaults: only then is a contended core
    /// served by the tags.
    any_shaped: AtomicBool,
    start: quanta::Instant,
    charges: charges::Charges,
}

impl Shares {
    pub fn new(config: &SharesConfig) -> Shares {
        Shares {
            enabled: config.enabled,
            book: Mutex::new(Book::default()),
            any_limit: AtomicBool::new(false),
            any_shaped: AtomicBool::new(false),
            start: quanta::Instant::now(),
            charges: charges::Charges::default(),
        }
    }

    /// The device's clock for the tags, in nanoseconds.
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Gives namespace `ns` its shares (refused if they make no sense, see
    /// `IoShares::validate`). Its tags carry on: a new limit holds from its next command.
    pub fn set(&self, ns: u32, shares: IoShares) -> cerberus_engine::Result<()> {
        shares.validate()?;
        let mut book = self.book.lock();
        book.set(ns, shares);
        self.any_limit.store(book.any_limit(), Relaxed);
        self.any_shaped.store(book.any_shaped(), Relaxed);
        Ok(())
    }

    /// Whether any namespace has a ceiling (a cheap check before looking one up).
    pub fn any_ceiling(&self) -> bool {
        self.enabled && self.any_limit.load(Relaxed)
    }

    /// How long a command of `ns` carrying `bytes` waits for the namespace's ceiling (its
    /// `limit`), its slot booked now; None without a ceiling or within it. One code path
    /// for every wire: the native port's gate (`pass_if`, off a contended core) and the
    /// NVMe/TCP target's queues (`nvme/ceiling.rs`).
    pub fn ceiling_wait(&self, ns: u32, bytes: u64) -> Option<std::time::Duration> {
        if !self.enabled || !self.any_limit.load(Relaxed) {
            return None;
        }
        let mut book = self.book.lock();
        if !book.has_limit(ns) {
            return None;
        }
        let now = self.now();
        let at = book.book_slot(ns, bytes, now);
        (at > now).then(|| std::time::Duration::from_nanos(at - now))
    }

    /// The namespace is destroyed: its tags and stats go.
    pub fn forget(&self, ns: u32) {
        {
            let mut book = self.book.lock();
            book.forget(ns);
            self.any_limit.store(book.any_limit(), Relaxed);
            self.any_shaped.store(book.any_shaped(), Relaxed);
        }
        // Not under the book's lock: `after_job` takes the book's under the charges' own,
        // and a destroy during a compaction's charging froze the device (found by the
        // kvs stress test's churn). A look between the two goes by the book: `ns` left it.
        self.charges.forget(ns);
    }

    /// The shares of namespace `ns` (the defaults if none were set).
    #[cfg(test)]
    pub fn get(&self, ns: u32) -> IoShares {
        self.book.lock().shares(ns)
    }

    /// Charges namespace `ns` for `ops` operations and `bytes` bytes done on its behalf
    /// outside its commands: its share and its ceiling pay for them, not its floor.
    pub fn charge(&self, ns: u32, ops: u64, bytes: u64) {
        if !self.enabled {
            return;
        }
        let now = self.now();
        self.book.lock().charge(ns, ops, bytes, now);
    }

    /// What namespace `ns` has been given and got.
    pub fn report(&self, ns: u32) -> ShareReport {
        let book = self.book.lock();
        ShareReport {
            enabled: self.enabled,
            settings: book.shares(ns),
            stats: book.stats(ns).unwrap_or_default(),
        }
    }

    /// Every namespace known to the shares, with its report (for the metrics).
    pub fn reports(&self) -> Vec<(u32, ShareReport)> {
        let ids = self.book.lock().ids();
        ids.into_iter().map(|ns| (ns, self.report(ns))).collect()
    }
}
