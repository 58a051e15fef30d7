//! An index's definition as the manifest records it.

use crate::index_kind::IndexKind;
use crate::key::Nsid;

/// An index as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDef {
    /// The namespace id its entries live under.
    pub id: Nsid,
    /// The namespace it indexes.
    pub ns: Nsid,
    /// The attribute path as given (`index::AttrPath` parses it).
    pub attr: String,
    pub kind: IndexKind,
    /// Backfill done: from this seqno on, every record a snapshot sees has its entry (a
    /// snapshot older than that reads without the index).
    pub ready: Option<u64>,
    /// The encoding of its entries' keys (`index::KEY_FORMAT`; 1: numbers as `f64` alone,
    /// what a manifest without the field had). An older one is rebuilt at open.
    pub keys: u8,
}
