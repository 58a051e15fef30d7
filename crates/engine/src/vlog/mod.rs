//! The value log: every write is appended here first. It is the write-ahead log (recovery
//! replays it from the point the manifest says was last flushed) and the home of values
//! (tables hold only their addresses).
//!
//! A segment is `header (16 bytes) ++ record*`. A record is a 29-byte header
//! `{header_crc u32, payload_crc u32, seqno u64, nsid u32, flags u8, key_len u32, value_len u32}`
//! followed by the key and the value. `header_crc` covers the 25 header bytes after it and lets
//! recovery tell a torn tail from corruption cheaply; `payload_crc` covers key and value. The
//! records of one batch are contiguous in one segment and the last one carries `BATCH_END`.

mod format;
mod liveness;
mod reader;
mod replay;
mod scan;
#[cfg(test)]
mod tests;
mod write_chunks;
mod writeback;
mod writer;

pub use format::{
    decode_record, encode_record, parse_segment_name, segment_name, EncodedWrite, Record, Spans,
    RECORD_HEADER_LEN, SEGMENT_HEADER_LEN,
};
pub use liveness::Liveness;
pub use reader::{LastSegment, ReadPin, VlogReader};
pub use replay::replay_segment;
pub use scan::{SegmentScan, SCAN_CHUNK};
pub use writeback::Writeback;
pub use writer::{AppendError, LogSync, RollError, VlogWriter};
