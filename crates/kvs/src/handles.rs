//! The handles C holds: numbers, never addresses. A registry maps each to its object, so a
//! closed, forged or garbage handle is an error code (`KVS_ERR_DEV_NOT_EXIST`, ...) rather
//! than a dereference of freed memory.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// The step between handles of a registry; a registry's kind is its offset within it.
pub const STRIDE: usize = 0x10;

/// Objects by handle.
pub struct Registry<T> {
    next: AtomicUsize,
    live: RwLock<BTreeMap<usize, Arc<T>>>,
}

impl<T> Registry<T> {
    /// An empty registry (usable in a `static`) whose handles are `kind` (below
    /// [`STRIDE`]) past a multiple of it: registries of different kinds never hand out the
    /// same number, so one kind of handle passed for another names nothing.
    pub const fn new(kind: usize) -> Registry<T> {
        Registry {
            // Handles start high and apart so that small integers and NULL name nothing.
            next: AtomicUsize::new(0x1000 + kind % STRIDE),
            live: RwLock::new(BTreeMap::new()),
        }
    }

    /// Registers `obj`; its handle.
    pub fn insert(&self, obj: Arc<T>) -> usize {
        let id = self.next.fetch_add(STRIDE, Ordering::Relaxed);
        self.write().insert(id, obj);
        id
    }

    /// The object of handle `id`.
    pub fn get(&self, id: usize) -> Option<Arc<T>> {
        let live = match self.live.read() {
            Ok(l) => l,
            // A panic while holding the lock left the map whole: insert and remove are one
            // call each.
            Err(poisoned) => poisoned.into_inner(),
        };
        live.get(&id).cloned()
    }

    /// Unregisters handle `id`; its object.
    pub fn remove(&self, id: usize) -> Option<Arc<T>> {
        self.write().remove(&id)
    }

    /// Unregisters every object `pred` picks; their handles and them.
    pub fn remove_where(&self, pred: impl Fn(&T) -> bool) -> Vec<(usize, Arc<T>)> {
        let mut live = self.write();
        let ids: Vec<usize> = live
            .iter()
            .filter(|(_, o)| pred(o))
            .map(|(id, _)| *id)
            .collect();
        ids.iter()
            .filter_map(|id| live.remove(id).map(|o| (*id, o)))
            .collect()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<usize, Arc<T>>> {
        match self.live.write() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_unique_and_die_with_their_object() {
        let r = Registry::new(0);
        let a = r.insert(Arc::new(1));
        let b = r.insert(Arc::new(2));
        assert_ne!(a, b);
        assert_eq!(r.get(a).as_deref(), Some(&1));
        assert!(r.get(0).is_none());
        assert!(r.get(a + 1).is_none());
        assert_eq!(r.remove(a).as_deref(), Some(&1));
        assert!(r.get(a).is_none());
        assert_eq!(r.remove_where(|v| *v == 2).len(), 1);
        assert!(r.get(b).is_none());
    }

    #[test]
    fn registries_of_different_kinds_never_share_a_number() {
        let (devices, spaces) = (Registry::new(0), Registry::new(8));
        let d: Vec<usize> = (0..50).map(|i| devices.insert(Arc::new(i))).collect();
        let s: Vec<usize> = (0..50).map(|i| spaces.insert(Arc::new(i))).collect();
        assert!(d.iter().all(|h| !s.contains(h)));
    }
}
