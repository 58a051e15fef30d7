//! Recovery's reading of the log: a segment's records of complete batches, in order.

use super::{check_segment_header, decode_header, decode_record, segment_name};
use super::{RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::error::{Error, IoContext, Result};
use crate::key::{Kind, Nsid, SeqNo, ValueAddr};
use crate::storage::{IoPurpose, Storage};
use bytes::Bytes;

/// A record recovered from the log, with its value as a slice of the segment.
pub struct ReplayedRecord {
    pub seq: SeqNo,
    pub nsid: Nsid,
    pub kind: Kind,
    pub key: Bytes,
    pub value: Bytes,
    pub addr: ValueAddr,
}

/// How a replayed segment ended.
#[derive(Debug, PartialEq, Eq)]
pub struct ReplayEnd {
    /// Offset just past the last complete batch.
    pub end: u64,
    /// A torn or corrupt tail was dropped (only in the last segment).
    pub dropped_tail: bool,
}

/// Replays segment `id` from `start`, delivering records of complete batches in order.
/// In the last segment a torn tail is dropped; anywhere else a bad record is corruption.
pub fn replay_segment(
    storage: &dyn Storage,
    id: u64,
    start: u64,
    is_last: bool,
    mut deliver: impl FnMut(ReplayedRecord) -> Result<()>,
) -> Result<ReplayEnd> {
    let name = segment_name(id);
    let data = Bytes::from(crate::storage::read_all(storage, &name, IoPurpose::Log).ctx(&name)?);
    if data.len() < SEGMENT_HEADER_LEN as usize && is_last {
        // A segment created just before a crash may not even hold its header.
        return Ok(ReplayEnd {
            end: SEGMENT_HEADER_LEN,
            dropped_tail: !data.is_empty(),
        });
    }
    check_segment_header(&name, &data)?;
    let start = start.max(SEGMENT_HEADER_LEN) as usize;
    let mut pos = start;
    let mut batch_start = start;
    let mut pending: Vec<ReplayedRecord> = Vec::new();
    let mut last_seq = 0;
    while pos < data.len() {
        match decode_record(&data[pos..]) {
            Ok((rec, len)) => {
                last_seq = rec.seq;
                let key_at = pos + RECORD_HEADER_LEN;
                pending.push(ReplayedRecord {
                    seq: rec.seq,
                    nsid: rec.nsid,
                    kind: rec.kind,
                    key: data.slice(key_at..key_at + rec.key.len()),
                    value: data.slice(key_at + rec.key.len()..pos + len),
                    addr: ValueAddr {
                        segment: id,
                        offset: pos as u64,
                        len: len as u32,
                    },
                });
                pos += len;
                if rec.batch_end {
                    for r in pending.drain(..) {
                        deliver(r)?;
                    }
                    batch_start = pos;
                }
            }
            Err(e) => {
                if !is_last || valid_record_after(&data, pos + 1, last_seq) {
                    return Err(Error::corruption(
                        &name,
                        pos as u64,
                        format!("bad value-log record ({e:?})"),
                    ));
                }
                return Ok(ReplayEnd {
                    end: batch_start as u64,
                    dropped_tail: true,
                });
            }
        }
    }
    if !pending.is_empty() {
        if !is_last {
            return Err(Error::corruption(
                &name,
                batch_start as u64,
                "batch without its end in a closed segment",
            ));
        }
        return Ok(ReplayEnd {
            end: batch_start as u64,
            dropped_tail: true,
        });
    }
    Ok(ReplayEnd {
        end: pos as u64,
        dropped_tail: false,
    })
}

/// Whether an intact record newer than `after_seq` starts anywhere at or past `from`: if so, a
/// bad record before it is corruption in the middle of the log, not a torn tail.
fn valid_record_after(data: &[u8], from: usize, after_seq: SeqNo) -> bool {
    (from..data.len().saturating_sub(RECORD_HEADER_LEN - 1)).any(|p| {
        matches!(decode_header(&data[p..]), Ok((seq, ..)) if seq > after_seq)
            && decode_record(&data[p..]).is_ok()
    })
}
