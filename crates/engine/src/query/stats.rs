//! What a query read and how long each step took.

use serde::Serialize;

/// What a query read and how long each step took: the breakdown of the paper's Figures 11-13.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueryStats {
    /// How the records were reached (`index on ATTR`, or a scan).
    pub plan: String,
    /// Entries read from the secondary index.
    pub index_entries: u64,
    /// Lookups of a pk in the primary index.
    pub primary_lookups: u64,
    /// Records whose value was read (from the value log, or the memtable).
    pub value_reads: u64,
    /// Records checked against the filter, and those that met it.
    pub records_examined: u64,
    /// Records that met the filter.
    pub records_matched: u64,
    /// Bytes of keys and values (or projections) in the result.
    pub bytes_returned: u64,
    /// Storage reads and pages read, by purpose (filter, index, data, value, log, other).
    pub reads: [u64; 6],
    /// Pages those reads touched, by the same purposes.
    pub pages: [u64; 6],
    /// Time in the secondary index, in primary lookups, in value reads (a scan's reads count
    /// as value reads), in nanoseconds.
    pub secondary_search_ns: u64,
    /// Time in primary lookups, in nanoseconds.
    pub primary_search_ns: u64,
    /// Time in value reads, in nanoseconds.
    pub value_read_ns: u64,
}

impl QueryStats {
    /// Adds what another walk of the same query read (a piece of it on another thread); the
    /// plan stays this one's.
    pub fn absorb(&mut self, other: &QueryStats) {
        self.index_entries += other.index_entries;
        self.primary_lookups += other.primary_lookups;
        self.value_reads += other.value_reads;
        self.records_examined += other.records_examined;
        self.records_matched += other.records_matched;
        self.bytes_returned += other.bytes_returned;
        for i in 0..self.reads.len() {
            self.reads[i] += other.reads[i];
            self.pages[i] += other.pages[i];
        }
        self.secondary_search_ns += other.secondary_search_ns;
        self.primary_search_ns += other.primary_search_ns;
        self.value_read_ns += other.value_read_ns;
    }
}
