//! Deleting every key of a range or a prefix (RocksDB's DeleteRange, as callers use it).
//!
//! Not range tombstones: the keys of the range are read at a snapshot (keys only, nothing
//! from the value log) and deleted in bounded batches through the ordinary write path, so
//! secondary index entries, usage and quota accounting and the value log's garbage all
//! follow the deletes as they follow single ones, and reads, compaction and recovery need
//! nothing new. The cost is a write per key, which a range tombstone would spare.
//!
//! Semantics:
//! - Each batch of at most [`DELETE_RANGE_BATCH`] keys is atomic; a call is not. A crash or
//!   an error in the middle leaves the batches written before it (a prefix of the range, in
//!   key order) deleted and the rest in place.
//! - [`Namespace::delete_range_limit`] reads one snapshot taken when it starts: a key
//!   written in the range after that survives the call. [`Namespace::delete_range`] and
//!   [`Namespace::delete_prefix`] take a new snapshot every
//!   [`DELETE_RANGE_STEP`] keys, so a key written during the call survives if the call
//!   had passed its place, and is deleted otherwise.
//! - The count is of the keys the call deleted that had a value at its snapshot (a key a
//!   concurrent writer deleted meanwhile is counted too).
//! - An empty `end` means no upper bound; a range with `start >= end` deletes nothing.

use super::handle::Namespace;
use super::iterator::ReadOptions;
use super::readable::Readable;
use crate::batch::WriteBatch;
use crate::error::Result;
use bytes::Bytes;

/// Most keys one atomic batch of a range delete holds.
pub const DELETE_RANGE_BATCH: usize = 1000;

/// Keys [`Namespace::delete_range`] deletes at one snapshot before it takes the next (so
/// no snapshot lives long enough to expire, nor holds back GC).
pub const DELETE_RANGE_STEP: u64 = 100_000;

/// What one bounded range delete did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeDelete {
    /// Keys deleted.
    pub deleted: u64,
    /// The first key of the range left in place, where to resume; `None` once the range
    /// held no more keys at the call's snapshot.
    pub next_start: Option<Bytes>,
}

/// The end of the range of keys that begin with `prefix`: the smallest key above all of
/// them, or empty (no bound) when there is none (`prefix` empty or all 0xFF bytes).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    end
}

impl Namespace {
    /// Deletes every key `k` with `start <= k < end` (an empty `end`: no bound) and returns
    /// how many it deleted. In atomic batches, not atomically: see the module's semantics.
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        let mut total = 0u64;
        let mut from = Bytes::copy_from_slice(start);
        loop {
            let step = self.delete_range_limit(&from, end, DELETE_RANGE_STEP)?;
            total += step.deleted;
            match step.next_start {
                Some(next) => from = next,
                None => return Ok(total),
            }
        }
    }

    /// Deletes every key that begins with `prefix` (every key, for an empty one) and returns
    /// how many it deleted, as [`delete_range`](Self::delete_range) does.
    pub fn delete_prefix(&self, prefix: &[u8]) -> Result<u64> {
        self.delete_range(prefix, &prefix_end(prefix))
    }

    /// Deletes at most `max_keys` (at least one) keys of `[start, end)` (an empty `end`: no
    /// bound), the first ones in key order at a snapshot taken now, and says where the rest
    /// begins. Bounded work for callers that must not run long (the device's command).
    pub fn delete_range_limit(
        &self,
        start: &[u8],
        end: &[u8],
        max_keys: u64,
    ) -> Result<RangeDelete> {
        self.entry.check_live()?;
        self.entry.check_writable()?;
        let max_keys = max_keys.max(1);
        let done = |deleted| RangeDelete {
            deleted,
            next_start: None,
        };
        if !end.is_empty() && start >= end {
            return Ok(done(0));
        }
        let opts = ReadOptions {
            upper_bound: (!end.is_empty()).then(|| end.to_vec()),
            keys_only: true,
            fill_cache: false,
            ..ReadOptions::default()
        };
        let mut it = self.iter(opts)?;
        it.seek(start)?;
        let mut deleted = 0u64;
        let mut batch = WriteBatch::new();
        for item in it.by_ref() {
            let (key, _) = item?;
            if deleted + batch.len() as u64 == max_keys {
                self.write(batch)?;
                return Ok(RangeDelete {
                    deleted: max_keys,
                    next_start: Some(key),
                });
            }
            batch.delete(key.to_vec());
            if batch.len() == DELETE_RANGE_BATCH {
                deleted += batch.len() as u64;
                self.write(std::mem::take(&mut batch))?;
            }
        }
        deleted += batch.len() as u64;
        self.write(batch)?;
        Ok(done(deleted))
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn the_end_of_a_prefix_is_the_next_key_past_all_that_begin_with_it() {
        assert_eq!(prefix_end(b"user:"), b"user;".to_vec());
        assert_eq!(prefix_end(b"a\xff\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), Vec::<u8>::new());
        assert_eq!(prefix_end(b""), Vec::<u8>::new());
    }
}
