//! Deleting a key range or a prefix: one DeleteRange command after another, each deleting
//! at most what the device allows (`max_delete_range_keys`), from where the last one
//! stopped, until the range is empty.

use crate::blocking_namespace::BlockingNamespace;
use crate::error::{Error, Result};
use crate::namespace::Namespace;
use crate::reply::unexpected;
use bytes::Bytes;
use cerberus_proto::{prefix_end, Reply, Request};

impl Namespace {
    /// Deletes every key `k` with `start <= k < end` (an empty `end`: no bound) and returns
    /// how many were deleted. Several commands, each an atomic batch or more of at most the
    /// device's `max_delete_range_keys` keys, so not atomic as a whole: a key written into
    /// the part of the range already passed survives.
    pub async fn delete_range(
        &self,
        start: impl Into<Bytes>,
        end: impl Into<Bytes>,
    ) -> Result<u64> {
        let end = end.into();
        let mut start = start.into();
        let mut total = 0u64;
        loop {
            let (deleted, next) = self
                .delete_range_step(start.clone(), end.clone(), 0)
                .await?;
            total += deleted;
            match next {
                // Each step must move on: a device answering a resume point at or before
                // the start would keep this loop going forever.
                Some(next) if next > start => start = next,
                Some(next) => {
                    return Err(Error::Protocol(format!(
                        "delete range: the device answered resume at {next:?}, not past {start:?}"
                    )))
                }
                None => return Ok(total),
            }
        }
    }

    /// Deletes every key that begins with `prefix` (every key, for an empty one) and returns
    /// how many were deleted, as [`Namespace::delete_range`].
    pub async fn delete_prefix(&self, prefix: impl Into<Bytes>) -> Result<u64> {
        let prefix = prefix.into();
        let end = Bytes::from(prefix_end(&prefix));
        self.delete_range(prefix, end).await
    }

    /// One DeleteRange command: deletes at most `max_keys` keys of `[start, end)` (0: as
    /// many as the device allows); the count and where the rest of the range begins
    /// (`None`: nothing left).
    pub async fn delete_range_step(
        &self,
        start: impl Into<Bytes>,
        end: impl Into<Bytes>,
        max_keys: u32,
    ) -> Result<(u64, Option<Bytes>)> {
        let request = Request::DeleteRange {
            start: start.into(),
            end: end.into(),
            max_keys,
        };
        match self.run(request).await? {
            Reply::RangeDeleted {
                deleted,
                next_start,
            } => Ok((deleted, next_start)),
            other => Err(unexpected("delete_range", &other)),
        }
    }
}

impl BlockingNamespace {
    /// [`Namespace::delete_range`], waiting for the answer.
    pub fn delete_range(&self, start: impl Into<Bytes>, end: impl Into<Bytes>) -> Result<u64> {
        self.client()
            .wait(self.namespace().delete_range(start, end))
    }

    /// [`Namespace::delete_prefix`], waiting for the answer.
    pub fn delete_prefix(&self, prefix: impl Into<Bytes>) -> Result<u64> {
        self.client().wait(self.namespace().delete_prefix(prefix))
    }

    /// [`Namespace::delete_range_step`], waiting for the answer.
    pub fn delete_range_step(
        &self,
        start: impl Into<Bytes>,
        end: impl Into<Bytes>,
        max_keys: u32,
    ) -> Result<(u64, Option<Bytes>)> {
        self.client()
            .wait(self.namespace().delete_range_step(start, end, max_keys))
    }
}
