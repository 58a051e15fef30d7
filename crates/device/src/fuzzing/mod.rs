//! Entry points for the fuzz targets in `crates/device/fuzz`: a decoder of bytes the device
//! reads from its data directory (`dedup_index`), and one NVMe/TCP connection of a running
//! device driven by the input (`nvme_session`). Each says whether the input got past the
//! first checks, so that the stable corpus test (`tests/fuzz_corpus.rs`) can tell it reached
//! the code under test. Not part of the stable API.

mod nvme_hosts;
mod nvme_ops;
mod nvme_seeds;
mod nvme_session;
mod nvme_wire;

pub use nvme_session::{nvme_session, nvme_session_seeds, nvme_session_stop};

/// The saved dedup index (`DATA_DIR/dedup.index`), from the body after its checksum on, so
/// that the fuzzer reaches the decoder instead of the CRC check. True when it decoded.
pub fn dedup_index(data: &[u8]) -> bool {
    crate::dedup::fuzz_decode(data)
}

/// Seeds for `dedup_index`: saved indexes made by the service's own encoder.
pub fn dedup_index_seeds() -> Vec<Vec<u8>> {
    crate::dedup::fuzz_seeds()
}
