//! Who holds a connection slot. Slots are few (`max_connections`); a client that connects and
//! never proves who it is must not keep one from a tenant that does. When every slot is taken,
//! the oldest connection that has not authenticated yet is told to go and the newcomer takes
//! its slot; only when every slot belongs to an authenticated client is the newcomer refused.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

pub struct Admission {
    slots: Arc<Semaphore>,
    /// Connections not authenticated yet, oldest first.
    unauthenticated: Mutex<VecDeque<(u64, Arc<Notify>)>>,
    next_id: AtomicU64,
}

/// A connection's slot; given back when dropped.
pub struct Ticket {
    id: u64,
    evict: Arc<Notify>,
    admission: Arc<Admission>,
    authenticated: bool,
    _slot: OwnedSemaphorePermit,
}

impl Admission {
    pub fn new(max_connections: usize) -> Arc<Admission> {
        Arc::new(Admission {
            slots: Arc::new(Semaphore::new(max_connections)),
            unauthenticated: Mutex::default(),
            next_id: AtomicU64::new(0),
        })
    }

    fn ticket(self: &Arc<Self>, slot: OwnedSemaphorePermit) -> Ticket {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        self.unauthenticated.lock().push_back((id, evict.clone()));
        Ticket {
            id,
            evict,
            admission: self.clone(),
            authenticated: false,
            _slot: slot,
        }
    }

    /// A free slot, at once.
    pub fn try_admit(self: &Arc<Self>) -> Option<Ticket> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        Some(self.ticket(slot))
    }

    /// Tells the oldest unauthenticated connection to go; false if there is none.
    pub fn evict_oldest(&self) -> bool {
        match self.unauthenticated.lock().pop_front() {
            Some((_, evict)) => {
                // Stored if the connection is not waiting right now: it sees it next time.
                evict.notify_one();
                true
            }
            None => false,
        }
    }

    /// The slot an eviction frees, waiting at most `wait` for it.
    pub async fn admit_after_eviction(self: &Arc<Self>, wait: Duration) -> Option<Ticket> {
        let slot = tokio::time::timeout(wait, self.slots.clone().acquire_owned())
            .await
            .ok()?
            .ok()?;
        Some(self.ticket(slot))
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

    /// Resolves when the connection is evicted to make room for another.
    pub async fn evicted(&self) {
        self.evict.notified().await
    }

    fn forget(&self) {
        let mut q = self.admission.unauthenticated.lock();
        if let Some(i) = q.iter().position(|(id, _)| *id == self.id) {
            q.remove(i);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.authenticated {
            self.forget();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_device_evicts_the_oldest_unauthenticated_connection_only() {
        let a = Admission::new(2);
        let mut first = a.try_admit().unwrap();
        let second = a.try_admit().unwrap();
        assert!(a.try_admit().is_none());
        first.authenticated();
        // The second is the only one that may go.
        assert!(a.evict_oldest());
        tokio::time::timeout(Duration::from_secs(1), second.evicted())
            .await
            .expect("told to go");
        drop(second);
        let third = a
            .admit_after_eviction(Duration::from_secs(1))
            .await
            .unwrap();
        drop(third);
        // Nobody unauthenticated is left: nothing to evict, the authenticated one stays.
        assert!(!a.evict_oldest());
        assert!(first.is_authenticated());
    }
}
