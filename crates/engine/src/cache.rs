//! cache
