//! Bytes from the network: split into frames in pieces of the first byte's size and decode
//! each as a command and as a response (`cerberus_proto::fuzzing::frames` says what it
//! checks; `tests/fuzz_corpus.rs` runs the same on stable over `corpus/frames`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = cerberus_proto::fuzzing::frames(data);
});
