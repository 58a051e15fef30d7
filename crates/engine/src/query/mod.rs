//! Queries that run inside the engine (Cerberus Table 2, extended): filters written as
//! MongoDB-style filter documents, the plan that picks an index, and its execution as pages of
//! found records, top-K and aggregates.

mod aggregate;
mod doc;
mod exec;
mod filter;
mod find;
mod from_top;
mod matcher;
mod plan;
mod records;
mod result;
mod stats;
mod top;

pub use aggregate::{aggregate, counted_in_index, Aggregate, Tally};
pub use exec::{for_each_entry, for_each_match, index_decides};
pub use filter::{Condition, Filter, KeyRange};
pub use find::{find_page, fingerprint, Continuation, Found, PageRequest, DEFAULT_PAGE_BYTES};
pub use matcher::Wants;
pub use plan::{index_ranges, plan, Access, IndexChoice, Plan};
pub use records::{entry_parts, EntryBatch, EntryVisitor, Records};
pub use result::QueryResult;
pub use stats::QueryStats;
pub use top::{top_k, top_k_ranked, Best, RankIndex, Ranked, TopSpec};
