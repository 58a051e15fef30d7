//! Who holds a connection slot. Slots are few (`max_connections`); a client that connects and
//! never proves who it is must not keep one from a tenant that does. When every slot is taken,
//! the oldest connection that has not authenticated yet is told to go and the newcomer takes
//! its slot; only when every slot belongs to an authenticated client is the newcomer refused.
//! A port may also cap the slots one peer address holds (the NVMe/TCP port does), so one
//! host cannot take them all even by proving itself.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// An unauthenticated connection: its id, its eviction notice, when it arrived, its peer.
type Waiting = (u64, Arc<Notify>, Instant, IpAddr);

pub struct Admission {
    slots: Arc<Semaphore>,
    /// Connections not authenticated yet, oldest first, with when each arrived and from
    /// where.
    unauthenticated: Mutex<VecDeque<Waiting>>,
    /// Connections told to go that have not given their slot back yet.
    evicting: Mutex<HashSet<u64>>,
    next_id: AtomicU64,
    /// Most slots one peer address holds, and how many each holds now.
    per_peer: usize,
    peers: Mutex<HashMap<IpAddr, usize>>,
    /// How long a newcomer is safe from eviction (`EVICTION_GRACE` or none).
    grace: Duration,
}

/// How long an NVMe/TCP connection is safe from eviction after it arrives: a host's
/// handshake (ICReq, Connect, authentication) takes several round trips. The native port's
/// clients prove themselves in one frame and get none.
pub const EVICTION_GRACE: Duration = Duration::from_millis(250);

/// How long a newcomer waits for the slot of the connection evicted for it.
pub(crate) const EVICTION_WAIT: Duration = Duration::from_secs(2);

/// What a newcomer finding every slot taken may do (`Admission::make_room`).
#[derive(Debug, PartialEq, Eq)]
pub enum Room {
    /// The oldest unauthenticated connection was told to go: wait for its slot.
    Evicted,
    /// Nobody may be evicted now, but connections already told to go hold slots that will
    /// free: wait for one.
    Soon,
    /// Every slot belongs to an authenticated connection or one that arrived within
    /// its grace: refuse the newcomer.
    Full,
}

/// A connection's slot; given back when dropped.
pub struct Ticket {
    id: u64,
    evict: Arc<Notify>,
    admission: Arc<Admission>,
    authenticated: bool,
    peer: IpAddr,
    _slot: OwnedSemaphorePermit,
}

/// The peer a stranger's connection from `ip` counts as, where strangers are weighed (the
/// eviction order here, the NVMe/TCP target's DH budget): its address, or for IPv6 its /64
/// (one host or site is given a /64 and may pick any address in it: counted by address, it
/// could spread over as many "peers" as it likes); an IPv4-mapped address is its IPv4
/// address. The slots a peer holds (`per_peer`) are counted by address: a data centre's
/// subnet is often one /64, and its hosts, each proving itself, must not share one cap.
pub fn peer_group(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl Admission {
    /// `max_connections` slots, at most `per_peer` of them from one address, a newcomer
    /// safe from eviction for `grace`.
    pub fn new(max_connections: usize, per_peer: usize, grace: Duration) -> Arc<Admission> {
        Arc::new(Admission {
            slots: Arc::new(Semaphore::new(max_connections)),
            unauthenticated: Mutex::default(),
            evicting: Mutex::default(),
            next_id: AtomicU64::new(0),
            per_peer,
            peers: Mutex::default(),
            grace,
        })
    }

    /// Counts a slot for `peer`; false if it holds `per_peer` already.
    pub fn peer_may_connect(&self, peer: IpAddr) -> bool {
        let mut peers = self.peers.lock();
        let n = peers.entry(peer).or_default();
        if *n >= self.per_peer {
            return false;
        }
        *n += 1;
        true
    }

    /// Gives back a slot `peer_may_connect` counted (a connection refused or closed).
    pub fn peer_left(&self, peer: IpAddr) {
        let mut peers = self.peers.lock();
        if let Some(n) = peers.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                peers.remove(&peer);
            }
        }
    }

    fn ticket(self: &Arc<Self>, slot: OwnedSemaphorePermit, peer: IpAddr) -> Ticket {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        let now = Instant::now();
        self.unauthenticated
            .lock()
            .push_back((id, evict.clone(), now, peer));
        Ticket {
            id,
            evict,
            admission: self.clone(),
            authenticated: false,
            peer,
            _slot: slot,
        }
    }

    /// A free slot, at once, for a connection from `peer` that `peer_may_connect` counted.
    pub fn try_admit(self: &Arc<Self>, peer: IpAddr) -> Option<Ticket> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        Some(self.ticket(slot, peer))
    }

    /// Makes room for a newcomer when every slot is taken (`try_admit` failed).
    pub fn make_room(&self) -> Room {
        if self.evict_oldest() {
            Room::Evicted
        } else if !self.evicting.lock().is_empty() {
            Room::Soon
        } else {
            Room::Full
        }
    }

    /// Tells an unauthenticated connection that arrived `grace` ago or more to go (one that
    /// just arrived may be a host in the middle of proving itself: a flood of newcomers must
    /// not push it out): the oldest of the peer (`peer_group`) holding the most
    /// unauthenticated slots, so strangers reconnecting from a few addresses push out their own before a
    /// host still authenticating from its own (a DH-HMAC-CHAP exchange takes several round
    /// trips, past the grace on a busy device); false if there is none.
    fn evict_oldest(&self) -> bool {
        let mut q = self.unauthenticated.lock();
        let mut by_peer: HashMap<IpAddr, usize> = HashMap::new();
        for (_, _, _, peer) in q.iter() {
            *by_peer.entry(peer_group(*peer)).or_default() += 1;
        }
        // Oldest first: the first of the largest count wins ties.
        let mut chosen: Option<(usize, usize)> = None;
        for (i, (_, _, at, peer)) in q.iter().enumerate() {
            if at.elapsed() < self.grace {
                break;
            }
            let n = by_peer[&peer_group(*peer)];
            if chosen.is_none_or(|(_, best)| n > best) {
                chosen = Some((i, n));
            }
        }
        let Some((id, evict, _, _)) = chosen.and_then(|(i, _)| q.remove(i)) else {
            return false;
        };
        drop(q);
        self.evicting.lock().insert(id);
        // Stored if the connection is not waiting right now: it sees it next time.
        evict.notify_one();
        true
    }

    /// The slot an eviction frees, waiting at most `wait` for it.
    pub async fn admit_after_eviction(
        self: &Arc<Self>,
        wait: Duration,
        peer: IpAddr,
    ) -> Option<Ticket> {
        let slot = tokio::time::timeout(wait, self.slots.clone().acquire_owned())
            .await
            .ok()?
            .ok()?;
        Some(self.ticket(slot, peer))
    }
}

impl Ticket {
    /// The connection has proved a credential: it is no longer the first to go.
    pub fn authenticated(&mut self) {
        if !self.authenticated {
            self.authenticated = true;
            self.forget();
        }
    }

    pub fn is_authenticated(&self) -> bool {
        self.authenticated
    }

    /// The address it came from.
    pub fn peer(&self) -> IpAddr {
        self.peer
    }

    /// Resolves when the connection is evicted to make room for another.
    pub async fn evicted(&self) {
        self.evict.notified().await
    }

    fn forget(&self) {
        let mut q = self.admission.unauthenticated.lock();
        if let Some(i) = q.iter().position(|(id, _, _, _)| *id == self.id) {
            q.remove(i);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.authenticated {
            self.forget();
        }
        self.admission.evicting.lock().remove(&self.id);
        self.admission.peer_left(self.peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_device_evicts_the_oldest_unauthenticated_connection_only() {
        let a = Admission::new(2, usize::MAX, EVICTION_GRACE);
        let ip = IpAddr::from([127, 0, 0, 1]);
        let mut first = a.try_admit(ip).unwrap();
        let second = a.try_admit(ip).unwrap();
        assert!(a.try_admit(ip).is_none());
        first.authenticated();
        // The second just arrived: safe for a while, so the newcomer is refused.
        assert_eq!(a.make_room(), Room::Full);
        std::thread::sleep(EVICTION_GRACE + Duration::from_millis(50));
        // Now it is the only one that may go.
        assert_eq!(a.make_room(), Room::Evicted);
        tokio::time::timeout(Duration::from_secs(1), second.evicted())
            .await
            .expect("told to go");
        drop(second);
        let third = a
            .admit_after_eviction(Duration::from_secs(1), ip)
            .await
            .unwrap();
        // The third, unauthenticated, is told to go once past its grace; while it has not
        // gone, a newcomer waits for its slot rather than being refused.
        std::thread::sleep(EVICTION_GRACE + Duration::from_millis(50));
        assert_eq!(a.make_room(), Room::Evicted);
        assert_eq!(a.make_room(), Room::Soon);
        drop(third);
        let mut fourth = a
            .admit_after_eviction(Duration::from_secs(1), ip)
            .await
            .unwrap();
        fourth.authenticated();
        // Every slot authenticated: refused.
        assert!(a.try_admit(ip).is_none());
        assert_eq!(a.make_room(), Room::Full);
        assert!(first.is_authenticated());
        drop(fourth);
        assert!(
            a.evicting.lock().is_empty(),
            "the evicted gave their slots back"
        );
    }

    #[tokio::test]
    async fn the_peer_holding_the_most_unauthenticated_slots_goes_first() {
        let a = Admission::new(4, usize::MAX, Duration::ZERO);
        let (host, stranger) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 9]));
        // The host arrived first and is still authenticating; the stranger holds three.
        let host_conn = a.try_admit(host).unwrap();
        let strangers: Vec<Ticket> = (0..3).map(|_| a.try_admit(stranger).unwrap()).collect();
        // While the stranger holds more unauthenticated slots than the host, its own go.
        for _ in 0..2 {
            assert_eq!(a.make_room(), Room::Evicted);
            let q = a.unauthenticated.lock();
            assert!(
                q.iter().any(|e| e.0 == host_conn.id),
                "the host was told to go"
            );
        }
        for t in &strangers[..2] {
            tokio::time::timeout(Duration::from_secs(1), t.evicted())
                .await
                .expect("a stranger told to go");
        }
        // One each: the oldest goes (plain age decides between equals).
        assert_eq!(a.make_room(), Room::Evicted);
        tokio::time::timeout(Duration::from_secs(1), host_conn.evicted())
            .await
            .expect("the oldest told to go");
    }

    #[test]
    fn one_peer_holds_at_most_its_share() {
        let a = Admission::new(10, 2, Duration::ZERO);
        let (x, y) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        assert!(a.peer_may_connect(x));
        assert!(a.peer_may_connect(x));
        assert!(!a.peer_may_connect(x), "a third from one address");
        assert!(a.peer_may_connect(y), "another address is not held back");
        let t = a.try_admit(x).unwrap();
        drop(t); // gives back one of x's
        assert!(a.peer_may_connect(x));
        a.peer_left(y);
        assert!(a.peers.lock().get(&y).is_none());
    }

    /// Review, third round, L1: a stranger spreading over the addresses of one IPv6 /64 is
    /// one peer in the eviction order; the slots a peer holds are still counted by address
    /// (hosts of one data-centre /64 each prove themselves: the review's M2).
    #[tokio::test]
    async fn one_ipv6_64_is_one_stranger_but_not_one_cap() {
        let a = Admission::new(4, 1, Duration::ZERO);
        let host: IpAddr = "2001:db8:9::1".parse().unwrap();
        let host_conn = a.try_admit(host).unwrap();
        let strangers: Vec<Ticket> = (1..4u16)
            .map(|i| {
                let ip = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, i, 0, 0, 1));
                assert!(a.peer_may_connect(ip), "one slot each by address");
                a.try_admit(ip).unwrap()
            })
            .collect();
        assert_eq!(a.make_room(), Room::Evicted);
        tokio::time::timeout(Duration::from_secs(1), strangers[0].evicted())
            .await
            .expect("the /64 holding three goes first, not the older host");
        assert!(a.unauthenticated.lock().iter().any(|e| e.0 == host_conn.id));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(peer_group(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }
}
