//! The service's tasks, queued by writes and run in the background (`scheduler`).

use bytes::Bytes;

/// A task of the service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DedupWork {
    /// Index the value `key` holds now (or drop it, if it holds none).
    Key { ns: u32, key: Bytes },
    /// Queue a `Key` task for each key of `ns` after `after`, a page at a time (a rebuild;
    /// the first page, `after` = `None`, drops what the index held for `ns`).
    Scan { ns: u32, after: Option<Bytes> },
    /// `ns` was destroyed: drop its index.
    Forget { ns: u32 },
}
