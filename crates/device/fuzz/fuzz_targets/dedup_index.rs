//! The saved dedup index, past its checksum: any panic is a bug, and so is an index whose
//! reference counts do not return to zero once every key's recipe is dropped.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = cerberus_device::fuzzing::dedup_index(data);
});
