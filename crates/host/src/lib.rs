//! cerberus-host (grows in a later issue).
