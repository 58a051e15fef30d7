//! A device handle's open iterators: at most [`MAX_ITERATORS`] at once, each under a
//! handle number (`kvs_iterator_handle`, a byte) and the key space that opened it. Numbers
//! are handed out round-robin over 1 to 255, so a closed iterator's number names no other
//! iterator until about 240 more were opened: a stale handle (a double close, a next after
//! close, from any thread) is `KVS_ERR_ITERATOR_NOT_EXIST` rather than another thread's
//! iterator.

use crate::result::KvsError;
use std::sync::{Arc, Mutex, MutexGuard};

/// Iterators a device handle may have open at once (`KVS_MAX_ITERATE_HANDLE`).
pub const MAX_ITERATORS: usize = 16;

/// An open iterator: its handle number, its key space's handle and its state.
type Slot<T> = (u8, usize, Arc<Mutex<T>>);

struct State<T> {
    slots: Vec<Option<Slot<T>>>,
    /// The number handed out last.
    last: u8,
}

/// The open iterators (`T`s) of a device handle.
pub struct IteratorSlots<T> {
    state: Mutex<State<T>>,
}

impl<T> Default for IteratorSlots<T> {
    fn default() -> Self {
        IteratorSlots {
            state: Mutex::new(State {
                slots: (0..MAX_ITERATORS).map(|_| None).collect(),
                last: 0,
            }),
        }
    }
}

impl<T> IteratorSlots<T> {
    /// Keeps `it` (of key space `key_space`); its handle number (1 to 255).
    pub fn add(&self, key_space: usize, it: T) -> Result<u8, KvsError> {
        let mut st = self.lock();
        let free = st
            .slots
            .iter()
            .position(Option::is_none)
            .ok_or(KvsError::IteratorMax)?;
        // At most 15 others are live, so one of the next 16 numbers is free.
        let mut handle = st.last;
        loop {
            handle = handle.checked_add(1).unwrap_or(1);
            if !st.slots.iter().flatten().any(|(h, _, _)| *h == handle) {
                break;
            }
        }
        st.slots[free] = Some((handle, key_space, Arc::new(Mutex::new(it))));
        st.last = handle;
        Ok(handle)
    }

    /// Iterator `handle`, if key space `key_space` opened it.
    pub fn get(&self, key_space: usize, handle: u8) -> Result<Arc<Mutex<T>>, KvsError> {
        let st = self.lock();
        let slot = st
            .slots
            .iter()
            .flatten()
            .find(|(h, ks, _)| *h == handle && *ks == key_space);
        slot.map(|(_, _, it)| it.clone())
            .ok_or(KvsError::IteratorNotExist)
    }

    /// Closes iterator `handle` of key space `key_space` (found and closed under one lock).
    pub fn remove(&self, key_space: usize, handle: u8) -> Result<(), KvsError> {
        let mut st = self.lock();
        let slot = st.slots.iter_mut().find(|s| {
            s.as_ref()
                .is_some_and(|(h, ks, _)| *h == handle && *ks == key_space)
        });
        match slot {
            Some(s) => {
                *s = None;
                Ok(())
            }
            None => Err(KvsError::IteratorNotExist),
        }
    }

    /// Closes every iterator of key space `key_space`.
    pub fn remove_of(&self, key_space: usize) {
        for slot in self.lock().slots.iter_mut() {
            if slot.as_ref().is_some_and(|(_, ks, _)| *ks == key_space) {
                *slot = None;
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        crate::locks::lock(&self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_handle_names_no_later_iterator() {
        let slots = IteratorSlots::default();
        let a = slots.add(7, "a").unwrap();
        slots.remove(7, a).unwrap();
        let b = slots.add(7, "b").unwrap();
        assert_ne!(a, b);
        assert!(matches!(
            slots.remove(7, a),
            Err(KvsError::IteratorNotExist)
        ));
        assert!(slots.get(7, a).is_err());
        assert_eq!(*slots.get(7, b).unwrap().lock().unwrap(), "b");
        assert!(slots.get(8, b).is_err(), "another key space's");
    }

    #[test]
    fn sixteen_live_and_numbers_wrap_past_255_skipping_live_ones() {
        let slots = IteratorSlots::default();
        let live: Vec<u8> = (0..MAX_ITERATORS)
            .map(|i| slots.add(1, i).unwrap())
            .collect();
        assert!(matches!(slots.add(1, 99), Err(KvsError::IteratorMax)));
        // Keep handle 1 open and cycle another slot through every number.
        slots.remove(1, live[15]).unwrap();
        let mut seen = std::collections::HashSet::new();
        for i in 0..600 {
            let h = slots.add(1, 100 + i).unwrap();
            assert_ne!(h, 0);
            assert!(!live[..15].contains(&h), "{h} is live");
            seen.insert(h);
            slots.remove(1, h).unwrap();
        }
        assert_eq!(seen.len(), 255 - 15);
        slots.remove_of(1);
        assert!(slots.get(1, live[0]).is_err());
    }
}
