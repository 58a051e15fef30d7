//! The target's controllers: one per admin queue's Connect, found again by its id when the
//! host's I/O queues connect. Each keeps its host's NQN (its namespaces follow from it) and
//! the registers and features the host set.

use parking_lot::Mutex;
use rand::Rng;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use tokio::sync::watch;

/// When a controller's I/O queues last read something, in ms since the first call: what
/// keeps its admin queue from the idle deadline while they are busy. A host connected
/// without a keep-alive timeout (KATO 0, as this crate's blocking client) sends nothing on
/// its admin queue after the set-up; closing it would end the controller and its busy I/O
/// queues with it.
#[derive(Debug, Default)]
pub struct Activity(AtomicU64);

fn since_start() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

impl Activity {
    /// An I/O queue of the controller read something now (stored plus one: 0 is never,
    /// and the first call of all reads 0 ms).
    pub fn touch(&self) {
        self.0.store(since_start() + 1, Ordering::Relaxed);
    }

    /// Whether an I/O queue of the controller read something within `within`.
    pub fn recent(&self, within: std::time::Duration) -> bool {
        let last = self.0.load(Ordering::Relaxed);
        last != 0 && (since_start() + 1).saturating_sub(last) < within.as_millis() as u64
    }
}

/// What one controller's hosts moved, for its SMART / health page: another controller's
/// traffic (another tenant's) never shows in it.
#[derive(Debug, Default)]
pub struct Traffic {
    read_bytes: AtomicU64,
    written_bytes: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
}

impl Traffic {
    /// A read command completed, `bytes` of data sent to the host.
    pub fn read(&self, bytes: u64) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.read_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A write command completed, `bytes` of data taken from the host.
    pub fn wrote(&self, bytes: u64) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.written_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes read, bytes written, read commands, write commands.
    pub fn figures(&self) -> [u64; 4] {
        [
            self.read_bytes.load(Ordering::Relaxed),
            self.written_bytes.load(Ordering::Relaxed),
            self.reads.load(Ordering::Relaxed),
            self.writes.load(Ordering::Relaxed),
        ]
    }
}

/// CC.EN: the host enables the controller.
pub const CC_EN: u32 = 1;
/// CSTS.RDY: the controller is ready.
pub const CSTS_RDY: u32 = 1;
/// CSTS.SHST = 10b: shutdown processing complete.
pub const CSTS_SHST_DONE: u32 = 0b10 << 2;

/// One controller's state.
#[derive(Debug)]
pub struct Controller {
    /// The host's NQN from the admin Connect.
    pub hostnqn: String,
    /// The Connect's host identifier (I/O queues must give the same).
    pub hostid: [u8; 16],
    /// Controller Configuration as last set.
    pub cc: u32,
    /// Controller Status, following CC.
    pub csts: u32,
    /// Features the host set, by feature id (their CDW11).
    pub features: HashMap<u8, u32>,
    /// A discovery controller (the well-known NQN): no I/O queues, the discovery log.
    pub discovery: bool,
    /// Keep-alive timeout in ms from the admin Connect or Set Features (0: none).
    pub kato_ms: u32,
    /// Turns true when the controller goes (its admin queue closed or its keep-alive
    /// expired): its I/O queues close with it.
    gone: watch::Sender<bool>,
    /// Its I/O queues' last reads.
    pub activity: Arc<Activity>,
    /// What its I/O queues moved.
    pub traffic: Arc<Traffic>,
}

impl Controller {
    /// What an I/O queue of this controller waits on to learn it went.
    pub fn gone(&self) -> watch::Receiver<bool> {
        self.gone.subscribe()
    }
    /// Applies a write of CC: enable -> ready, a shutdown notification -> shutdown complete
    /// (nothing is buffered past what the engine keeps, so it completes at once).
    pub fn set_cc(&mut self, cc: u32) {
        self.cc = cc;
        let mut csts = 0;
        if cc & CC_EN != 0 {
            csts |= CSTS_RDY;
        }
        if (cc >> 14) & 0b11 != 0 {
            csts |= CSTS_SHST_DONE;
        }
        self.csts = csts;
    }
}

impl Controller {
    fn new(hostnqn: &str, hostid: [u8; 16], discovery: bool, kato_ms: u32) -> Controller {
        Controller {
            hostnqn: hostnqn.to_string(),
            hostid,
            cc: 0,
            csts: 0,
            features: HashMap::new(),
            discovery,
            kato_ms,
            gone: watch::channel(false).0,
            activity: Arc::default(),
            traffic: Arc::default(),
        }
    }

    /// A controller in no registry: what an I/O queue whose host must authenticate holds
    /// until it has ([`Controllers::join`] then gives it the one its Connect named), so a
    /// stranger naming a live id reads and marks nothing of it.
    pub fn detached(hostnqn: &str, hostid: [u8; 16]) -> Arc<Mutex<Controller>> {
        Arc::new(Mutex::new(Controller::new(hostnqn, hostid, false, 0)))
    }
}

/// The highest controller id: 0xFFF0 and up are reserved (0xFFFF: "allocate one").
const MAX_ID: u16 = 0xFFEF;

/// Every live controller, by id.
#[derive(Default)]
pub struct Controllers {
    map: Mutex<HashMap<u16, Arc<Mutex<Controller>>>>,
}

impl Controllers {
    /// A new controller for `hostnqn`; None when every id (1 to 0xFFEF) is taken. Its id is
    /// random, not the next of a sequence: a host learns nothing of the others' ids from
    /// its own, and cannot name one it was not given but by luck.
    pub fn allocate(
        &self,
        hostnqn: &str,
        hostid: [u8; 16],
        discovery: bool,
        kato_ms: u32,
    ) -> Option<(u16, Arc<Mutex<Controller>>)> {
        let mut map = self.map.lock();
        if map.len() >= usize::from(MAX_ID) {
            return None;
        }
        // The first free id from a random one: uniform while few are live, and one pass
        // at most when nearly all are.
        let start = rand::rngs::OsRng.gen_range(0..MAX_ID);
        let id = (0..MAX_ID)
            .map(|i| ((u32::from(start) + u32::from(i)) % u32::from(MAX_ID)) as u16 + 1)
            .find(|id| !map.contains_key(id))?;
        let c = Arc::new(Mutex::new(Controller::new(
            hostnqn, hostid, discovery, kato_ms,
        )));
        map.insert(id, c.clone());
        Some((id, c))
    }

    /// Controller `id`, if live.
    pub fn get(&self, id: u16) -> Option<Arc<Mutex<Controller>>> {
        self.map.lock().get(&id).cloned()
    }

    /// The controller an I/O queue's Connect named, if it is live, of the same host (NQN
    /// and host identifier), enabled, and not a discovery controller (which has no I/O
    /// queues). Every other case is the same None: the caller answers them alike.
    pub fn join(
        &self,
        id: u16,
        hostnqn: &str,
        hostid: &[u8; 16],
    ) -> Option<Arc<Mutex<Controller>>> {
        self.get(id).filter(|c| {
            let c = c.lock();
            c.hostnqn == hostnqn && &c.hostid == hostid && c.csts & CSTS_RDY != 0 && !c.discovery
        })
    }

    /// Controller `id` goes with its admin queue, and its I/O queues with it.
    pub fn remove(&self, id: u16) {
        if let Some(c) = self.map.lock().remove(&id) {
            c.lock().gone.send_replace(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_is_recent_from_its_first_touch() {
        let a = Activity::default();
        assert!(
            !a.recent(std::time::Duration::from_secs(3600)),
            "never touched"
        );
        // The first touch of a process reads 0 ms since the start: still a touch.
        a.touch();
        assert!(a.recent(std::time::Duration::from_secs(1)));
    }

    #[test]
    fn removing_a_controller_tells_its_queues() {
        let c = Controllers::default();
        let (id, ctrl) = c.allocate("nqn.h", [0; 16], false, 5000).unwrap();
        let gone = ctrl.lock().gone();
        assert!(!*gone.borrow());
        assert_eq!(ctrl.lock().kato_ms, 5000);
        let (other, _) = c.allocate("nqn.h", [0; 16], true, 0).unwrap();
        assert_ne!(id, other);
        c.remove(id);
        assert!(*gone.borrow());
        assert!(c.get(id).is_none());
        assert!(c.get(other).is_some_and(|o| o.lock().discovery));
    }

    #[test]
    fn ids_are_random_in_range_and_never_reused_while_live() {
        let c = Controllers::default();
        let ids: Vec<u16> = (0..64)
            .map(|_| c.allocate("nqn.h", [0; 16], false, 0).unwrap().0)
            .collect();
        assert!(ids.iter().all(|&id| (1..=MAX_ID).contains(&id)));
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "an id given twice while live");
        // A sequence would give consecutive ids: 63 steps of one by chance are
        // (1/65519)^63 likely.
        let steps_of_one = ids.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(steps_of_one < 8, "sequential ids: {ids:?}");
    }

    #[test]
    fn every_id_is_given_once_then_none() {
        let c = Controllers::default();
        for _ in 0..MAX_ID {
            assert!(c.allocate("nqn.h", [0; 16], false, 0).is_some());
        }
        assert!(c.allocate("nqn.h", [0; 16], false, 0).is_none());
        // The one freed is the one given next.
        c.remove(777);
        assert_eq!(c.allocate("nqn.h", [0; 16], false, 0).unwrap().0, 777);
    }

    #[test]
    fn an_io_queue_joins_only_its_hosts_enabled_controller() {
        let c = Controllers::default();
        let (id, ctrl) = c.allocate("nqn.a", [1; 16], false, 0).unwrap();
        assert!(c.join(id, "nqn.a", &[1; 16]).is_none(), "not enabled yet");
        ctrl.lock().set_cc(CC_EN);
        assert!(c.join(id, "nqn.a", &[1; 16]).is_some());
        assert!(c.join(id, "nqn.b", &[1; 16]).is_none(), "another host's");
        assert!(c.join(id, "nqn.a", &[2; 16]).is_none(), "another host id");
        let other = (id % MAX_ID) + 1;
        assert!(c.join(other, "nqn.a", &[1; 16]).is_none(), "no such id");
        // A detached controller is in no registry.
        let d = Controller::detached("nqn.a", [1; 16]);
        assert!(!Arc::ptr_eq(&d, &ctrl));
    }
}
