//! Bytes from an NVMe/TCP connection: split into PDUs in pieces of the first byte's size,
//! with the digests the second byte's low bits say (`cerberus_proto::fuzzing::nvme_pdus`
//! says what it checks; `tests/fuzz_corpus.rs` runs the same on stable).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = cerberus_proto::fuzzing::nvme_pdus(data);
});
