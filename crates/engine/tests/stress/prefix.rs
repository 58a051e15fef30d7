//! After a crash without sync, the namespaces must hold the state after a prefix of the
//! writes acknowledged since the last sync point, taken in the order they were made across
//! namespaces: the log is one sequence, and a crash keeps a prefix of it, never a later write
//! without an earlier one (`docs/faults.md`). The per-key check (`NsModel::crash_unsynced`)
//! accepts any mix of old and new values; this one accepts only prefixes.

use super::config::cov;
use super::run::Slot;
use std::collections::BTreeMap;

type SlotKey = (usize, Vec<u8>);

/// The writes a crash may keep a prefix of, and each key's value at the last sync point.
pub struct Window {
    writes: Vec<(u64, SlotKey, Option<Vec<u8>>)>,
    base: BTreeMap<SlotKey, Option<Vec<u8>>>,
}

impl Window {
    /// Taken just before the crash, from the live namespaces' models.
    pub fn take(slots: &[Slot]) -> Window {
        let mut w = Window {
            writes: Vec::new(),
            base: BTreeMap::new(),
        };
        for (i, s) in slots.iter().enumerate() {
            let Slot::Live { m, .. } = s else {
                continue;
            };
            for (k, cands) in &m.since_sync {
                w.base
                    .insert((i, k.clone()), cands.first().cloned().flatten());
            }
            for (order, k, v) in &m.since_sync_order {
                w.writes.push((*order, (i, k.clone()), v.clone()));
            }
        }
        w.writes.sort_by_key(|(order, ..)| *order);
        w
    }

    /// After recovery, with the models settled on what the database holds: the length of the
    /// prefix the namespaces hold, or why they hold none.
    pub fn check(&self, slots: &[Slot]) -> Result<usize, String> {
        let held = |(i, k): &SlotKey| match &slots[*i] {
            Slot::Live { m, .. } => Some(m.data.get(k).cloned()),
            _ => None,
        };
        // Keys of namespaces destroyed since are not compared.
        let actual: BTreeMap<&SlotKey, Option<Vec<u8>>> = self
            .base
            .keys()
            .filter_map(|k| held(k).map(|v| (k, v)))
            .collect();
        let mut state: BTreeMap<&SlotKey, Option<Vec<u8>>> = self
            .base
            .iter()
            .filter(|(k, _)| actual.contains_key(k))
            .map(|(k, v)| (k, v.clone()))
            .collect();
        let mut differ = state.iter().filter(|(k, v)| actual[*k] != **v).count();
        if !self.writes.is_empty() {
            cov("a crash's prefix checked");
        }
        for p in 0..=self.writes.len() {
            if differ == 0 {
                return Ok(p);
            }
            let Some((_, k, v)) = self.writes.get(p) else {
                break;
            };
            let Some(now) = actual.get(k) else {
                continue;
            };
            let before = state.get(k).is_some_and(|x| x == now);
            state.insert(k, v.clone());
            let after = v == now;
            match (before, after) {
                (true, false) => differ += 1,
                (false, true) => differ -= 1,
                _ => {}
            }
        }
        Err(format!(
            "after a crash without sync the namespaces hold no prefix of the {} writes \
             acknowledged since the last sync point (a later write survived an earlier one)",
            self.writes.len()
        ))
    }
}
