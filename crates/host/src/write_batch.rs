//! Writes applied together: the host's face of the device's `WriteBatch` command, spelled as
//! the engine's `WriteBatch`.

use bytes::Bytes;
use cerberus_proto::BatchWrite;

/// Puts and deletes of one namespace that [`Namespace::write`](crate::Namespace::write)
/// applies all together or not at all (at most
/// [`MAX_BATCH_WRITES`](cerberus_proto::MAX_BATCH_WRITES) writes, within the device's frame
/// limit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub(crate) writes: Vec<BatchWrite>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Adds a store of `value` under `key`; a later write of the same key in the batch wins.
    pub fn put(&mut self, key: impl Into<Bytes>, value: impl Into<Bytes>) -> &mut Self {
        self.writes.push(BatchWrite::Put {
            key: key.into(),
            value: value.into(),
        });
        self
    }

    /// Adds a delete of `key` (a key that holds nothing is no error).
    pub fn delete(&mut self, key: impl Into<Bytes>) -> &mut Self {
        self.writes.push(BatchWrite::Delete { key: key.into() });
        self
    }

    /// Writes in the batch (puts and deletes).
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Holds no write.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Drops every write, keeping the allocation for reuse.
    pub fn clear(&mut self) {
        self.writes.clear();
    }
}
