//! A worker's async groups: 1 to 12 `_async` calls on distinct keys (so their order does
//! not matter), each expecting what the model says at the time of the call; the worker waits
//! for every callback, then applies the group to its model.

use crate::asyncs::{outcome, Call, Expect, Group};
use crate::ffi::{NOOVERWRITE, POST, UPDATE_ONLY};
use crate::worker::Worker;
use cerberus_kvs::code;

/// What an async call does to the model once its callback came.
enum Effect {
    Put(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
}

impl Worker {
    pub fn op_async_group(&mut self) -> Result<(), String> {
        let n = self.rng.range(1, 12);
        let mut used = std::collections::HashSet::new();
        let mut calls: Vec<(Box<Call>, Option<Effect>, bool)> = Vec::new();
        for _ in 0..n {
            let mut k = self.any_key();
            if !used.insert(k.clone()) {
                continue;
            }
            let stored = self.model.get(&k).cloned();
            let (call, effect, null_key) = match self.rng.below(9) {
                0..=2 => {
                    let st = [POST, POST, UPDATE_ONLY, NOOVERWRITE][self.rng.below(4)];
                    let want = match (st, &stored) {
                        (UPDATE_ONLY, None) => code::KEY_NOT_EXIST,
                        (NOOVERWRITE, Some(_)) => code::VALUE_UPDATE_NOT_ALLOWED,
                        _ => code::SUCCESS,
                    };
                    let v = self.value();
                    let effect = (want == code::SUCCESS).then(|| Effect::Put(k.clone(), v.clone()));
                    (Call::store(k, v, st, want), effect, false)
                }
                3..=4 => {
                    let len = stored.as_ref().map_or(0, Vec::len);
                    let small = len > 0 && self.rng.one_in(3);
                    let room = if small {
                        self.rng.below(len)
                    } else {
                        len + self.rng.below(32)
                    };
                    let delete = self.rng.one_in(4);
                    // From an offset (aligned or not) one time in four.
                    let offset = if !delete && self.rng.one_in(4) {
                        512 * self.rng.range(0, len / 512 + 1) + usize::from(self.rng.one_in(4))
                    } else {
                        0
                    };
                    let want = match &stored {
                        _ if offset % 512 != 0 => code::VALUE_OFFSET_MISALIGNED,
                        None => code::KEY_NOT_EXIST,
                        Some(v) if offset > v.len() => code::VALUE_OFFSET_INVALID,
                        Some(v) if room < v.len() - offset => code::BUFFER_SMALL,
                        Some(_) => code::SUCCESS,
                    };
                    let effect =
                        (delete && want == code::SUCCESS).then(|| Effect::Remove(k.clone()));
                    (
                        Call::retrieve(
                            k,
                            (room, offset as u32),
                            delete,
                            Expect::Value(want, stored),
                        ),
                        effect,
                        false,
                    )
                }
                5 => {
                    let must = self.rng.one_in(2);
                    let want = if must && stored.is_none() {
                        code::KEY_NOT_EXIST
                    } else {
                        code::SUCCESS
                    };
                    (
                        Call::delete(k.clone(), must, want),
                        Some(Effect::Remove(k)),
                        false,
                    )
                }
                6 => {
                    let mut keys = vec![k, self.absent_key()];
                    for _ in 0..self.rng.below(4) {
                        k = self.any_key();
                        if used.insert(k.clone()) {
                            keys.push(k);
                        }
                    }
                    let bits = keys.iter().map(|k| self.model.contains_key(k)).collect();
                    (Call::exist(keys, bits), None, false)
                }
                7 => (
                    Call::store(k, vec![1, 2, 3], POST, code::PARAM_INVALID),
                    None,
                    true,
                ),
                _ => {
                    let want = Expect::Value(code::KEY_LENGTH_INVALID, None);
                    (
                        Call::retrieve(Vec::new(), (16, 0), false, want),
                        None,
                        false,
                    )
                }
            };
            calls.push((call, effect, null_key));
        }
        let names: Vec<String> = calls.iter().map(|c| c.0.what.clone()).collect();
        self.note(format!(
            "async group of {}: {}",
            calls.len(),
            names.join("; ")
        ));
        let group = Group::default();
        let mut queued = 0;
        let mut refused = None;
        for (call, _, null_key) in calls.iter_mut() {
            // SAFETY: the calls and the group outlive their callbacks: waited for below.
            let r = unsafe { call.submit(self.ctx.ks, &group, *null_key) };
            if r == code::SUCCESS {
                queued += 1;
            } else {
                refused = Some(format!("{}: queued with {r:#x}", call.what));
                break;
            }
        }
        group.wait(queued)?;
        if let Some(r) = refused {
            return Err(r);
        }
        for (call, effect, _) in calls {
            outcome(&call)?;
            match effect {
                Some(Effect::Put(k, v)) => {
                    self.model.insert(k, v);
                }
                Some(Effect::Remove(k)) => {
                    self.model.remove(&k);
                }
                None => {}
            }
        }
        Ok(())
    }
}
