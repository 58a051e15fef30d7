//! [`QueryResult`]: what every query answers.

use super::stats::QueryStats;

/// What a query answered: its `value` (a find's records, a ranking, the pks of a secondary
/// key, an aggregate), where a find's next page starts, and what the query read.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult<T> {
    /// The answer itself.
    pub value: T,
    /// Pass it in [`FindOptions::continuation`](crate::FindOptions::continuation) for the
    /// next page of a find; `None` when no record is left, and always for other queries.
    pub continuation: Option<Vec<u8>>,
    /// The plan chosen and what running it read.
    pub stats: QueryStats,
}

impl<T> QueryResult<T> {
    /// A complete answer: no page follows it.
    pub fn complete(value: T, stats: QueryStats) -> Self {
        QueryResult {
            value,
            continuation: None,
            stats,
        }
    }
}
