//! cerberus-proto (grows in a later issue).
