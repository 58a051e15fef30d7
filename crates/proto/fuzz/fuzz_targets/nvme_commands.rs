//! Bytes a host sends as a command capsule: a submission queue entry (the first 64 bytes)
//! and its in-capsule data (the rest), through every decoder the target applies (KV,
//! Fabrics, admin). Any panic is a bug, and so is a decoded command that does not survive
//! being encoded again (`check_command_decoders` says what it checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = cerberus_proto::fuzzing::nvme_commands(data);
});
