//! DeleteRange: the keys of a range, read at a snapshot (keys only) and deleted in atomic
//! batches holding their stripes, as a client's batch would be; at most
//! `max_delete_range_keys` per command, so one command's work is bounded whatever the range,
//! and the answer says where the next command resumes.

use super::data::writable;
use super::engine_error::engine;
use super::{Outcome, Shared};
use bytes::Bytes;
use cerberus_engine::{ReadOptions, Readable, WriteBatch, DELETE_RANGE_BATCH};
use cerberus_proto::Reply;

impl Shared {
    pub(super) fn delete_range(&self, ns: u32, start: &[u8], end: &[u8], max_keys: u32) -> Outcome {
        self.check_len("the start key", start)?;
        self.check_len("the end key", end)?;
        let handle = self.namespace(ns)?;
        writable(&handle)?;
        // 0 asks for the device's most.
        let limit = self.config.max_delete_range_keys;
        let max = u64::from(if max_keys == 0 {
            limit
        } else {
            max_keys.min(limit)
        });
        if !end.is_empty() && start >= end {
            return Ok(range_deleted(0, None));
        }
        let opts = ReadOptions {
            upper_bound: (!end.is_empty()).then(|| end.to_vec()),
            keys_only: true,
            fill_cache: false,
            ..ReadOptions::default()
        };
        let mut it = handle.iter(opts).map_err(engine)?;
        it.seek(start).map_err(engine)?;
        let mut deleted = 0u64;
        let mut keys: Vec<Bytes> = Vec::new();
        let mut next_start = None;
        for item in it.by_ref() {
            let (key, _) = item.map_err(engine)?;
            if deleted + keys.len() as u64 == max {
                next_start = Some(key);
                break;
            }
            keys.push(key);
            if keys.len() == DELETE_RANGE_BATCH {
                deleted += self.delete_keys(&handle, ns, &mut keys)?;
            }
        }
        deleted += self.delete_keys(&handle, ns, &mut keys)?;
        // The gate charged the command as one operation: each key deleted counts as a
        // write, so a range buys no more of the device than its deletes sent one by one.
        self.shares.charge(ns, deleted.saturating_sub(1), 0);
        Ok(range_deleted(deleted, next_start))
    }

    /// Deletes `keys` in one atomic batch and empties it; how many it held.
    fn delete_keys(
        &self,
        handle: &cerberus_engine::Namespace,
        ns: u32,
        keys: &mut Vec<Bytes>,
    ) -> Result<u64, (cerberus_proto::Status, String)> {
        if keys.is_empty() {
            return Ok(0);
        }
        let mut batch = WriteBatch::new();
        for k in keys.iter() {
            batch.delete(k.to_vec());
        }
        self.write_striped(handle, ns, batch, keys.iter())?;
        let n = keys.len() as u64;
        keys.clear();
        Ok(n)
    }
}

fn range_deleted(deleted: u64, next_start: Option<Bytes>) -> Reply {
    Reply::RangeDeleted {
        deleted,
        next_start,
    }
}
