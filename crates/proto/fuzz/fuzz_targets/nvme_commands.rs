//! Bytes a host sends as a command capsule: a submission queue entry (the first 64 bytes)
//! and its in-capsule data (the rest), through every decoder the target applies (KV,
//! Fabrics, admin). Any panic is a bug, and so is a decoded command that does not survive
//! being encoded again (`check_command_decoders` says what it checks).
#![no_main]

use cerberus_proto::nvme::check_command_decoders;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    check_command_decoders(data);
});
