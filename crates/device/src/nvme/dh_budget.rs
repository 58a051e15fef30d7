//! The Diffie-Hellman work one peer may make the target do (`nvme.auth_dh_burst`,
//! `nvme.auth_dh_per_sec`). A DH-HMAC-CHAP transaction over an FFDHE group costs the target
//! two modular exponentiations (its key pair at the Negotiate, the shared secret at the
//! Reply, before the Reply's response can be checked): tens of milliseconds each for
//! ffdhe8192, on the network thread that serves every tenant's connections. Host NQNs are
//! not secret, so a stranger naming a host that has a secret, and reconnecting as fast as it
//! can, could keep both network threads busy with them (review, third round, M4). Each
//! peer (an address, an IPv6 /64: `admission::peer_group`) has a bucket of such work: a
//! burst for a host connecting all its queues at once (each authenticates), refilled at a
//! steady rate. Past it, a Negotiate that asks for a DH group fails ("DH group unusable")
//! before any work is done; the host may try again later.

use crate::admission::peer_group;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

/// Modular exponentiations one FFDHE transaction costs the target.
pub(super) const PER_TRANSACTION: u32 = 2;

/// Peers remembered at most: past it, those whose bucket is full again are forgotten (a
/// full bucket is what a peer never seen has).
const MAX_PEERS: usize = 4096;

pub(super) struct DhBudget {
    burst: f64,
    per_sec: f64,
    /// Each peer's work left, and when it was counted.
    peers: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl DhBudget {
    pub(super) fn new(burst: u32, per_sec: u32) -> DhBudget {
        DhBudget {
            burst: f64::from(burst),
            per_sec: f64::from(per_sec),
            peers: Mutex::new(HashMap::new()),
        }
    }

    /// Takes `n` exponentiations from `peer`'s bucket; false (nothing taken) if it holds
    /// fewer.
    pub(super) fn try_spend(&self, peer: IpAddr, n: u32) -> bool {
        let now = Instant::now();
        let mut peers = self.peers.lock();
        if peers.len() >= MAX_PEERS {
            let (burst, per_sec) = (self.burst, self.per_sec);
            peers.retain(|_, (left, at)| {
                *left + now.duration_since(*at).as_secs_f64() * per_sec < burst
            });
        }
        let (left, at) = peers.entry(peer_group(peer)).or_insert((self.burst, now));
        *left = (*left + now.duration_since(*at).as_secs_f64() * self.per_sec).min(self.burst);
        *at = now;
        if *left < f64::from(n) {
            return false;
        }
        *left -= f64::from(n);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_spends_its_burst_then_waits_others_do_not() {
        let b = DhBudget::new(4, 1);
        let x: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(b.try_spend(x, 2));
        assert!(b.try_spend(x, 2));
        assert!(!b.try_spend(x, 2), "the burst is spent");
        assert!(b.try_spend("192.0.2.2".parse().unwrap(), 2), "another peer");
        // One /64 is one peer.
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert!(b.try_spend(v6, 4));
        assert!(!b.try_spend("2001:db8::2".parse().unwrap(), 1));
    }

    #[test]
    fn the_bucket_refills_at_its_rate() {
        let b = DhBudget::new(2, 1000);
        let x: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(b.try_spend(x, 2));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(b.try_spend(x, 2), "refilled after 20 ms at 1,000 a second");
    }
}
