//! Several threads on one database (filled in below).
