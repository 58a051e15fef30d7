#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cerberus_engine::fuzzing::index_extract(data);
});
