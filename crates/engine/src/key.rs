//! key
