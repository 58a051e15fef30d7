//! Atomic groups of writes.

/// One write in a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BatchOp {
    Put { key: Vec<u8>, value: Vec<u8> },
    Delete { key: Vec<u8> },
}

/// Writes applied all together or not at all by [`crate::Namespace::write`].
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    pub(crate) ops: Vec<BatchOp>,
    pub(crate) bytes: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a store of `value` under `key`; a later write of the same key in the batch wins.
    pub fn put(&mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> &mut Self {
        let (key, value) = (key.into(), value.into());
        self.bytes += key.len() + value.len();
        self.ops.push(BatchOp::Put { key, value });
        self
    }

    /// Adds a delete of `key` (a key that holds nothing is no error).
    pub fn delete(&mut self, key: impl Into<Vec<u8>>) -> &mut Self {
        let key = key.into();
        self.bytes += key.len();
        self.ops.push(BatchOp::Delete { key });
        self
    }

    /// Writes in the batch (puts and deletes).
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Holds no write.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Drops every write, keeping the allocation for reuse.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.bytes = 0;
    }
}
