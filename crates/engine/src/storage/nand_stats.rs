//! Counters of the NAND timing model.

use super::purpose::IoPurpose;

/// Counters of the timing model, indexed by `IoPurpose as usize` (serialized as maps keyed
/// by purpose name).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NandStats {
    /// Pages read, by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub page_reads: [u64; IoPurpose::COUNT],
    /// Pages programmed, by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub page_programs: [u64; IoPurpose::COUNT],
    /// Read requests (one `read_at` call), by purpose.
    #[serde(serialize_with = "IoPurpose::serialize_counts")]
    pub read_requests: [u64; IoPurpose::COUNT],
    /// Sum over read requests of modeled latency (issue to completion), nanoseconds.
    pub read_time_ns: u64,
    /// Sum over syncs of modeled wait for outstanding programs, nanoseconds.
    pub sync_wait_ns: u64,
}
