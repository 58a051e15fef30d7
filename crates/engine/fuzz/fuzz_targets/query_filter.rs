#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cerberus_engine::fuzzing::query_filter(data);
});
