//! cerberus-device (grows in a later issue).
