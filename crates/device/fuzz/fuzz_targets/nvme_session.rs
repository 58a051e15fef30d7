//! One NVMe/TCP connection of a running device (started on the first input), driven by a
//! sequence of PDUs the input chooses: handshake, Connect, properties, DH-HMAC-CHAP, KV
//! commands with their data, the vendor pair, admin commands, raw bytes. Any panic is a bug,
//! and so is a device that no longer serves a fresh legitimate host after the session
//! (`cerberus_device::fuzzing::nvme_session` says what it runs and checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = cerberus_device::fuzzing::nvme_session(data);
});
