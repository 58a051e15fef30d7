//! memtable
