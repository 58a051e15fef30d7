//! A namespace's space as handles and statistics report it: live bytes, pending and garbage
//! bytes, and the settings that bound them.

/// A namespace's live bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Keys and values of its records.
    pub records: u64,
    /// Keys and payloads of its indexes' entries.
    pub index: u64,
}

impl Usage {
    /// Every live byte: what its capacity bounds.
    pub fn total(&self) -> u64 {
        self.records.saturating_add(self.index)
    }
}

/// A namespace's space and settings, part of its [`NamespaceStats`](crate::NamespaceStats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NamespaceSpace {
    /// Live bytes: keys and values of its records' newest versions and its index entries,
    /// as of the last flush.
    pub used_bytes: u64,
    /// The part of `used_bytes` its index entries take.
    pub index_bytes: u64,
    /// Bytes written since the last flush (counted as new until the flush compares them,
    /// less the versions a capacity check found they replace; at least 0).
    pub pending_bytes: u64,
    /// Value-log bytes of its superseded and deleted versions GC has not collected yet.
    pub garbage_bytes: u64,
    /// Value-log garbage (of every namespace) in the segments GC left in place because a
    /// live snapshot or iterator of this namespace reads a record in them: what its pins
    /// hold back now. Known once GC has looked at a segment (0 before); back to 0 when the
    /// pins go (released, or past `Options::snapshot_max_age`).
    pub pinned_bytes: u64,
    /// Its capacity (`None`: bounded by the device only).
    pub capacity: Option<u64>,
    /// Its I/O shares.
    pub shares: crate::namespace_options::IoShares,
    /// It refuses writes (`Namespace::set_read_only`).
    pub read_only: bool,
}
