//! The Diffie-Hellman work one peer may make the target do (`nvme.auth_dh_burst`,
//! `nvme.auth_dh_per_sec`). A DH-HMAC-CHAP transaction over an FFDHE group costs the target
//! two modular exponentiations (its key pair at the Negotiate, the shared secret at the
//! Reply, before the Reply's response can be checked): tens of milliseconds each for
//! ffdhe8192, on the network thread that serves every tenant's connections. Host NQNs are
//! not secret, so a stranger naming a host that has a secret, and reconnecting as fast as it
//! can, could keep both network threads busy with them (review, third round, M4). Each
//! peer (an address, an IPv6 /64: `admission::peer_group`) has a bucket of such work: a
//! burst, refilled at a steady rate; a transaction that succeeds gives its work back (a
//! host that proves its secret is not who this is for: a host connecting 64 queues, each
//! authenticating, never runs dry). Past it, a Negotiate that asks for a DH group fails
//! ("DH group unusable") before any work is done; the host may try again later. Peers
//! past `MAX_PEERS` share one bucket, so the table stays small however many addresses ask.

use crate::admission::peer_group;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

/// Modular exponentiations one FFDHE transaction costs the target.
pub(super) const PER_TRANSACTION: u32 = 2;

/// Peers remembered at most. Those whose bucket is full again are forgotten (a full bucket
/// is what a peer never seen has), at most once a second; while the table is full, new
/// peers share the bucket of `OVERFLOW`.
const MAX_PEERS: usize = 4096;

/// The key of the bucket new peers share while the table is full.
const OVERFLOW: IpAddr = IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED);

pub(super) struct DhBudget {
    burst: f64,
    per_sec: f64,
    table: Mutex<Table>,
}

struct Table {
    /// Each peer's work left, and when it was counted.
    peers: HashMap<IpAddr, (f64, Instant)>,
    /// When full buckets were last forgotten.
    pruned: Instant,
}

impl DhBudget {
    pub(super) fn new(burst: u32, per_sec: u32) -> DhBudget {
        DhBudget {
            burst: f64::from(burst),
            per_sec: f64::from(per_sec),
            table: Mutex::new(Table {
                peers: HashMap::new(),
                pruned: Instant::now(),
            }),
        }
    }

    /// Takes `n` exponentiations from `peer`'s bucket; false (nothing taken) if it holds
    /// fewer.
    pub(super) fn try_spend(&self, peer: IpAddr, n: u32) -> bool {
        self.with_bucket(peer, |left| {
            if *left < f64::from(n) {
                return false;
            }
            *left -= f64::from(n);
            true
        })
    }

    /// Gives `n` back to `peer`'s bucket (a transaction that succeeded), up to the burst.
    pub(super) fn refund(&self, peer: IpAddr, n: u32) {
        let burst = self.burst;
        self.with_bucket(peer, |left| *left = (*left + f64::from(n)).min(burst));
    }

    /// Runs `f` on `peer`'s bucket, refilled to now.
    fn with_bucket<T>(&self, peer: IpAddr, f: impl FnOnce(&mut f64) -> T) -> T {
        let now = Instant::now();
        let (burst, per_sec) = (self.burst, self.per_sec);
        let refilled =
            |left: f64, at: Instant| left + now.duration_since(at).as_secs_f64() * per_sec;
        let mut t = self.table.lock();
        if t.peers.len() >= MAX_PEERS && now.duration_since(t.pruned).as_secs() >= 1 {
            t.pruned = now;
            t.peers.retain(|_, (left, at)| refilled(*left, *at) < burst);
        }
        let mut key = peer_group(peer);
        if t.peers.len() >= MAX_PEERS && !t.peers.contains_key(&key) {
            key = OVERFLOW;
        }
        let (left, at) = t.peers.entry(key).or_insert((burst, now));
        *left = refilled(*left, *at).min(burst);
        *at = now;
        f(left)
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
    fn a_success_gives_the_work_back() {
        let b = DhBudget::new(2, 1);
        let x: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..100 {
            assert!(
                b.try_spend(x, 2),
                "a host whose transactions succeed never runs dry"
            );
            b.refund(x, 2);
        }
        b.refund(x, 50);
        assert!(
            b.try_spend(x, 2) && !b.try_spend(x, 2),
            "never past the burst"
        );
    }

    #[test]
    fn past_the_table_new_peers_share_one_bucket() {
        let b = DhBudget::new(2, 1);
        for i in 0..MAX_PEERS as u32 {
            assert!(b.try_spend(IpAddr::V4(i.into()), 1));
        }
        let (p, q) = (
            IpAddr::V4(u32::MAX.into()),
            IpAddr::V4((u32::MAX - 1).into()),
        );
        assert!(b.try_spend(p, 2));
        assert!(
            !b.try_spend(q, 1),
            "a second newcomer shares the first's bucket"
        );
        assert!(b.table.lock().peers.len() <= MAX_PEERS + 1);
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
