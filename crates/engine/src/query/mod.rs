//! Queries that run inside the engine (Cerberus Table 2, extended): filters written as
//! MongoDB-style filter documents, and the ranges of an index they read.

mod filter;

pub use filter::{Condition, Filter, KeyRange};
