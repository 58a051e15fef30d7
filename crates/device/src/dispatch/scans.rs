//! Ordered reads of a namespace: a one-shot list of keys, and the iterators a connection
//! opens, pages through and closes.

use super::engine_error::engine;
use super::{Outcome, Shared, ENTRY_OVERHEAD};
use crate::iterators::ConnIterators;
use cerberus_engine::ReadOptions;
use cerberus_engine::Readable;
use cerberus_proto::Reply;

impl Shared {
    pub(super) fn list(
        &self,
        ns: u32,
        start: &[u8],
        start_exclusive: bool,
        max_keys: u32,
    ) -> Outcome {
        self.check_len("start key", start)?;
        let limit = max_keys.min(self.config.max_list_keys) as usize;
        let opts = ReadOptions {
            keys_only: true,
            ..ReadOptions::default()
        };
        let mut it = self.namespace(ns)?.iter(opts).map_err(engine)?;
        if start_exclusive {
            // `start ++ 0x00` is the smallest key after `start`.
            let mut after = start.to_vec();
            after.push(0);
            it.seek(&after).map_err(engine)?;
        } else {
            it.seek(start).map_err(engine)?;
        }
        let mut keys = Vec::with_capacity(limit.min(1024));
        for entry in it.by_ref().take(limit) {
            keys.push(entry.map_err(engine)?.0);
        }
        let more = match it.next() {
            Some(entry) => entry.map(|_| true).map_err(engine)?,
            None => false,
        };
        Ok(Reply::Keys { keys, more })
    }

    pub(super) fn iter_open(
        &self,
        ns: u32,
        iters: &ConnIterators,
        start: &[u8],
        upper_bound: &[u8],
        prefix: &[u8],
        keys_only: bool,
    ) -> Outcome {
        for (what, k) in [
            ("start", start),
            ("upper bound", upper_bound),
            ("prefix", prefix),
        ] {
            self.check_len(what, k)?;
        }
        let opts = ReadOptions {
            upper_bound: (!upper_bound.is_empty()).then(|| upper_bound.to_vec()),
            prefix: (!prefix.is_empty()).then(|| prefix.to_vec()),
            keys_only,
            prefetch_degree: self.config.iterator_prefetch_degree(),
            ..ReadOptions::default()
        };
        let mut it = self.namespace(ns)?.iter(opts).map_err(engine)?;
        it.seek(start).map_err(engine)?;
        let gauge = &self.metrics.iterators_open;
        Ok(Reply::Iter(iters.open(ns, it, gauge)?))
    }

    pub(super) fn iter_next(
        &self,
        ns: u32,
        iters: &ConnIterators,
        iter: u32,
        max_entries: u32,
        max_bytes: u32,
    ) -> Outcome {
        let cursor = iters.get(ns, iter)?;
        let mut cursor = cursor.lock();
        // A failed iterator answers nothing more (an expired one, SnapshotExpired forever):
        // it is closed, so the client is told once, then the id is unknown. It used to
        // answer an empty, finished batch, as if the scan had ended.
        let failed = |e| {
            iters.forget(ns, iter);
            engine(e)
        };
        // Before the entry held back from the last batch, which the expiry voids too.
        cursor.iter.snapshot().check().map_err(failed)?;
        let budget = max_bytes.min(self.config.max_iter_batch_bytes) as usize;
        let mut entries = Vec::new();
        let mut bytes = 0;
        while entries.len() < max_entries.max(1) as usize {
            let Some(entry) = cursor.next_entry() else {
                return Ok(Reply::Entries {
                    entries,
                    done: true,
                });
            };
            let (k, v) = entry.map_err(failed)?;
            // With the lengths the reply gives them: a batch of tiny entries stays within the
            // budget too.
            let size = k.len() + v.len() + ENTRY_OVERHEAD;
            if !entries.is_empty() && bytes + size > budget {
                cursor.pending = Some((k, v));
                return Ok(Reply::Entries {
                    entries,
                    done: false,
                });
            }
            bytes += size;
            entries.push((k, v));
        }
        // Look one entry ahead, so the client learns of the end without another call.
        let done = match cursor.next_entry() {
            Some(entry) => {
                cursor.pending = Some(entry.map_err(failed)?);
                false
            }
            None => true,
        };
        Ok(Reply::Entries { entries, done })
    }

    pub(super) fn iter_close(&self, ns: u32, iters: &ConnIterators, iter: u32) -> Outcome {
        iters.close(ns, iter)?;
        Ok(Reply::Empty)
    }
}
