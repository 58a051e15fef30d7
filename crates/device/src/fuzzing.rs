//! Entry points for the fuzz targets in `crates/device/fuzz`: each feeds arbitrary bytes to a
//! decoder of bytes the device reads from its data directory. Not part of the stable API.

/// The saved dedup index (`DATA_DIR/dedup.index`), from the body after its checksum on, so
/// that the fuzzer reaches the decoder instead of the CRC check.
pub fn dedup_index(data: &[u8]) {
    crate::dedup::fuzz_decode(data);
}
