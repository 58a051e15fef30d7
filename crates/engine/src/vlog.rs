//! vlog
