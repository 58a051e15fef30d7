//! The tag book: mClock's reservation (R), proportional (P) and limit (L) tags of every
//! namespace, and the two-phase choice between the commands waiting at a core. Pure logic:
//! no I/O, the clock (nanoseconds) is passed in, so the tests check exact ratios.
//!
//! Tags are computed as a namespace's command reaches the head (dmClock's delayed tag
//! calculation): each namespace keeps the tags its *next* command is due at.
//!
//! - R (per set floor: ops and bytes): the time by which the next command is owed under the
//!   reservation. It advances by `1/r` (and `bytes/r_bytes`) only when a command is served in
//!   the reservation phase: service given in the weight phase comes on top of the floor, as
//!   dmClock counts only reservation-phase service (rho) against R.
//! - P: start-time fair queueing over a virtual time; it advances by `cost / weight`, with
//!   `cost = 1 + bytes / 4096` (one op, and one more per 4 KiB page moved).
//! - L (per set ceiling): the earliest time the next command may start (a GCRA): served at
//!   `now`, it becomes `max(L, now) + 1/l` (and `+ bytes/l_bytes`), so no idle time is saved
//!   up into a burst.
//!
//! A namespace that had nothing waiting is re-anchored when a command of it arrives: R to
//! `max(R, now)` (no floor saved up while idle), P to `max(P, virtual time - LAG)` (the
//! virtual time is the start tag of the last command served, as in SFQ, standing in for
//! mClock's shift of the active clients' P tags). The lag kept ([`P_LAG`]) is what a
//! pipelining client keeps between its batches: without it, a namespace whose commands all
//! ran was "idle" while its next batch was on the wire, and lost its weight at every batch.
//!
//! Choice: the reservation phase first (the smallest R tag at or before now), else the weight
//! phase among the namespaces whose L tag is at or before now (the smallest P tag). A
//! namespace over its limit waits until its L tag.
//!
//! Background work (`charge`) advances P and L, not R: like dmClock, the floor is what the
//! namespace's own commands are owed, and a tenant's compactions must not use it up (they
//! do count against its share and its ceiling, so a heavy writer pays for them).

use cerberus_engine::IoShares;
use serde::Serialize;
use std::collections::HashMap;

const SEC: u128 = 1_000_000_000;
/// Bytes one more unit of cost stands for in the weight phase.
pub const PAGE: u64 = 4096;
/// Virtual nanoseconds one unit of cost takes at weight 1.
const P_UNIT: u128 = 1_000_000;
/// How far behind the virtual time an arriving namespace's P tag may stay: 64 commands at
/// weight 1 (see the module's notes).
pub const P_LAG: u64 = 64 * P_UNIT as u64;

/// Which phase chose a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Reservation,
    Weight,
}

/// What a namespace was given and what it got, for the stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ShareStats {
    /// Commands that went through the tags (at a contended core, or under a limit).
    pub served_ops: u64,
    /// Their request bytes.
    pub served_bytes: u64,
    /// Of those, served in the reservation phase.
    pub reservation_ops: u64,
    /// Nanoseconds commands waited at the gate (their turn, or their limit).
    pub waited_ns: u64,
    /// Nanoseconds commands waited for the namespace's limit alone.
    pub limit_waited_ns: u64,
    /// Bytes of background work (compactions) charged to the namespace.
    pub charged_bytes: u64,
    /// Turns it won in a choice among commands of two or more namespaces waiting at a core:
    /// where its weight decides, whatever the clients' round trips do to the throughput.
    pub contended_turns: u64,
}

#[derive(Clone, Debug, Default)]
struct Tags {
    shares: IoShares,
    r_ops: u64,
    r_bytes: u64,
    p: u64,
    l_ops: u64,
    l_bytes: u64,
    /// Commands of this namespace registered and not yet served, over all cores.
    waiting: u32,
    stats: ShareStats,
}

/// `n * SEC / rate` nanoseconds, saturating; 0 for no rate.
fn per(n: u64, rate: u64) -> u64 {
    if rate == 0 {
        return 0;
    }
    u64::try_from(u128::from(n) * SEC / u128::from(rate)).unwrap_or(u64::MAX)
}

impl Tags {
    fn has_limit(&self) -> bool {
        self.shares.limit_ops > 0 || self.shares.limit_bytes > 0
    }

    /// The R tag: the earlier of the set floors' (owed under either), `None` without one.
    fn r(&self) -> Option<u64> {
        let s = &self.shares;
        let ops = (s.reservation_ops > 0).then_some(self.r_ops);
        let bytes = (s.reservation_bytes > 0).then_some(self.r_bytes);
        ops.into_iter().chain(bytes).min()
    }

    /// The L tag: the later of the set ceilings' (both must allow it).
    fn l(&self) -> u64 {
        let s = &self.shares;
        let ops = if s.limit_ops > 0 { self.l_ops } else { 0 };
        let bytes = if s.limit_bytes > 0 { self.l_bytes } else { 0 };
        ops.max(bytes)
    }

    fn p_cost(&self, ops: u64, bytes: u64) -> u64 {
        let cost = u128::from(ops) * P_UNIT + u128::from(bytes) * P_UNIT / u128::from(PAGE);
        let w = u128::from(self.shares.weight.max(1));
        u64::try_from(cost / w).unwrap_or(u64::MAX)
    }

    /// Moves the L tags past `ops` commands and `bytes` bytes started at `at`.
    fn advance_l(&mut self, ops: u64, bytes: u64, at: u64) {
        let s = self.shares;
        if s.limit_ops > 0 {
            self.l_ops = self.l_ops.max(at).saturating_add(per(ops, s.limit_ops));
        }
        if s.limit_bytes > 0 {
            self.l_bytes = self
                .l_bytes
                .max(at)
                .saturating_add(per(bytes, s.limit_bytes));
        }
    }
}

/// The tags of every namespace known to the shares (those given shares, and those whose
/// commands went through the gate).
#[derive(Default)]
pub struct Book {
    ns: HashMap<u32, Tags>,
    /// Start tag of the last command served (SFQ's virtual time).
    vtime: u64,
    /// The throwaway tags of a namespace not given shares ([`Book::set`]): a command, a
    /// charge or a slot of one (destroyed, its tags forgotten, whose client still sends
    /// commands) is weighed with default tags and leaves nothing behind. The device gives
    /// every namespace it serves its shares at create and at start.
    stray: Tags,
}

/// A command waiting for its turn at a core: its namespace and request bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub ns: u32,
    pub bytes: u64,
}

/// The outcome of a choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The candidate at this index, chosen in this phase.
    Serve(usize, Phase),
    /// Every candidate is over its limit: look again at this time.
    WaitUntil(u64),
    /// No candidate.
    Empty,
}

impl Book {
    fn tags(&mut self, ns: u32) -> &mut Tags {
        match self.ns.get_mut(&ns) {
            Some(t) => t,
            None => {
                self.stray = Tags::default();
                &mut self.stray
            }
        }
    }

    /// Gives `ns` its shares (the tags carry on from where they are).
    pub fn set(&mut self, ns: u32, shares: IoShares) {
        self.ns.entry(ns).or_default().shares = shares;
    }

    /// The namespace is gone: its tags and stats go.
    pub fn forget(&mut self, ns: u32) {
        self.ns.remove(&ns);
    }

    /// The namespaces the book knows.
    pub fn ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.ns.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    pub fn shares(&self, ns: u32) -> IoShares {
        self.ns.get(&ns).map(|t| t.shares).unwrap_or_default()
    }

    /// Whether any namespace has a ceiling.
    pub fn any_limit(&self) -> bool {
        self.ns.values().any(Tags::has_limit)
    }

    /// Whether any namespace has shares other than the defaults (a floor, a weight other
    /// than 1, a ceiling): with every namespace at the defaults, contention is left to the
    /// order the core polls its connections (see `gate`).
    pub fn any_shaped(&self) -> bool {
        self.ns.values().any(|t| t.shares != IoShares::default())
    }

    pub fn has_limit(&self, ns: u32) -> bool {
        self.ns.get(&ns).is_some_and(Tags::has_limit)
    }

    pub fn stats(&self, ns: u32) -> Option<ShareStats> {
        self.ns.get(&ns).map(|t| t.stats)
    }

    /// A command of `ns` registers at a core at `now`; a namespace that had none waiting is
    /// re-anchored (see the module's notes).
    pub fn arrive(&mut self, ns: u32, now: u64) {
        let vtime = self.vtime;
        let t = self.tags(ns);
        if t.waiting == 0 {
            t.r_ops = t.r_ops.max(now);
            t.r_bytes = t.r_bytes.max(now);
            t.p = t.p.max(vtime.saturating_sub(P_LAG));
        }
        t.waiting += 1;
    }

    /// Whether `ns` is owed its floor at `now` (its R tag is due): its command is chosen
    /// before any command of the weight phase.
    pub fn owed(&self, ns: u32, now: u64) -> bool {
        self.ns
            .get(&ns)
            .is_some_and(|t| t.r().is_some_and(|r| r <= now))
    }

    /// A registered command of `ns` left without being served (its connection closed).
    pub fn leave(&mut self, ns: u32) {
        if let Some(t) = self.ns.get_mut(&ns) {
            t.waiting = t.waiting.saturating_sub(1);
        }
    }

    /// The two-phase choice among `waiting` (in arrival order; ties go to the earliest).
    pub fn choose(&self, waiting: &[Candidate], now: u64) -> Choice {
        if waiting.is_empty() {
            return Choice::Empty;
        }
        let default = Tags::default();
        let tags = |c: &Candidate| self.ns.get(&c.ns).unwrap_or(&default);
        let mut best_r: Option<(u64, usize)> = None;
        let mut best_p: Option<(u64, usize)> = None;
        let mut next_l = u64::MAX;
        for (i, c) in waiting.iter().enumerate() {
            let t = tags(c);
            if let Some(r) = t.r().filter(|&r| r <= now) {
                if best_r.is_none_or(|(b, _)| r < b) {
                    best_r = Some((r, i));
                }
            }
            let l = t.l();
            if l <= now {
                if best_p.is_none_or(|(b, _)| t.p < b) {
                    best_p = Some((t.p, i));
                }
            } else {
                next_l = next_l.min(l);
            }
        }
        match (best_r, best_p) {
            (Some((_, i)), _) => Choice::Serve(i, Phase::Reservation),
            (None, Some((_, i))) => Choice::Serve(i, Phase::Weight),
            (None, None) => Choice::WaitUntil(next_l),
        }
    }

    /// A turn of `ns` was chosen among commands of two or more namespaces.
    pub fn contended(&mut self, ns: u32) {
        self.tags(ns).stats.contended_turns += 1;
    }

    /// A registered command of `ns` moving `bytes`, waiting since `since`, is served at
    /// `now`, chosen in `phase`.
    pub fn serve(&mut self, ns: u32, bytes: u64, phase: Phase, now: u64, since: u64) {
        let t = self.tags(ns);
        t.waiting = t.waiting.saturating_sub(1);
        let s = t.shares;
        let waited = now.saturating_sub(since);
        // Held back by its ceiling from `since` until its L tag (if it was later).
        let by_limit = t.l().min(now).saturating_sub(since);
        if phase == Phase::Reservation {
            t.r_ops = t.r_ops.saturating_add(per(1, s.reservation_ops));
            t.r_bytes = t.r_bytes.saturating_add(per(bytes, s.reservation_bytes));
            t.stats.reservation_ops += 1;
        }
        let start = t.p;
        t.p = t.p.saturating_add(t.p_cost(1, bytes));
        t.advance_l(1, bytes, now);
        t.stats.served_ops += 1;
        t.stats.served_bytes += bytes;
        t.stats.waited_ns += waited;
        t.stats.limit_waited_ns += by_limit;
        self.vtime = self.vtime.max(start);
    }

    /// A command of a limited namespace at a core where nobody waits: it books the earliest
    /// start its L tag allows (at or after `now`) and is counted as served then. Returns that
    /// start.
    pub fn book_slot(&mut self, ns: u32, bytes: u64, now: u64) -> u64 {
        let vtime = self.vtime;
        let t = self.tags(ns);
        let at = t.l().max(now);
        if t.waiting == 0 {
            t.p = t.p.max(vtime.saturating_sub(P_LAG));
        }
        let start = t.p;
        t.p = t.p.saturating_add(t.p_cost(1, bytes));
        t.advance_l(1, bytes, at);
        let waited = at - now;
        t.stats.served_ops += 1;
        t.stats.served_bytes += bytes;
        t.stats.waited_ns += waited;
        t.stats.limit_waited_ns += waited;
        self.vtime = self.vtime.max(start);
        at
    }

    /// Work done for `ns` outside its commands (background): advances its P and L tags by
    /// `ops` and `bytes` from `now`, not its R tags (see the module's notes).
    pub fn charge(&mut self, ns: u32, ops: u64, bytes: u64, now: u64) {
        let vtime = self.vtime;
        let t = self.tags(ns);
        t.p =
            t.p.max(vtime.saturating_sub(P_LAG))
                .saturating_add(t.p_cost(ops, bytes));
        t.advance_l(ops, bytes, now);
        t.stats.charged_bytes += bytes;
    }

    /// The namespace's L tag (when its next command may start).
    pub fn limit_at(&self, ns: u32) -> u64 {
        self.ns.get(&ns).map(Tags::l).unwrap_or(0)
    }
}
