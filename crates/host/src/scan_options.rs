//! What a scan of a device iterator reads.

use bytes::Bytes;

/// What a scan reads: where it starts and ends, whether values come along, and how much
/// each round trip brings.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// First key (empty: the first key of the namespace).
    pub start: Bytes,
    /// Keys at or above this are past the end.
    pub upper_bound: Option<Bytes>,
    /// Only keys that begin with this.
    pub prefix: Option<Bytes>,
    /// Keys with empty values; nothing is read from the device's value log.
    pub keys_only: bool,
    /// Most entries per round trip.
    pub batch_entries: u32,
    /// About this many bytes of keys and values per round trip (the device caps it at its
    /// `max_iter_batch_bytes`).
    pub batch_bytes: u32,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            start: Bytes::new(),
            upper_bound: None,
            prefix: None,
            keys_only: false,
            batch_entries: 1024,
            batch_bytes: 1 << 20,
        }
    }
}
