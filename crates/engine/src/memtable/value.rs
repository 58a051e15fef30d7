//! What the memtable holds for each entry besides its key.

use crate::key::{Kind, ValueAddr};
use bytes::Bytes;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemValue {
    pub kind: Kind,
    /// Empty for deletions.
    pub value: Bytes,
    /// Where the record sits in the value log.
    pub addr: ValueAddr,
}
